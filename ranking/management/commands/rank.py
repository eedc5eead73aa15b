from __future__ import annotations

import zlib
from dataclasses import asdict
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from ranking import progress
from ranking.battle_log import ReadReport
from ranking.compute import RankingConfig, boards_compute, breakdown_masks
from ranking.log_reader import open_log, read_battle_log
from ranking.numbers import none_if_nan
from ranking.services import ranking_config

SCHEMA = "arena.rank/1"


class Command(BaseCommand):
    # It reads a file, not the database: the checks would only add half a second to its start.
    requires_system_checks: list[str] = []
    help = (
        "Rank a battle log file without touching the database: our export_votes output "
        "(--format jsonl or arena) or a public arena-format battle log."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--format", choices=["arena", "jsonl"], default="arena")
        parser.add_argument("--bootstrap", type=int, help="Bootstrap rounds (default 1000).")
        parser.add_argument(
            "--ci", choices=["bootstrap", "sandwich"], help="Intervals of the raw boards."
        )
        parser.add_argument("--style-control", action="store_true")
        parser.add_argument(
            "--style-ci",
            choices=["bootstrap", "sandwich"],
            help="Intervals of the style-controlled boards (default sandwich).",
        )
        parser.add_argument("--style-rounds", type=int, help="Style bootstrap rounds (100).")
        parser.add_argument(
            "--breakdown-ci",
            choices=["bootstrap", "sandwich"],
            help="Intervals of the raw --by boards (default sandwich).",
        )
        parser.add_argument(
            "--reweight",
            action="store_true",
            help="Weigh each vote by the inverse of its recorded sampling probability "
            "(export_votes --format jsonl has it), so active sampling does not bias the scores.",
        )
        parser.add_argument(
            "--by",
            choices=["category", "language"],
            action="append",
            default=[],
            help="Also rank per category or language. A category's board holds the battles of "
            "that category and those tagged with it: a row's tags (our exports), or FastChat's "
            "category_tag (hard prompts: 6 of the 7 criteria) and is_code.",
        )
        parser.add_argument("--seed", type=int)
        parser.add_argument("--min-votes", type=int)
        parser.add_argument(
            "--include-simulated",
            action="store_true",
            help="Keep rows marked simulated (the demo's made-up votes).",
        )
        parser.add_argument(
            "--keep-named",
            action="store_true",
            help="Keep battles marked anony: false (the rater saw the names); left out by default, "
            "as the public arena's analysis does.",
        )
        parser.add_argument(
            "--keep-duplicates",
            action="store_true",
            help="Keep rows whose dedup_tag says sampled: false; left out by default.",
        )
        parser.add_argument(
            "--quiet",
            action="store_true",
            help="No progress bars (they are drawn only on a terminal anyway).",
        )
        parser.add_argument(
            "--json",
            type=Path,
            metavar="OUT",
            help="Write the result as JSON (schema arena.rank/1) to OUT.",
        )

    def handle(
        self,
        *args,
        file: Path,
        format: str,
        bootstrap: int | None,
        ci: str | None,
        style_control: bool,
        style_ci: str | None,
        style_rounds: int | None,
        breakdown_ci: str | None,
        reweight: bool,
        by: list[str],
        seed: int | None,
        min_votes: int | None,
        include_simulated: bool,
        keep_named: bool,
        keep_duplicates: bool,
        quiet: bool,
        json: Path | None,
        **options,
    ) -> None:
        report = ReadReport()
        bars = progress.shown(quiet=quiet)
        try:
            with open_log(file) as stream, progress.stage("reading", unit=" battles", enabled=bars):
                arrays = read_battle_log(
                    stream,
                    fmt=format,
                    report=report,
                    style=style_control,
                    include_simulated=include_simulated,
                    keep_named=keep_named,
                    keep_duplicates=keep_duplicates,
                    # A category board also holds the battles tagged with it.
                    tags="category" in by,
                )
        except (OSError, EOFError, zlib.error) as exc:  # EOFError, zlib: a broken gzip file
            raise CommandError(f"Cannot read {file}: {exc}") from exc
        for number, why in report.rejected[:20]:
            self.stderr.write(f"{file.name}:{number}: skipped: {why}")
        if len(report.rejected) > 20:
            self.stderr.write(f"... and {len(report.rejected) - 20} more rows skipped")
        for why, count in report.reasons().items():
            self.stderr.write(f"skipped {count}: {why}")
        if report.read == 0:
            raise CommandError(f"No readable battles in {file} ({len(report.rejected)} rejected).")
        overrides = {
            k: v
            for k, v in {
                "rounds": bootstrap,
                "method": ci,
                "style_method": style_ci,
                "style_rounds": style_rounds,
                "breakdown_method": breakdown_ci,
                "reweight": reweight or None,
                "seed": seed,
                "min_votes": min_votes,
            }.items()
            if v is not None
        }
        conf: RankingConfig = ranking_config(**overrides)
        jobs = [("raw", "all", None)]
        if style_control:
            jobs.append(("style", "all", None))
        for key, mask in breakdown_masks(arrays, by):
            if mask is not None:
                jobs.append(("raw", key, mask))
                if style_control:
                    jobs.append(("style", key, mask))
        if reweight and arrays.weights is None:
            self.stderr.write("--reweight: no battle has a sampling probability; unweighted")
        with progress.stage("fitting", unit=" step", enabled=bars):
            boards = boards_compute(arrays, conf, [(v, b, m) for v, b, m in jobs])
        for board in boards:
            self._print(board)
        self.stdout.write(
            f"{report.read} battles read, {len(report.rejected)} rejected"
            + (
                f", {report.skipped_simulated} simulated skipped"
                if report.skipped_simulated
                else ""
            )
        )
        if json is not None:
            payload = {
                "schema": SCHEMA,
                "input": {
                    "file": str(file),
                    "format": format,
                    "read": report.read,
                    "rejected": [{"line": n, "reason": r} for n, r in report.rejected],
                    "rejected_by_reason": report.reasons(),
                    "skipped_simulated": report.skipped_simulated,
                },
                "settings": conf.as_dict(),
                "boards": [
                    {
                        "view": b.view,
                        "breakdown": b.breakdown,
                        "votes": b.votes,
                        "note": b.note,
                        "style_coefs": {k: list(v) for k, v in (b.style_coefs or {}).items()},
                        "rows": [{k: none_if_nan(v) for k, v in asdict(r).items()} for r in b.rows],
                    }
                    for b in boards
                ],
            }
            import json as jsonlib

            json.write_text(jsonlib.dumps(payload, indent=2))

    def _print(self, board) -> None:
        self.stdout.write(f"\n== {board.view} / {board.breakdown} ({board.votes} votes)")
        if board.note:
            self.stdout.write(f"   note: {board.note}")
        self.stdout.write(
            f"{'rank':>7}  {'model':<32} {'score':>7} {'95% interval':>17} {'votes':>7}  section"
        )
        for r in board.rows:
            rank = (
                (
                    f"{r.rank_best}"
                    if r.rank_best == r.rank_worst
                    else f"{r.rank_best}-{r.rank_worst}"
                )
                if r.section == "ranked"
                else "-"
            )
            if none_if_nan(r.score) is None:  # not ranked: no score
                self.stdout.write(
                    f"{rank:>7}  {r.model:<32} {'-':>7} {'-':>17} {r.votes:>7}  {r.section}"
                )
            else:
                self.stdout.write(
                    f"{rank:>7}  {r.model:<32} {r.score:>7.1f} "
                    f"{r.lower:>8.1f}-{r.upper:<8.1f} {r.votes:>7}  {r.section}"
                )
        for name, (c, lo, hi) in (board.style_coefs or {}).items():
            self.stdout.write(f"   style {name}: {c:+.3f} [{lo:+.3f}, {hi:+.3f}]")
