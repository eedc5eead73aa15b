"""A battle's answers: what each model is asked, the claim before its stream and the one
write after it (the generation engine runs the stream between them), and sending a turn's
answers to the workers."""

from __future__ import annotations

from dataclasses import fields

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from arena.backends.base import ChatRequest, Image, Message
from arena.backends.registry import UnknownBackend, backend_for
from arena.battles.ending import battle_void
from arena.battles.gold import replay_backend
from arena.battles.models import Answer, Battle, Turn
from arena.catalog import costs
from arena.core.jobs import job_send
from arena.core.models import model_update
from arena.generation import worker
from arena.generation.runner import StreamResult
from arena.generation.streams import answer_streams, stream_key
from arena.generation.worker import GenerationJob
from arena.images.selectors import image_bytes

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
    images = tuple(
        Image(i["type"], image_bytes(sha256=i["sha256"], content_type=i["type"]), i["sha256"])
        for i in battle.images
    )
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


def _fail(answer: Answer, *, kind: str, message: str, void_reason: str) -> GenerationJob:
    answer.status = Answer.Status.PARTIAL if answer.text else Answer.Status.ERROR
    answer.error_kind = kind
    answer.error_message = message
    answer.finished_at = timezone.now()
    answer.save()
    battle_void(battle_id=answer.turn.battle_id, reason=void_reason)
    return GenerationJob(_key(answer), None, None, abandoned=answer.status)


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
    if answer.status == Answer.Status.RUNNING and answer_streams().alive([_key(answer)]):
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
    conf = settings.ARENA
    return GenerationJob(
        key=_key(answer),
        backend=backend,
        request=answer_conversation(answer),
        timeout_s=conf["TURN_DEADLINE_S"],
        max_chars=conf["ANSWER_MAX_CHARS"],
    )


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
