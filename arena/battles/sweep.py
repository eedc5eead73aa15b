"""The sweep that leaves no battle generating for good: answers whose worker stopped are
handed on or fail, answers whose task was lost are sent again, battles stuck past their
deadline end, and battles nobody watched to the end are abandoned once their streams are
gone."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from arena.battles.answers import answers_send
from arena.battles.ending import battle_void, turn_deadline_s
from arena.core.models import model_update
from arena.generation.streams import HEARTBEAT_TTL_S, answer_streams, stream_key
from arena.records.models import Answer, Battle, Turn


def battles_sweep() -> None:
    """Every few seconds (Celery beat): answers whose worker stopped are handed to another
    worker or end their battle, no battle stays generating past its deadline, and one waiting
    for its rater ends once nobody can be shown it again."""
    answers_resume()
    battles_void_stuck()
    battles_end_unwatched()


def answers_resume(*, battle_id: object = None) -> list[tuple[int, str]]:
    """Answers whose worker stopped, or whose task was lost, handed on to a worker again, once
    (answers_recover_stalled); those sent, each with its pool queue."""
    requeue = answers_recover_stalled(battle_id=battle_id)
    for answer_id, queue in requeue:
        answers_send(answer_ids=[answer_id], queue=queue)
    return requeue


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
