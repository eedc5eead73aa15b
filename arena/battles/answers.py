"""A battle's answers: what each model is asked, the claim before its stream and the one
write after it (the generation engine runs the stream between them), and sending a turn's
answers to the workers.

Claim and finish are a worker's whole database work per answer, so their common path is one
statement each, its own transaction: a claim locks its rows and marks the answer running, a
complete answer's finish writes it and, with the other side's complete, moves the battle on.
Whatever is not the common path (an answer finished, running or failed already, a battle
void, an answer that failed) takes the locked ORM path the common one stands for."""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from arena.backends.base import Backend, ChatRequest, Message
from arena.backends.registry import UnknownBackend, backend_for
from arena.battles.ending import battle_void
from arena.battles.gold import replay_backend
from arena.catalog import costs
from arena.catalog.models import ModelEntry
from arena.core.jobs import job_send
from arena.core.models import model_update
from arena.core.statements import writes_in_with
from arena.generation import worker
from arena.generation.runner import StreamResult
from arena.generation.streams import answer_streams, stream_key
from arena.generation.worker import GenerationJob
from arena.images.selectors import images_sent
from arena.records.models import Answer, Battle, Turn

# The task that streams a turn's answers (arena.battles.tasks), sent by name: the tasks import
# this module. The name predates the battles package; queued tasks refer to it.
GENERATE_TURN = "arena.tasks.generate_turn"

# What a finished stream writes onto its answer: the runner's result, then the bookkeeping.
FINISH_FIELDS = [*(f.name for f in fields(StreamResult)), "finished_at", "cost", "cost_status"]


def answers_send(*, answer_ids: list[int], queue: str = "") -> None:
    """Generate these answers, started together, once the transaction commits. ``queue``:
    their models' pool queue (the backend settings' "queue"), so workers can be sized per GPU
    pool; empty for the default generation queue."""
    job_send(
        task=GENERATE_TURN, args=[answer_ids], queue=queue, priority=settings.GENERATION_PRIORITY
    )


async def answers_generate(answer_ids: list[int]) -> None:
    """Stream these answers side by side on the generation engine (the task's body)."""
    await worker.answers_generate(answer_ids, claim=answer_claim, finish=answer_finish)


async def answer_generate(answer_id: int) -> None:
    """Stream one answer. Safe to call twice: a finished answer is left alone."""
    await worker.answer_generate(answer_id, claim=answer_claim, finish=answer_finish)


def _key(answer: Answer) -> str:
    return stream_key(battle_id=answer.turn.battle_id, answer_id=answer.pk)


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
    # The images attached to the first turn stay with it in every later turn's dialogue.
    images = images_sent(battle.images)
    for prev in earlier.order_by("turn__index") if turn.index else ():
        first = prev.turn.index == 0
        messages += [
            Message("user", prev.turn.text, images if first else ()),
            Message("assistant", prev.text),
        ]
    messages.append(Message("user", turn.text, images if turn.index == 0 else ()))
    return ChatRequest(
        model_id=answer.model.model_id, messages=tuple(messages), params=battle.params
    )


@dataclass(frozen=True)
class Claimed:
    """What a claim read, handed to its finish through the engine (GenerationJob.memo), so
    that the finish reads none of it again."""

    model: ModelEntry  # its pk and backend: all its cost needs
    started_at: datetime | None
    battle_id: object
    turn_id: int
    turn_index: int

    @classmethod
    def of(cls, answer: Answer) -> Claimed:
        """From a claimed answer, its turn and model read with it."""
        return cls(
            model=answer.model,
            started_at=answer.started_at,
            battle_id=answer.turn.battle_id,
            turn_id=answer.turn_id,
            turn_index=answer.turn.index,
        )


def _tables() -> dict[str, str]:
    return {
        "answer": Answer._meta.db_table,
        "turn": Turn._meta.db_table,
        "battle": Battle._meta.db_table,
        "model": ModelEntry._meta.db_table,
    }


# The rows a claim reads, whole, in this order: what select_related("turn__battle", "model")
# would give, so the question is asked by the one function that says what a model is asked.
_CLAIM_ROWS = ((Answer, "a"), (Turn, "t"), (Battle, "b"), (ModelEntry, "m"))

# One statement: the answer, its turn and its battle locked (as the locked path locks them, so
# a void under way is waited for and seen), the answer marked running if it is pending and its
# battle not void, and the rows as they were read coming back in the same round trip.
_CLAIM_SQL = """
WITH found AS (
    SELECT {columns}
    FROM {answer} a
    JOIN {turn} t ON t.id = a.turn_id
    JOIN {battle} b ON b.id = t.battle_id
    JOIN {model} m ON m.id = a.model_id
    WHERE a.id = %(answer_id)s
    FOR UPDATE OF a, t, b
), claimed AS (
    UPDATE {answer} SET status = %(running)s, started_at = %(now)s
    FROM found
    WHERE {answer}.id = found.a_id AND found.a_status = %(pending)s
    AND found.b_status <> %(void)s
    RETURNING {answer}.id
)
SELECT EXISTS (SELECT 1 FROM claimed), found.* FROM found
""".format(
    columns=", ".join(
        f"{alias}.{f.column} AS {alias}_{f.column}"
        for model, alias in _CLAIM_ROWS
        for f in model._meta.concrete_fields
    ),
    **_tables(),
)


