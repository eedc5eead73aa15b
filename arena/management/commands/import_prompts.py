from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from arena.battles import prompts


class Command(BaseCommand):
    help = "Add curated prompts from a JSONL or CSV file (text, category, language, system_prompt)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("file", type=Path)

    def handle(self, *args, file: Path, **options) -> None:
        if not file.is_file():
            raise CommandError(f"No such file: {file}")
        report = prompts.prompts_import(data=file.read_bytes(), filename=file.name)
        for number, why in report.rejected:
            self.stderr.write(f"{file.name}:{number}: rejected: {why}")
        self.stdout.write(report.summary())
