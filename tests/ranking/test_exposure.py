"""Every variant in the open: retired models keep their rows with the date, previews and
lines are shown, and each model's share of battles and sampling weight are published."""

from __future__ import annotations

import csv
import io
import math

import numpy as np
import pytest

from arena.catalog.models import ModelEntry
from arena.catalog.services import models_set_active
from ranking import services
from ranking.exposure import battle_shares
from ranking.models import LeaderboardRow
from ranking.sampling import draw_probabilities, model_weights


def rows(snapshot, view="raw", breakdown="all"):
    return {r.model_name: r for r in snapshot.rows.filter(view=view, breakdown=breakdown)}


def test_a_retired_model_keeps_its_row_with_the_date_on_every_later_snapshot(voted, client):
    delta = ModelEntry.objects.get(public_name="Delta")
    models_set_active(model_ids=[delta.pk], active=False)
    delta.refresh_from_db()

    first = services.leaderboard_recompute(include_simulated=True, rounds=50)
    later = services.leaderboard_recompute(include_simulated=True, rounds=50)

    for snapshot in (first, later):
        for view in ("raw", "style"):
            row = rows(snapshot, view=view)["Delta"]
            assert row.section == LeaderboardRow.Section.RETIRED
            assert row.retired_at == delta.retired_at
            assert row.sampling_weight == 0.0  # no longer drawn
    data = client.get("/leaderboard.json").json()
    (overall,) = [b for b in data["boards"] if (b["view"], b["breakdown"]) == ("raw", "all")]
    (shown,) = [r for r in overall["rows"] if r["model"] == "Delta"]
    assert shown["section"] == "retired" and shown["retired_at"].startswith(
        delta.retired_at.date().isoformat()
    )
    page = client.get("/leaderboard/").content.decode()
    assert "Retired on" in page and delta.retired_at.strftime("%Y-%m-%d") in page


def test_a_models_line_and_preview_are_on_the_board_and_in_the_downloads(voted, client):
    ModelEntry.objects.filter(public_name="Beta").update(
        organisation="Example AI", line="Quartz", preview=True
    )
    services.leaderboard_recompute(include_simulated=True, rounds=50)

    page = client.get("/leaderboard/").content.decode()
    assert "Example AI / Quartz" in page and ">preview<" in page
    header, *table = csv.reader(io.StringIO(client.get("/leaderboard.csv").content.decode()))
    assert {"line", "preview", "retired_at", "battle_share", "sampling_weight"} <= set(header)
    beta = [dict(zip(header, row, strict=True)) for row in table if "Beta" in row][0]
    assert (beta["line"], beta["preview"]) == ("Quartz", "True")
    assert 0.0 < float(beta["battle_share"]) < 1.0


@pytest.mark.parametrize("view", ["raw", "style"])
def test_shares_of_battles_and_sampling_weights_each_sum_to_one(voted, view):
    snapshot = services.leaderboard_recompute(include_simulated=True, rounds=50)

    board = rows(snapshot, view=view)
    shares = [r.battle_share for r in board.values() if r.battle_share is not None]
    weights = [r.sampling_weight for r in board.values() if r.sampling_weight is not None]
    # Newcomer has no votes and so no row: it has never been drawn in the simulated log.
    assert math.isclose(sum(shares), 1.0) and len(shares) == 4
    # Its weight is the only one missing from the board's rows: it is drawn, just unranked.
    newcomer = 1.0 - sum(weights)
    assert 0.0 < newcomer < 1.0


def test_battle_shares_count_each_models_places_and_leave_simulated_battles_out_by_default(
    voted,
):
    from django.utils import timezone

    assert battle_shares(cutoff=timezone.now(), include_simulated=False) == {}
    shares = battle_shares(cutoff=timezone.now(), include_simulated=True)
    assert set(shares) == {"Alpha", "Beta", "Gamma", "Delta"}
    assert math.isclose(sum(shares.values()), 1.0)


def test_sampling_weights_follow_the_draw_and_two_of_one_underlying_model_never_meet():
    nan = float("nan")
    lower = np.array([900.0, 980.0, nan, 1100.0])
    upper = np.array([1000.0, 1080.0, nan, 1200.0])
    votes = np.array([800, 800, 0, 800])
    conf = {"floor": 0.2, "boost_votes": 300, "boost": 1.0}

    probs = draw_probabilities(
        ids=["x", "y", "z", "x"], lower=lower, upper=upper, votes=votes, conf=conf
    )
    weights = model_weights(probs)

    assert probs[0, 3] == 0.0 and probs[3, 0] == 0.0  # the same underlying model
    assert math.isclose(weights.sum(), 1.0)
    assert weights[2] == weights.max()  # the unknown newcomer overlaps everything, boosted
