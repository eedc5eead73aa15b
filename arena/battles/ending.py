"""How a battle ends other than by a vote: void (an answer failed, the rater stopped or
left, the deadline passed), and its answer streams ended with it."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from arena.generation.streams import KEEP_AFTER_END_S, answer_streams, stream_key
from arena.records.models import Answer, Battle, Turn


@transaction.atomic
def battle_void(
    *,
    battle_id: object,
    reason: str,
    statuses: tuple[str, ...] = Battle.UNFINISHED,
) -> bool:
    """The battle cannot be voted on and will not count; a finished battle stays as it is.
    ``statuses``: the ones it may be voided from (a battle being abandoned: only those whose
    answers are coming or not yet watched). True if it was voided now."""
    voided = Battle.objects.filter(pk=battle_id, status__in=statuses).update(
        status=Battle.Status.VOID, void_reason=reason[:200]
    )
    if voided:
        battle_streams_end(battle_id=battle_id)
    return bool(voided)


def battle_streams_end(*, battle_id: object, answer_ids: list[int] | None = None) -> None:
    """Once the transaction commits, the battle's answer streams expire soon, and answers still
    being generated are stopped by their workers (within a heartbeat): it is over, and no more
    model time is spent on it. ``answer_ids``: all of the battle's answers, when the caller has
    read them already (read here without)."""
    if answer_ids is None:
        answer_ids = list(
            Answer.objects.filter(turn__battle_id=battle_id).values_list("pk", flat=True)
        )
    keys = [stream_key(battle_id=battle_id, answer_id=pk) for pk in answer_ids]

    def end() -> None:
        streams = answer_streams()
        streams.expire(keys, KEEP_AFTER_END_S)
        streams.stop(keys)

    # Robust: a Redis hiccup here must not undo a vote; the streams expire on their own later.
    transaction.on_commit(end, robust=True)


def turn_deadline_s() -> float:
    """How long a turn may take to be fully shown: the generation deadline plus a little grace,
    so that a late answer's own error, not the deadline, is what the rater is told."""
    limit = settings.ARENA["TURN_DEADLINE_S"]
    return limit + min(5.0, limit)


def battle_void_overdue(*, turn_id: int) -> bool:
    """Void the turn's battle if the turn is past its deadline with an answer still unfinished;
    True if it is. Answers that have all ended are never voided for the time their showing
    takes (a long answer at the reading pace, a battle shown again)."""
    turn = Turn.objects.only("battle_id", "created_at").get(pk=turn_id)
    if timezone.now() - turn.created_at < timedelta(seconds=turn_deadline_s()):
        return False
    if not turn.answers.exclude(status__in=Answer.TERMINAL).exists():
        return False
    battle_void(battle_id=turn.battle_id, reason="deadline")
    return True