def _instances(values: tuple) -> list:
    """The claim's row as model instances, each field converted as a query would."""
    out, at = [], 0
    for model, _ in _CLAIM_ROWS:
        concrete = model._meta.concrete_fields
        row = [
            f.from_db_value(v, None, connection) if hasattr(f, "from_db_value") else v
            for f, v in zip(concrete, values[at : at + len(concrete)], strict=True)
        ]
        out.append(model.from_db(connection.alias, [f.attname for f in concrete], row))
        at += len(concrete)
    return out


def answer_claim(*, answer_id: int) -> GenerationJob | None:
    """Mark an answer running and say what to generate; None when it is already finished.

    A task redelivered after a worker died finds its answer still running: it cannot resume a
    stream the rater has half seen, so the answer fails visibly instead of being re-run. One
    sent twice (the sweep's hand-on of a task lost with Redis) finds its answer running with a
    live heartbeat: another worker has it, and this one leaves it be.
    """
    if not writes_in_with(connection.alias):
        # The statement locks and updates through a WITH clause, which only PostgreSQL runs;
        # elsewhere (SQLite, the embedded default, one process) the ORM's claim does the same.
        return _claim_locked(answer_id=answer_id)
    now = timezone.now()
    with connection.cursor() as cursor:
        cursor.execute(
            _CLAIM_SQL,
            {
                "answer_id": answer_id,
                "now": now,
                "running": Answer.Status.RUNNING,
                "pending": Answer.Status.PENDING,
                "void": Battle.Status.VOID,
            },
        )
        row = cursor.fetchone()
    if row is None:
        return None
    if not row[0]:
        return _claim_locked(answer_id=answer_id)
    answer, turn, battle, model = _instances(row[1:])
    turn.battle, answer.turn, answer.model = battle, turn, model
    answer.status, answer.started_at = Answer.Status.RUNNING, now
    try:
        backend = replay_backend(answer=answer) or backend_for(
            model.backend, model.backend_settings
        )
    except UnknownBackend as exc:
        with transaction.atomic():
            return _fail(
                answer, kind="bad_request", message=str(exc), void_reason="backend unavailable"
            )
    return _job(answer, backend)


def _job(answer: Answer, backend: Backend) -> GenerationJob:
    conf = settings.ARENA
    return GenerationJob(
        key=_key(answer),
        backend=backend,
        request=answer_conversation(answer),
        timeout_s=conf["TURN_DEADLINE_S"],
        max_chars=conf["ANSWER_MAX_CHARS"],
        memo=Claimed.of(answer),
    )


def _fail(answer: Answer, *, kind: str, message: str, void_reason: str) -> GenerationJob:
    answer.status = Answer.Status.PARTIAL if answer.text else Answer.Status.ERROR
    answer.error_kind = kind
    answer.error_message = message
    answer.finished_at = timezone.now()
    answer.save()
    battle_void(battle_id=answer.turn.battle_id, reason=void_reason)
    return GenerationJob(_key(answer), None, None, abandoned=answer.status)


@transaction.atomic
def _claim_locked(*, answer_id: int) -> GenerationJob | None:
    """The claim of an answer that is not simply pending in a live battle."""
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
    if answer.status == Answer.Status.RUNNING and answer_streams().alive([_key(answer)]):
        return None
    if answer.status == Answer.Status.RUNNING:
        return _fail(
            answer,
            kind="server",
            message="The worker generating this answer stopped.",
            void_reason="generation interrupted",
        )
    # Pending again since the first statement looked (the sweep handed it on): claimed here.
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
    return _job(answer, backend)


