"""Votes written straight to the log, as the demo's simulated votes are: for tests of what
reads the log (tags, exports) that need no generation."""

from __future__ import annotations

from collections.abc import Iterable

from django.utils import timezone

from accounts.models import User
from arena.battles.services import shared_params
from arena.catalog.models import ModelEntry
from arena.records.models import Battle, Prompt, Turn, Vote

LOGGED_SIDE = {"output_tokens": 10, "input_tokens": 10, "style": {}}


def logged_vote(
    rater: User,
    models: tuple[ModelEntry, ModelEntry],
    texts: Iterable[str],
    *,
    choice: str = "a",
    category: str = "",
    language: str = "",
    decision_ms: int = 9000,
    images: list[dict] | None = None,
) -> Vote:
    """A voted battle written straight to the tables (prompt, a turn per text, the vote), as
    the demo's simulated votes are: no generation, and no tagging job sent."""
    texts = list(texts)
    prompt, _ = Prompt.objects.get_or_create(
        text=texts[0], defaults={"category": category, "language": language, "source": "rater"}
    )
    battle = Battle.objects.create(
        rater=rater,
        prompt=prompt,
        model_a=models[0],
        model_b=models[1],
        params=shared_params(),
        status=Battle.Status.VOTED,
        images=images or [],
    )
    for index, text in enumerate(texts):
        Turn.objects.create(battle=battle, index=index, text=text, shown_at=timezone.now())
    fields = Vote.fields_for(
        battle=battle, prompt=prompt, choice=choice, decision_ms=decision_ms, turns=len(texts),
        side_a=LOGGED_SIDE, side_b=LOGGED_SIDE,
    )  # fmt: skip
    return Vote.objects.create(**fields)
