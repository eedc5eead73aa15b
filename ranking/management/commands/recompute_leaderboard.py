from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from ranking import progress, services


class Command(BaseCommand):
    help = "Recompute the leaderboard now, as the nightly task does, and store a new snapshot."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--include-simulated",
            action="store_true",
            help="Count the demo's simulated votes (demo only).",
        )
        parser.add_argument("--method", choices=["bootstrap", "sandwich"])
        parser.add_argument("--rounds", type=int)
        parser.add_argument(
            "--quiet",
            action="store_true",
            help="No progress bar (it is drawn only on a terminal anyway).",
        )

    def handle(
        self,
        *args,
        include_simulated: bool,
        method: str | None,
        rounds: int | None,
        quiet: bool,
        **options,
    ) -> None:
        overrides = {k: v for k, v in {"method": method, "rounds": rounds}.items() if v}
        unit = " round" if (method or settings.RANKING["method"]) == "bootstrap" else " board"
        try:
            # Reading the log is one query a chunk; the bar follows the fitting, board by board.
            with progress.stage("fitting", unit=unit, enabled=progress.shown(quiet=quiet)):
                snapshot = services.leaderboard_recompute(
                    include_simulated=include_simulated or None, **overrides
                )
        except Exception as exc:
            raise CommandError(
                f"Recompute failed; the previous snapshot stays published: {exc}"
            ) from exc
        self.stdout.write(
            f"Snapshot {snapshot.pk}: {snapshot.votes_used} votes used, excluded "
            f"{snapshot.votes_excluded or 'none'}, {snapshot.duration_s:.1f} s, "
            f"hash {snapshot.content_hash[:12]}"
        )
