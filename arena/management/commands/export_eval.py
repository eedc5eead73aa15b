from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from arena.evals import exports
from arena.evals.models import EvalRun

FORMATS = {"json": exports.as_json, "csv": exports.as_csv, "arena": exports.as_arena}


class Command(BaseCommand):
    help = (
        "Export an evaluation run: its judge leaderboards (json, csv) or its verdicts in the "
        "arena battle format (arena), marked as an LLM judge's, never human votes."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("run", type=int)
        parser.add_argument("--format", choices=sorted(FORMATS), default="json")

    def handle(self, *args, run: int, format: str, **options) -> None:
        found = EvalRun.objects.select_related("judge", "baseline").filter(pk=run).first()
        if found is None:
            raise CommandError(f"No evaluation run {run}.")
        self.stdout.write(FORMATS[format](found))
