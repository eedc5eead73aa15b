from __future__ import annotations

import json

from asgiref.sync import async_to_sync
from django.core.management.base import BaseCommand, CommandError

from arena.catalog.selectors import model_by_name
from arena.evals import battle_judging
from arena.evals.agreement import calibration_report


def _pct(figure: dict | None) -> str:
    if not figure or figure["value"] is None:
        return "-"
    low, high = figure["lower"], figure["upper"]
    interval = f" [{low:.0%}, {high:.0%}]" if low is not None else ""
    return f"{figure['value']:.0%}{interval} (n={figure['n']})"


class Command(BaseCommand):
    help = (
        "Calibration: the judge on arena battles after their human vote, both orders, stored "
        "apart from the votes; then its agreement with the humans, position bias, length bias "
        "and self-family preference. With CALIBRATION_JUDGE set, the workers do this by "
        "themselves as votes come in."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--judge", required=True, metavar="NAME")
        parser.add_argument("--limit", type=int, default=200, help="battles to judge now")
        parser.add_argument(
            "--include-simulated", action="store_true", help="the demo's simulated battles too"
        )
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **o) -> None:
        judge = model_by_name(o["judge"])
        if judge is None:
            raise CommandError(f"No model named {o['judge']!r}.")
        if o["limit"] < 0:
            raise CommandError("--limit must be 0 or more.")
        ids = battle_judging.verdicts_claim(
            judge=judge, limit=o["limit"], include_simulated=o["include_simulated"]
        )
        written = async_to_sync(battle_judging.verdicts_judge)(verdict_ids=ids)
        found = calibration_report(judge_name=judge.public_name)["judges"]
        if o["json"]:
            self.stdout.write(json.dumps(found[0] if found else {}, indent=2))
            return
        self.stdout.write(f"{written} verdicts written by {judge.public_name}")
        if not found:
            self.stdout.write("no judged battles yet")
            return
        overall = found[0]["overall"]
        length = overall["length_coefficient"]
        self.stdout.write(
            f"battles {overall['battles']} ({found[0]['simulated_battles']} simulated), "
            f"verdicts missing {overall['missing']}\n"
            f"agreement with humans {_pct(overall['agreement'])}; three-way "
            f"{_pct(overall['agreement_three_way'])}\n"
            f"position bias {_pct(overall['position_bias'])}; self-family "
            f"{_pct(overall['self_family'])}\n"
            f"length coefficient: judge {length['judge']}, humans {length['human']}"
        )
