"""Gold battles: known right answers replayed to crowd raters, to measure each rater (how often
each agrees is integrity's reading: integrity.selectors).

A crowd rater who presses "random prompt" is sometimes given a gold item's prompt, with a
ticket kept server-side; starting the battle with that prompt redeems the ticket and the first
turn replays the gold item's two answers (on random sides) instead of generating. Nothing the
browser sees differs from an ordinary battle.
"""

from __future__ import annotations

import random

from django.conf import settings
from django.core.cache import cache
from django.db import transaction

from accounts.models import User
from arena.backends.replay import ReplayBackend
from arena.core.errors import ServiceError
from arena.records.models import Answer, Battle, GoldItem, Prompt

TICKET_TTL_S = 3600


def _ticket(rater: User, prompt_id: int) -> str:
    return f"arena:gold-ticket:{rater.pk}:{prompt_id}"


def gold_draw(*, rater: User, rng: random.Random | None = None) -> Prompt | None:
    """Sometimes (GOLD_SHARE), for crowd raters, a gold item's prompt instead of a random one."""
    rng = rng or random.SystemRandom()
    if rater.rater_pool != User.Pool.CROWD or rng.random() >= settings.INTEGRITY["GOLD_SHARE"]:
        return None
    items = list(
        GoldItem.objects.filter(active=True)
        .exclude(served__rater=rater)
        .exclude(source__rater=rater)  # they have seen their own battle
        .select_related("source__prompt")
    )
    if not items:
        return None
    item = rng.choice(items)
    cache.set(_ticket(rater, item.source.prompt_id), item.pk, TICKET_TTL_S)
    return item.source.prompt


def gold_claim(*, rater: User, prompt: Prompt) -> GoldItem | None:
    """Redeem the ticket for this prompt, if the rater drew it as gold."""
    key = _ticket(rater, prompt.pk)
    item_id = cache.get(key)
    if item_id is None:
        return None
    cache.delete(key)
    return (
        GoldItem.objects.filter(pk=item_id, active=True, source__prompt=prompt)
        .select_related("source__model_a", "source__model_b")
        .first()
    )


def replay_backend(*, answer: Answer) -> ReplayBackend | None:
    """For the first turn of a gold battle: the source battle's answer of the same model."""
    battle = answer.turn.battle
    if battle.gold_id is None or answer.turn.index != 0:
        return None
    source = Answer.objects.filter(
        turn__battle_id=battle.gold.source_id, turn__index=0, model_id=answer.model_id
    ).first()
    if source is None:
        return None
    decode_s = max(0.001, ((source.total_ms or 0) - (source.ttft_ms or 0)) / 1000)
    return ReplayBackend(
        {
            "text": source.text,
            "ttft_ms": source.ttft_ms,
            "tokens_per_s": (source.output_tokens or 0) / decode_s
            if source.output_tokens
            else None,
            "output_tokens": source.output_tokens,
        }
    )


def gold_mark(*, battle_id: object, correct_side: str, note: str = "") -> GoldItem:
    """An admin marks a finished battle as gold: ``correct_side`` is its better answer."""
    if correct_side not in Answer.Side.values:
        raise ServiceError("bad_side", "The correct side must be 'a' or 'b'.")
    battle = Battle.objects.select_related("prompt").get(pk=battle_id)
    if battle.prompt.source != Prompt.Source.CURATED:
        # Random draws offer curated prompts only; a typed one would stand out (and show
        # another rater's text).
        raise ServiceError("not_curated", "Only a battle on a curated prompt can be gold.")
    if battle.gold_id is not None or battle.integrity_flags:
        raise ServiceError(
            "not_clean", "A gold replay or a battle with integrity findings cannot be gold."
        )
    statuses = set(
        Answer.objects.filter(turn__battle=battle, turn__index=0).values_list("status", flat=True)
    )
    if statuses != {Answer.Status.OK}:
        raise ServiceError(
            "answers_incomplete", "Only a battle whose first answers both completed can be gold."
        )
    item, _ = GoldItem.objects.update_or_create(
        source=battle, defaults={"correct_side": correct_side, "note": note, "active": True}
    )
    return item


@transaction.atomic
def gold_set_active(*, item_ids: list[int], active: bool) -> int:
    """Serve (or stop serving) gold items; returns how many changed. Past replays and their
    votes stay as they are: agreement already measured remains measured."""
    return GoldItem.objects.filter(pk__in=item_ids).exclude(active=active).update(active=active)
