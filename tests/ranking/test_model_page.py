"""Head-to-head matrices on the leaderboard and a page per model, drawn by the server."""

from __future__ import annotations

import re

import numpy as np
import pytest

from ranking import services
from ranking.pairwise import win_rates
from tests.helpers import calm_vote, make_model, make_user


@pytest.fixture
def snapshot(voted):
    return services.leaderboard_recompute(include_simulated=True, rounds=50, min_votes=100)


def test_the_snapshot_keeps_head_to_head_tallies_for_every_board(snapshot):
    pairs = snapshot.pairs["all"]
    assert sorted(pairs["models"]) == ["Alpha", "Beta", "Delta", "Gamma"]
    battles = np.array(pairs["battles"])
    assert (battles == battles.T).all() and battles.sum() == 2 * snapshot.votes_used
    played, wins = np.array(pairs["played"]), np.array(pairs["wins"])
    assert np.allclose(wins + wins.T, played)
    a, d = pairs["models"].index("Alpha"), pairs["models"].index("Delta")
    assert win_rates(wins, played)[a, d] > 0.75  # e^1.8 to one
    assert {"language:en", "language:es", "category:general"} <= set(snapshot.pairs)


def test_the_leaderboard_draws_the_three_matrices_as_svg(snapshot, client):
    page = client.get("/leaderboard/").content.decode()
    for figure in ("win-rates", "battle-counts", "predicted"):
        block = page[page.index(f'id="{figure}"') :].split("</figure>")[0]
        assert "<svg" in block and block.count("<rect") == 4 * 3  # every pair, both ways
    assert "Alpha beats Delta: " in page
    # Each pair's count is the same read either way.
    counts = page[page.index('id="battle-counts"') :].split("</figure>")[0]
    alpha_delta = re.search(r"Alpha and Delta: (\d+) battles", counts).group(1)
    assert f"Delta and Alpha: {alpha_delta} battles" in counts
    assert '<a href="/leaderboard/model/Alpha/">Alpha</a>' in page
    assert "<script" not in page.split("</main>")[0].split("<main>")[1]  # no script to read it


def test_a_model_page_shows_its_boards_opponents_and_history(snapshot, client):
    services.leaderboard_recompute(include_simulated=True, rounds=50, min_votes=100)
    page = client.get("/leaderboard/model/Alpha/").content.decode()
    assert "<h1>Alpha</h1>" in page
    breakdowns = page[page.index('id="breakdowns"') :].split("</table>")[0]
    for board in ("all", "English", "Spanish", "general"):  # each board by its name
        assert f">{board}<" in breakdowns
    opponents = page[page.index('id="opponents"') :].split("</table>")[0]
    assert [m for m in ("Beta", "Gamma", "Delta") if f">{m}</a>" in opponents] == [
        "Beta",
        "Gamma",
        "Delta",
    ]
    assert 'id="history"' in page and "<polyline" in page  # two snapshots: a line
    assert client.get("/leaderboard/model/Nobody/").status_code == 404


@pytest.mark.usefixtures("generation")
def test_a_model_page_gives_the_share_of_answers_cut_at_the_length_limit(client):
    make_model("Long Talker", "long-talker", answer_tokens=5000)  # past max_tokens: cut
    make_model("Short Talker", "short-talker", answer_tokens=20)
    rater = make_user("xena@example.com")
    votes = [calm_vote(rater, text) for text in ("One?", "Two?", "Three?")]
    cut = sum(
        side["finish_reason"] == "length"
        for v in votes
        for side in (v.side_a, v.side_b)
        if side["model"] == "Long Talker"
    )
    assert cut >= 1
    services.leaderboard_recompute(rounds=20, min_votes=1)
    long_page = client.get("/leaderboard/model/Long Talker/").content.decode()
    short_page = client.get("/leaderboard/model/Short Talker/").content.decode()
    assert re.search(rf'id="truncation">{round(100 * cut / 3)}% .*{cut} of 3 answers', long_page)
    assert re.search(r'id="truncation">0% .*0 of 3 answers', short_page)
