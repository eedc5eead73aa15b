from __future__ import annotations

from celery import shared_task

from ranking import services


@shared_task(ignore_result=True)
def recompute_leaderboard() -> None:
    """Nightly: a new snapshot from the whole vote log. A failure raises and writes nothing,
    so the previous snapshot stays published."""
    services.leaderboard_recompute()
