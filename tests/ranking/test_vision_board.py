"""The vision board: the votes of battles whose first turn carried images, tagged ``vision`` by
the rules, ranked beside the other boards with the same intervals and rules."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync

from arena.tagging.models import VoteTags
from arena.tagging.services import votes_tag
from ranking import services
from ranking.breakdowns import label
from tests.helpers import make_model
from tests.votes import logged_vote

pytestmark = pytest.mark.django_db(transaction=True)

IMAGE = [{"sha256": "ab" * 32, "type": "image/png", "size": 1234}]


def test_votes_of_image_battles_make_the_vision_board_after_a_recompute(alice):
    models = (make_model("Eye One", "eye-1"), make_model("Eye Two", "eye-2"))
    seen = [
        logged_vote(
            alice, models, [f"What is in picture {i}?"], choice="ab"[i % 3 == 0], images=IMAGE
        )
        for i in range(30)
    ]
    read = [logged_vote(alice, models, [f"Tell me a fact, number {i}."]) for i in range(30)]
    async_to_sync(votes_tag)(vote_ids=[v.pk for v in seen + read], labeller=None)
    assert all(
        "vision" in t for t in VoteTags.objects.filter(vote__in=seen).values_list("tags", flat=True)
    )
    assert not any(
        "vision" in t for t in VoteTags.objects.filter(vote__in=read).values_list("tags", flat=True)
    )

    snapshot = services.leaderboard_recompute(rounds=20, min_votes=10)

    rows = snapshot.rows.filter(view="raw", breakdown="category:vision")
    assert sum(rows.values_list("votes", flat=True)) // 2 == len(seen)
    assert {r.model_name for r in rows} == {"Eye One", "Eye Two"}
    assert all(r.lower <= r.score <= r.upper for r in rows)
    assert label("category:vision") == "vision (with images)"