_TERMINAL = sorted(Answer.TERMINAL)
# One statement, so its writes are seen together: the turn's answers locked in order (of the
# two sides' finishes, the second waits for the first to commit, and then reads its answer as
# committed), this answer written unless it has ended already (the sweep failed it, an earlier
# try wrote it), and, if that leaves both complete, the battle waiting for its rater: both
# answers of its last turn complete and nobody has watched them to the end yet, so it is
# offered again instead of staying generating for good (a socket gone mid-stream, a reloaded
# tab that ignored the offer). Watching it to the end (turn_mark_shown) makes it ready; the
# sweep abandons it once its streams are gone.
_FINISH_SQL = """
WITH locked AS (
    SELECT id, status FROM {answer} WHERE turn_id = %(turn_id)s ORDER BY id FOR UPDATE
), written AS (
    UPDATE {answer} SET {columns}
    FROM locked
    WHERE {answer}.id = %(answer_id)s AND locked.id = %(answer_id)s
    AND locked.status <> ALL(%(terminal)s)
    RETURNING {answer}.status
), final AS (
    SELECT COALESCE(
        (SELECT status FROM written), (SELECT status FROM locked WHERE id = %(answer_id)s)
    ) AS status
), waiting AS (
    UPDATE {battle} SET status = %(waiting)s
    WHERE id = %(battle_id)s AND status = %(generating)s
    AND (SELECT status FROM final) = %(ok)s
    AND NOT EXISTS (SELECT 1 FROM locked WHERE id <> %(answer_id)s AND status <> %(ok)s)
    AND NOT EXISTS (
        SELECT 1 FROM {turn}
        WHERE battle_id = %(battle_id)s
        AND (index > %(index)s OR (id = %(turn_id)s AND shown_at IS NOT NULL))
    )
    RETURNING id
)
SELECT status FROM final
""".format(
    columns=", ".join(
        f"{Answer._meta.get_field(name).column} = %({name})s" for name in FINISH_FIELDS
    ),
    **_tables(),
)


def answer_finish(*, answer_id: int, result: StreamResult, memo: Claimed | None = None) -> str:
    """Write the finished stream onto its answer once; the answer's final status. ``memo``:
    what its claim read (read again without it)."""
    if result.status != Answer.Status.OK:
        return _finish_failed(answer_id=answer_id, result=result)
    if memo is None:
        memo = Claimed.of(Answer.objects.select_related("turn", "model").get(pk=answer_id))
    data = _finish_data(model=memo.model, started_at=memo.started_at, result=result)
    if not writes_in_with(connection.alias):
        return _finish_orm(answer_id=answer_id, data=data, memo=memo)
    with connection.cursor() as cursor:
        cursor.execute(
            _FINISH_SQL,
            {
                **data,
                "answer_id": answer_id,
                "battle_id": memo.battle_id,
                "turn_id": memo.turn_id,
                "index": memo.turn_index,
                "terminal": _TERMINAL,
                "ok": Answer.Status.OK,
                "waiting": Battle.Status.WAITING,
                "generating": Battle.Status.GENERATING,
            },
        )
        (status,) = cursor.fetchone()
    return status


@transaction.atomic
def _finish_orm(*, answer_id: int, data: dict, memo: Claimed) -> str:
    """``_FINISH_SQL``'s writes through the ORM, in one transaction, where the database runs no
    data-modifying WITH clause (SQLite, the embedded default: its writes take turns anyway)."""
    statuses = dict(
        Answer.objects.select_for_update()
        .filter(turn_id=memo.turn_id)
        .order_by("id")
        .values_list("id", "status")
    )
    status = statuses[answer_id]
    if status not in Answer.TERMINAL:
        Answer.objects.filter(pk=answer_id).update(**{name: data[name] for name in FINISH_FIELDS})
        status = data["status"]
    ok = Answer.Status.OK
    if status == ok and all(s == ok for pk, s in statuses.items() if pk != answer_id):
        moved_on = Turn.objects.filter(battle_id=memo.battle_id).filter(
            Q(index__gt=memo.turn_index) | Q(pk=memo.turn_id, shown_at__isnull=False)
        )
        if not moved_on.exists():
            Battle.objects.filter(pk=memo.battle_id, status=Battle.Status.GENERATING).update(
                status=Battle.Status.WAITING
            )
    return status


def _finish_data(*, model: ModelEntry, started_at: datetime | None, result: StreamResult) -> dict:
    finished_at = timezone.now()
    cost, cost_status = costs.answer_cost(
        model=model,
        on=timezone.localdate(started_at or finished_at),
        input_tokens=result.input_tokens,
        output_tokens=result.output_tokens,
        tokens_estimated=result.tokens_estimated,
    )
    return {
        **result.as_dict(),
        "request_id": (result.request_id or "")[:200],
        "finished_at": finished_at,
        "cost": cost,
        "cost_status": cost_status,
    }


@transaction.atomic
def _finish_failed(*, answer_id: int, result: StreamResult) -> str:
    """Write a failed stream onto its answer once and void its battle; the final status."""
    # Only the answer's row: locking its model's too (what select_related would lock) would
    # queue every finish of that model behind one another.
    answer = (
        Answer.objects.select_for_update(of=("self",))
        .select_related("turn", "model")
        .get(pk=answer_id)
    )
    if answer.is_terminal:
        return answer.status
    data = _finish_data(model=answer.model, started_at=answer.started_at, result=result)
    model_update(instance=answer, fields=FINISH_FIELDS, data=data)
    battle_void(battle_id=answer.turn.battle_id, reason=f"answer failed: {result.error_kind}")
    return answer.status
