"""Boards per tag from the tags log: the recompute reads each vote's newest tag set, the page
offers each board as a chip, the downloads carry them and a model's page lists each."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from arena.records.models import Vote
from arena.tagging.models import VoteTags
from ranking import services


def tag(votes, tags: list[str], *, version: int = 1) -> None:
    VoteTags.objects.bulk_create(
        VoteTags(vote=v, prompt_hash=v.prompt_hash, tags=tags, labeller="rules", version=version)
        for v in votes
    )


@pytest.fixture
def tagged(voted):
    """Of the 1,600 votes: every other one code; every third math, then (a later labeller
    version) code and hard instead; the last 100 not tagged at all."""
    votes = list(Vote.objects.order_by("pk"))
    tag(votes[0:1500:2], ["code"])
    tag(votes[1:1500:2], [])
    thirds = votes[0:1500:3]
    tag(thirds, ["math"])
    tag(thirds, ["code", "hard"], version=2)
    code = {v.pk for v in votes[0:1500:2]} | {v.pk for v in thirds}
    return {"votes": votes, "code": code, "hard": {v.pk for v in thirds}}


def board_votes(snapshot, breakdown: str) -> int:
    """The votes on a board: each vote is two rows' worth of a model's votes."""
    rows = snapshot.rows.filter(view="raw", breakdown=breakdown)
    return sum(rows.values_list("votes", flat=True)) // 2


def test_the_recompute_builds_a_board_per_tag_from_each_votes_newest_tags(tagged):
    snapshot = services.leaderboard_recompute(include_simulated=True, rounds=20, min_votes=100)
    breakdowns = set(snapshot.rows.values_list("breakdown", flat=True))
    assert {"category:code", "category:hard", "category:general"} <= breakdowns
    assert "category:math" not in breakdowns  # every math vote was tagged again without it
    assert board_votes(snapshot, "category:code") == len(tagged["code"])
    assert board_votes(snapshot, "category:hard") == len(tagged["hard"])
    assert board_votes(snapshot, "category:general") == 1600  # the curated category: every vote
    views = snapshot.rows.filter(breakdown="category:hard").values_list("view", flat=True)
    assert set(views) == {"raw", "style"}
    assert {"category:code", "category:hard"} <= set(snapshot.pairs)
    battles = np.array(snapshot.pairs["category:hard"]["battles"])
    assert battles.sum() == 2 * len(tagged["hard"])
    assert any("100 of the 1600 votes have no tags yet" in note for note in snapshot.notes)


def test_the_low_vote_rule_holds_on_a_tag_board(tagged):
    # ~533 hard votes among four models: ~267 each, under 300: listed, not ranked.
    snapshot = services.leaderboard_recompute(include_simulated=True, rounds=20, min_votes=300)
    hard = snapshot.rows.filter(view="raw", breakdown="category:hard")
    assert set(hard.values_list("section", flat=True)) == {"provisional"}
    code = snapshot.rows.filter(view="raw", breakdown="category:code")
    assert set(code.values_list("section", flat=True)) == {"ranked"}


def test_without_tags_the_boards_are_as_before(voted):
    snapshot = services.leaderboard_recompute(include_simulated=True, rounds=20, min_votes=100)
    breakdowns = set(snapshot.rows.values_list("breakdown", flat=True))
    assert breakdowns == {"all", "category:general", "language:en", "language:es"}
    assert any("1600 of the 1600 votes have no tags yet" in note for note in snapshot.notes)


def test_the_leaderboard_offers_tag_and_language_boards_as_chips(tagged, client):
    snapshot = services.leaderboard_recompute(include_simulated=True, rounds=20, min_votes=100)
    page = client.get("/leaderboard/").content.decode()
    chips = page[page.index('id="category-chips"') :].split("</nav>")[0]
    # The tags in their display order, then curated categories.
    order = [chips.index(f">{name}</a>") for name in ("all", "coding", "hard prompts", "general")]
    assert order == sorted(order)
    assert 'href="?view=raw&amp;breakdown=category%3Ahard"' in chips
    languages = page[page.index('id="language-chips"') :].split("</nav>")[0]
    assert ">English</a>" in languages and ">Spanish</a>" in languages
    hard = client.get("/leaderboard/?breakdown=category:hard").content.decode()
    assert "Leaderboard · hard prompts" in hard
    assert 'class="on" aria-current="true">hard prompts<' in hard

    data = client.get("/leaderboard.json").json()
    boards = {(b["view"], b["breakdown"]) for b in data["boards"]}
    assert {("raw", "category:hard"), ("style", "category:hard"), ("raw", "language:es")} <= boards
    text = client.get(f"/leaderboard/{snapshot.pk}.csv").content.decode()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert {"category:code", "category:hard", "language:en"} <= {r["breakdown"] for r in rows}


def test_a_models_page_lists_each_tag_and_language_board(tagged, client):
    services.leaderboard_recompute(include_simulated=True, rounds=20, min_votes=100)
    page = client.get("/leaderboard/model/Alpha/").content.decode()
    table = page[page.index('id="breakdowns"') :].split("</table>")[0]
    names = ["all", "coding", "hard prompts", "general", "English", "Spanish"]
    at = [table.index(f">{name}<") for name in names]
    assert at == sorted(at)
    assert '?breakdown=category%3Acode"' in table
