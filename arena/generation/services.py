"""Writes of generation: claim an answer before its stream, finish it once after, and void the
battle when an answer cannot complete or its turn overruns the deadline."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, fields
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from arena.backends.base import Backend, ChatRequest, Message
from arena.backends.registry import UnknownBackend, backend_for
from arena.battles.models import Answer, Battle, Turn
from arena.catalog import costs
from arena.core.models import model_update
from arena.generation.runner import StreamResult
from arena.generation.streams import (
    HEARTBEAT_TTL_S,
    KEEP_AFTER_END_S,
    answer_streams,
    stream_key,
)
from arena.integrity.gold import replay_backend

# What a finished stream writes onto its answer: the runner's result, then the bookkeeping.
FINISH_FIELDS = [*(f.name for f in fields(StreamResult)), "finished_at", "cost", "cost_status"]


@dataclass
class GenerationJob:
    battle_id: uuid.UUID
    backend: Backend | None
    request: ChatRequest | None
    abandoned: str = ""  # the answer's final status when the job must not run


def answer_conversation(answer: Answer) -> ChatRequest:
    """What the model is asked: the battle's system prompt, then this side's dialogue so far."""
    turn = answer.turn
    battle = turn.battle
    messages: list[Message] = []
    if battle.system_prompt:
        messages.append(Message("system", battle.system_prompt))
    earlier = Answer.objects.filter(
        turn__battle=battle, turn__index__lt=turn.index, side=answer.side
    ).select_related("turn")
    for prev in earlier.order_by("turn__index") if turn.index else ():
        messages += [Message("user", prev.turn.text), Message("assistant", prev.text)]
    messages.append(Message("user", turn.text))
    return ChatRequest(
        model_id=answer.model.model_id, messages=tuple(messages), params=battle.params
    )


def _fail(answer: Answer, *, kind: str, message: str, void_reason: str) -> GenerationJob:
    answer.status = Answer.Status.PARTIAL if answer.text else Answer.Status.ERROR
    answer.error_kind = kind
    answer.error_message = message
    answer.finished_at = timezone.now()
    answer.save()
    battle_void(battle_id=answer.turn.battle_id, reason=void_reason)
    return GenerationJob(answer.turn.battle_id, None, None, abandoned=answer.status)


@transaction.atomic
def answer_claim(*, answer_id: int) -> GenerationJob | None:
    """Mark an answer running and say what to generate; None when it is already finished.

    A task redelivered after a worker died finds its answer still running: it cannot resume a
    stream the rater has half seen, so the answer fails visibly instead of being re-run. One
    sent twice (the sweep's hand-on of a task lost with Redis) finds its answer running with a
    live heartbeat: another worker has it, and this one leaves it be.
    """
    answer = (
        Answer.objects.select_for_update(of=("self", "turn", "turn__battle"))
        .select_related("turn__battle", "model")
        .filter(pk=answer_id)
        .first()
    )
    if answer is None or answer.is_terminal:
        return None
    if answer.turn.battle.status == Battle.Status.VOID:
        # Abandoned or voided before its turn came: no model time is spent on it.
        return _fail(
            answer,
            kind="abandoned",
            message="The battle ended before this answer began.",
            void_reason="",
        )
    key = stream_key(battle_id=answer.turn.battle_id, answer_id=answer.pk)
    if answer.status == Answer.Status.RUNNING and answer_streams().alive([key]):
        return None
    if answer.status == Answer.Status.RUNNING:
        return _fail(
            answer,
            kind="server",
            message="The worker generating this answer stopped.",
            void_reason="generation interrupted",
        )
    answer.status = Answer.Status.RUNNING
    answer.started_at = timezone.now()
    answer.save(update_fields=["status", "started_at"])
    model = answer.model
    try:
        backend = replay_backend(answer=answer) or backend_for(
            model.backend, model.backend_settings
        )
    except UnknownBackend as exc:
        return _fail(
            answer, kind="bad_request", message=str(exc), void_reason="backend unavailable"
        )
    return GenerationJob(answer.turn.battle_id, backend, answer_conversation(answer))


@transaction.atomic
def answer_finish(*, answer_id: int, result: StreamResult) -> str:
    """Write the finished stream onto its answer once; the answer's final status."""
    # Only the answer's row: locking its model's too (what select_related would lock) would
    # queue every finish of that model behind one another, and cross the battle lock that
    # _turn_finished takes next with a follow-up that holds the battle and inserts answers.
    answer = (
        Answer.objects.select_for_update(of=("self",))
        .select_related("turn", "model")
        .get(pk=answer_id)
    )
    if answer.is_terminal:
        return answer.status
    finished_at = timezone.now()
    cost, cost_status = costs.answer_cost(
        model=answer.model,
        on=timezone.localdate(answer.started_at or finished_at),
        input_tokens=result.input_tokens,
        output_tokens=result.output_tokens,
        tokens_estimated=result.tokens_estimated,
    )
    data = {
        **result.as_dict(),
        "request_id": (result.request_id or "")[:200],
        "finished_at": finished_at,
        "cost": cost,
        "cost_status": cost_status,
    }
    model_update(instance=answer, fields=FINISH_FIELDS, data=data)
    if answer.status != Answer.Status.OK:
        battle_void(battle_id=answer.turn.battle_id, reason=f"answer failed: {result.error_kind}")
    else:
        _turn_finished(turn=answer.turn)
    return answer.status


def _turn_finished(*, turn: Turn) -> None:
    """Both answers of the battle's last turn are complete and nobody has watched them to the
    end yet: the battle waits for its rater instead of staying generating for good (a socket
    gone mid-stream, a reloaded tab that ignored the offer). Watching it to the end
    (turn_mark_shown) makes it ready; the sweep abandons it once its streams are gone."""
    # The battle's row lock serialises the two sides' finishes: whichever commits second sees
    # the other's answer complete (each statement reads what is committed by then).
    battle = Battle.objects.select_for_update().only("status").get(pk=turn.battle_id)
    if battle.status != Battle.Status.GENERATING:
        return
    last = Turn.objects.filter(battle_id=turn.battle_id).latest("index")
    if last.pk != turn.pk or last.shown_at is not None:
        return
    if turn.answers.exclude(status=Answer.Status.OK).exists():
        return
    battle.status = Battle.Status.WAITING
    battle.save(update_fields=["status"])


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


def battle_streams_end(*, battle_id: object) -> None:
    """Once the transaction commits, the battle's answer streams expire soon, and answers still
    being generated are stopped by their workers (within a heartbeat): it is over, and no more
    model time is spent on it."""
    answer_ids = list(Answer.objects.filter(turn__battle_id=battle_id).values_list("pk", flat=True))
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


# How long past its deadline a turn may stay unfinished before the sweep ends it: the viewer's
# own deadline check comes first, so the sweep only meets battles no socket is watching.
STUCK_GRACE_S = 60


def battles_void_stuck(*, now: datetime | None = None) -> int:
    """End every battle still generating well past its turn's deadline, whatever crashed (a
    worker killed, a task lost, a web process gone) or whoever left: one with answers
    unfinished is void (they fail); one whose answers all ended waits for its rater if they
    are complete and still readable, else is void as abandoned. The number of battles voided."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=turn_deadline_s() + STUCK_GRACE_S)
    unfinished = Answer.objects.filter(
        turn__created_at__lt=cutoff, turn__battle__status=Battle.Status.GENERATING
    ).exclude(status__in=Answer.TERMINAL)
    with transaction.atomic():
        battle_ids = set(unfinished.values_list("turn__battle_id", flat=True))
        Answer.objects.filter(pk__in=list(unfinished.values_list("pk", flat=True))).update(
            status=Answer.Status.ERROR,
            error_kind="timeout",
            error_message="The answer did not finish in time.",
            finished_at=now,
        )
        for battle_id in battle_ids:
            battle_void(battle_id=battle_id, reason="stuck past the deadline")
    # What is left generating past the cutoff has every answer ended: nobody watched it to the
    # end (a socket gone, a tab reloaded, a web process or Redis restarted mid-stream).
    finished = (
        Battle.objects.filter(status=Battle.Status.GENERATING)
        .annotate(last_turn_at=Max("turns__created_at"))
        .filter(last_turn_at__lt=cutoff)
        .values_list("pk", flat=True)
    )
    ended = len(battle_ids)
    for battle_id in list(finished):
        ended += _battle_settle(battle_id=battle_id)
    return ended


# Why the sweep ends a battle whose answers finished but that nobody watched to the end, once
# its streams are gone and so nobody can be shown it again.
NOBODY_WATCHED = "abandoned: nobody watched it to the end"


@transaction.atomic
def _battle_settle(*, battle_id: object) -> int:
    """A battle generating past its deadline with every answer ended: waiting for its rater
    if its answers are complete and its streams still readable (it may be shown again), else
    void as abandoned. 1 if it was voided, else 0."""
    battle = Battle.objects.select_for_update().filter(pk=battle_id).first()
    if battle is None or battle.status != Battle.Status.GENERATING:
        return 0
    turn = Turn.objects.filter(battle_id=battle_id).latest("index")
    keys = [
        stream_key(battle_id=battle_id, answer_id=pk)
        for pk in turn.answers.values_list("pk", flat=True)
    ]
    complete = not turn.answers.exclude(status=Answer.Status.OK).exists()
    if complete and turn.shown_at is not None:
        # Shown to the end but not marked (the viewer's write was lost): the vote may come.
        battle.status = Battle.Status.READY
    elif complete and answer_streams().readable(keys) == set(keys):
        battle.status = Battle.Status.WAITING
    else:
        battle_void(
            battle_id=battle_id, reason=NOBODY_WATCHED, statuses=(Battle.Status.GENERATING,)
        )
        return 1
    battle.save(update_fields=["status"])
    return 0


def battles_end_unwatched() -> int:
    """Void every battle waiting for its rater whose last turn's answer streams are gone
    (expired, or lost with a Redis restart): nobody can be shown it again. One query and one
    Redis round trip for them all. The number ended."""
    last: dict[object, tuple[int, list[str]]] = {}  # battle -> its last turn's index, keys
    for battle_id, index, pk in Answer.objects.filter(
        turn__battle__status=Battle.Status.WAITING
    ).values_list("turn__battle_id", "turn__index", "pk"):
        key = stream_key(battle_id=battle_id, answer_id=pk)
        seen = last.get(battle_id)
        if seen is None or index > seen[0]:
            last[battle_id] = (index, [key])
        elif index == seen[0]:
            seen[1].append(key)
    readable = answer_streams().readable([key for _, keys in last.values() for key in keys])
    ended = 0
    for battle_id, (_, keys) in last.items():
        # Only from waiting: a rater who came back and watched it meanwhile keeps it.
        if not readable.issuperset(keys) and battle_void(
            battle_id=battle_id, reason=NOBODY_WATCHED, statuses=(Battle.Status.WAITING,)
        ):
            ended += 1
    return ended


STALLED_MESSAGE = "A model server stopped while answering."
# An answer still pending this long after its turn began has most likely lost its task (Redis
# restarted with it queued): it is sent again, once. A copy that finds the first one running
# leaves it be (answer_claim), so a slow queue only costs a task that ends at once.
QUEUED_LOST_S = 20


# A worker beats at once when it claims an answer; this covers the claim's commit to that beat.
FIRST_BEAT_S = 2.0


def answers_recover_stalled(
    *, now: datetime | None = None, battle_id: object = None
) -> list[tuple[int, str]]:
    """Answers whose worker stopped (no heartbeat: killed, frozen, cut off): one that had
    written nothing is made pending again, once, for another worker; any other fails, and its
    battle is void with "a model server stopped", its viewers told at once through the
    stream. Answers pending past QUEUED_LOST_S are sent again, once. The answers to enqueue,
    each with its pool queue.

    The sweep looks at every battle, and only at heartbeats lapsed (HEARTBEAT_TTL_S after a
    claim); a rater coming back to one battle (``battle_id``) is answered at once: a claimed
    answer with no heartbeat at all has lost its worker."""
    now = now or timezone.now()
    battles = Battle.objects.filter(status=Battle.Status.GENERATING)
    if battle_id is not None:
        battles = battles.filter(pk=battle_id)
    grace_s = HEARTBEAT_TTL_S if battle_id is None else FIRST_BEAT_S
    lost = list(
        Answer.objects.filter(
            status=Answer.Status.PENDING,
            requeues=0,
            turn__created_at__lt=now - timedelta(seconds=QUEUED_LOST_S),
            turn__battle__in=battles,
        ).select_related("model")
    )
    Answer.objects.filter(pk__in=[a.pk for a in lost], status=Answer.Status.PENDING).update(
        requeues=1
    )
    running = Answer.objects.filter(
        status=Answer.Status.RUNNING,
        started_at__lt=now - timedelta(seconds=grace_s),
        turn__battle__in=battles,
    ).values_list("pk", "turn__battle_id")
    keys = {pk: stream_key(battle_id=battle_id, answer_id=pk) for pk, battle_id in running}
    alive = answer_streams().alive(list(keys.values()))
    requeue = [(answer.pk, answer.model.pool_queue) for answer in lost]
    for answer_id, key in keys.items():
        if key not in alive:
            queue = _answer_stalled(answer_id=answer_id, key=key)
            if queue is not None:
                requeue.append((answer_id, queue))
    return requeue


@transaction.atomic
def _answer_stalled(*, answer_id: int, key: str) -> str | None:
    """The queue to hand the answer to again, or None once it has failed."""
    answer = (
        Answer.objects.select_for_update(of=("self",))
        .select_related("turn", "model")
        .get(pk=answer_id)
    )
    if answer.status != Answer.Status.RUNNING:
        return None  # finished meanwhile
    streams = answer_streams()
    text = streams.text(key)
    if not text and not answer.requeues:
        model_update(
            instance=answer,
            fields=["status", "started_at", "requeues"],
            data={"status": Answer.Status.PENDING, "started_at": None, "requeues": 1},
        )
        return answer.model.pool_queue
    model_update(
        instance=answer,
        fields=["status", "text", "error_kind", "error_message", "finished_at"],
        data={
            "status": Answer.Status.PARTIAL if text else Answer.Status.ERROR,
            "text": text,
            "error_kind": "server",
            "error_message": STALLED_MESSAGE,
            "finished_at": timezone.now(),
        },
    )
    battle_void(battle_id=answer.turn.battle_id, reason="a model server stopped")
    status = answer.status
    transaction.on_commit(lambda: streams.end(key, status), robust=True)
    return None
