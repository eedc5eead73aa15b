"""Votes to tag: whole battles (prompt, turns, vote) written straight to the database, as the
demo's simulated votes are, so tagging tests need no generation."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.utils import timezone

from accounts.models import User
from arena.battles.models import Battle, Prompt, Turn, Vote
from arena.battles.services import shared_params
from arena.catalog.models import ModelEntry

SIDE = {"output_tokens": 10, "input_tokens": 10, "style": {}}


@pytest.fixture
def make_vote(alice: User, two_models: tuple[ModelEntry, ModelEntry]) -> Callable[..., Vote]:
    def make(*texts: str, category: str = "", language: str = "") -> Vote:
        prompt, _ = Prompt.objects.get_or_create(
            text=texts[0],
            defaults={"category": category, "language": language, "source": "rater"},
        )
        battle = Battle.objects.create(
            rater=alice,
            prompt=prompt,
            model_a=two_models[0],
            model_b=two_models[1],
            params=shared_params(),
            status=Battle.Status.VOTED,
        )
        for index, text in enumerate(texts):
            Turn.objects.create(battle=battle, index=index, text=text, shown_at=timezone.now())
        fields = Vote.fields_for(
            battle=battle,
            prompt=prompt,
            choice="a",
            decision_ms=9000,
            turns=len(texts),
            side_a=SIDE,
            side_b=SIDE,
        )
        return Vote.objects.create(**fields)

    return make
