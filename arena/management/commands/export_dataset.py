from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from arena.battles.exports import parse_since
from arena.core.errors import ServiceError
from arena.datasets.release import dataset_export


class Command(BaseCommand):
    help = (
        "Write the open dataset: counted battles and votes, raters as salted hashes, personal "
        "data in prompts and answers replaced by typed placeholders, and a datasheet. "
        "docs/datasets.md."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--output", type=Path, required=True, help="The JSONL file.")
        parser.add_argument(
            "--datasheet",
            type=Path,
            help="The datasheet (Markdown); default: FILE.datasheet.md beside it.",
        )
        parser.add_argument("--since", help="Votes cast at or after this ISO date or date-time.")
        parser.add_argument("--until", help="Votes cast before this ISO date or date-time.")
        parser.add_argument(
            "--include-images",
            type=Path,
            metavar="DIR",
            help="Write the rows' image files to DIR (only with DATASET_IMAGES=true: the "
            "raters' terms must allow it); without it rows carry image hashes only.",
        )
        parser.add_argument(
            "--include-simulated",
            action="store_true",
            help="Include the demo's simulated votes (each row marked).",
        )

    def handle(self, *args, output: Path, datasheet: Path | None, since: str | None,
               until: str | None, include_simulated: bool, include_images: Path | None,
               **options) -> None:  # fmt: skip
        try:
            window = {k: parse_since(v) if v else None for k, v in (("since", since),
                                                                   ("until", until))}  # fmt: skip
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        sheet = datasheet or output.with_name(f"{output.stem}.datasheet.md")
        try:
            result = dataset_export(output=output, datasheet=sheet, images_dir=include_images,
                                    include_simulated=include_simulated, **window)  # fmt: skip
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(f"{result.rows} vote(s) by {result.raters} rater(s) written to {output}; "
                          f"datasheet: {sheet}")  # fmt: skip
