from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from arena.core.errors import ServiceError
from arena.datasets.exports import RANK_GAP_DEFAULT, pairs_export


class Command(BaseCommand):
    help = (
        "Export counted votes with a clear winner as preference pairs (JSONL in TRL's "
        "prompt/chosen/rejected message format), optionally with the length audit. "
        "Formats and the audit: docs/datasets.md."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--output", type=Path, help="The pairs file (FILE.train/.test "
                            "beside it with --test-share). Omit for --audit alone.")  # fmt: skip
        parser.add_argument("--ties", type=Path, help="Also write ties (and kept both-bad) here.")
        parser.add_argument(
            "--keep-both-bad",
            action="store_true",
            help="Keep both-bad votes (in the ties file); dropped by default.",
        )
        parser.add_argument("--per-prompt-cap", type=int, help="At most N votes per prompt hash.")
        parser.add_argument(
            "--test-share",
            type=float,
            help="Split by prompt hash: this share of prompts goes to test.",
        )
        parser.add_argument("--seed", type=int, default=0, help="Seed of the split, cap, balance.")
        parser.add_argument("--audit", action="store_true", help="Print the length audit (JSON).")
        parser.add_argument(
            "--balance-length",
            action="store_true",
            help="Write a subset whose chosen-longer share is one half.",
        )
        parser.add_argument("--rank-gap", type=int, default=RANK_GAP_DEFAULT,
                            help="Audit: list models whose raw rank beats their style-"
                            "controlled rank by more than N places.")  # fmt: skip
        parser.add_argument(
            "--include-simulated",
            action="store_true",
            help="Read the demo's simulated votes too (each row marked).",
        )

    def handle(self, *args, **o) -> None:
        if o["output"] is None and not o["audit"]:
            raise CommandError("Give --output, --audit or both.")
        try:
            result = pairs_export(
                output=o["output"],
                ties=o["ties"],
                keep_both_bad=o["keep_both_bad"],
                per_prompt_cap=o["per_prompt_cap"],
                test_share=o["test_share"],
                seed=o["seed"],
                balance=o["balance_length"],
                audit=o["audit"],
                include_simulated=o["include_simulated"],
                rank_gap=o["rank_gap"],
            )
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        for path, n in result.files.items():
            self.stdout.write(f"{n} row(s) written to {path}")
        self.stdout.write(f"{result.votes_read} counted vote(s) read; both-bad dropped: "
                          f"{result.both_bad_dropped}; over the per-prompt cap: {result.capped}; "
                          f"left out (not counted): {result.left_out or 'none'}")  # fmt: skip
        for split, b in result.balance.items():
            self.stdout.write(f"balanced ({split}): kept {b['kept']} of {b['before']} pairs")
        if result.audit is not None:
            report = result.audit.as_dict()
            report["balanced"] = {
                split: {"pairs": a.pairs, "chosen_longer_share": a.chosen_longer_share}
                for split, a in result.audit_balanced.items()
            }
            self.stdout.write(json.dumps(report, indent=2))
