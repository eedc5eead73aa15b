"""Votes with answers of known text: battles written as the vote log keeps them."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.utils import timezone

from accounts.models import User
from arena.battles.prompts import prompt_create
from arena.battles.services import shared_params
from arena.catalog.models import ModelEntry
from arena.core.text import style_counts
from arena.records.models import Answer, Battle, Prompt, Turn, Vote

Make = Callable[..., Vote]


@pytest.fixture
def make_vote(db, two_models) -> Make:
    """make_vote(rater, choice, prompt, answers_a=[...], answers_b=[...], follow_ups=[...])
    -> a counted vote whose battle holds exactly these texts (one turn per answer)."""
    model_a, model_b = two_models

    def make(
        rater: User,
        choice: str,
        prompt: str = "Explain recursion.",
        *,
        answers_a: tuple[str, ...] = ("Answer of A.",),
        answers_b: tuple[str, ...] = ("Answer of B.",),
        follow_ups: tuple[str, ...] = (),
        swap: bool = False,
        system_prompt: str = "",
        **extra: object,
    ) -> Vote:
        first, second = (model_b, model_a) if swap else (model_a, model_b)
        row, _ = prompt_create(text=prompt, category="general", language="en")
        row = Prompt.objects.get(pk=row.pk)
        battle = Battle.objects.create(
            rater=rater, prompt=row, model_a=first, model_b=second, params=shared_params(),
            status=Battle.Status.VOTED, system_prompt=system_prompt,
        )  # fmt: skip
        now = timezone.now()
        texts = [prompt, *follow_ups]
        for index, text in enumerate(texts):
            turn = Turn.objects.create(battle=battle, index=index, text=text, shown_at=now)
            for side, model, answers in (("a", first, answers_a), ("b", second, answers_b)):
                Answer.objects.create(
                    turn=turn, side=side, model=model, status=Answer.Status.OK,
                    text=answers[index], output_tokens=len(answers[index].split()),
                    finish_reason="stop",
                )  # fmt: skip
        sides = {
            side: Vote.side_fields(
                model=model,
                output_tokens=sum(len(t.split()) for t in answers),
                input_tokens=10,
                tokens_estimated=False,
                finish_reason="stop",
                ttft_ms=[None] * len(texts),
                total_ms=[None] * len(texts),
                style=style_counts(" ".join(answers)),
            )  # fmt: skip
            for side, model, answers in (("a", first, answers_a), ("b", second, answers_b))
        }
        return Vote.objects.create(
            **Vote.fields_for(
                battle=battle,
                prompt=row,
                choice=choice,
                decision_ms=9000,
                turns=len(texts),
                side_a=sides["a"],
                side_b=sides["b"],
                **extra,
            )  # fmt: skip
        )

    return make


@pytest.fixture
def models_named(two_models) -> tuple[str, str]:
    a, b = two_models
    return ModelEntry.objects.get(pk=a.pk).public_name, ModelEntry.objects.get(pk=b.pk).public_name
