"""Without beat, the demo server's refresher keeps the leaderboard current: a new snapshot once
votes come in, none while nothing changes."""

from __future__ import annotations

import pytest

from arena.battles.simulation import votes_simulate
from ranking import services
from ranking.models import LeaderboardSnapshot
from ranking.refresher import refresher_start
from tests.helpers import wait_until


def test_a_refresh_recomputes_only_when_votes_came_in_since_the_last_snapshot(voted):
    first = services.leaderboard_recompute(include_simulated=True, rounds=20)
    assert services.leaderboard_refresh() is None  # nothing new
    votes_simulate(n=50, strengths=voted, once=False, seed=11)
    second = services.leaderboard_refresh()
    assert second is not None and second.votes_used == first.votes_used + 50
    assert second.settings["include_simulated"]  # as the board it replaces


@pytest.fixture
def refresher(settings):
    settings.RANKING = {**settings.RANKING, "rounds": 20, "style_rounds": 5}
    started = []
    yield lambda: started.append(refresher_start(every_s=0.05)) or started[-1]
    for running in started:
        running.stop()


def test_the_refresher_thread_publishes_a_new_snapshot_after_new_votes(
    transactional_db, voted, refresher
):
    services.leaderboard_recompute(include_simulated=True, rounds=20)  # as the demo starts
    running = refresher()
    assert running is not None and refresher_start(every_s=0.05) is None  # one per process
    votes_simulate(n=30, strengths=voted, once=False, seed=12)
    wait_until(lambda: LeaderboardSnapshot.objects.latest().votes_used == 1630)


def test_no_refresher_runs_when_it_is_switched_off():
    assert refresher_start(every_s=0) is None
