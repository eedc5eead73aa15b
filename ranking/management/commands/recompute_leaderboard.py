from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from ranking import services


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

    def handle(
        self, *args, include_simulated: bool, method: str | None, rounds: int | None, **options
    ) -> None:
        overrides = {k: v for k, v in {"method": method, "rounds": rounds}.items() if v}
        try:
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
