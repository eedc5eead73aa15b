from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from arena.battles import exports, selectors


class Command(BaseCommand):
    help = (
        "Export the vote log: 'arena' is FastChat's clean battle JSON (for elo_analysis.py), "
        "'jsonl' is every logged field, one vote a line. Schemas: docs/vote_log.md."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--since",
            help="Only votes cast at or after this ISO date or date-time (UTC unless it says).",
        )
        parser.add_argument("--format", choices=exports.FORMATS, default="arena")
        parser.add_argument("--output", type=Path, help="Write here instead of to stdout.")

    def handle(self, *args, since: str | None, format: str, output: Path | None, **options) -> None:
        try:
            moment = exports.parse_since(since) if since is not None else None
        except ValueError as exc:
            raise CommandError(f"--since: {exc}") from None
        # Prefetching with iterator() needs a chunk size; this keeps memory flat on big logs.
        votes = selectors.votes_for_export(since=moment).iterator(chunk_size=500)
        write = exports.WRITERS[format]
        if output is None:
            write(votes, self.stdout)
            return
        try:
            with output.open("w", encoding="utf-8", newline="\n") as fh:
                count = write(votes, fh)
        except OSError as exc:
            raise CommandError(f"Cannot write {output}: {exc.strerror or exc}") from None
        self.stdout.write(f"{count} vote(s) written to {output} ({format}).")
