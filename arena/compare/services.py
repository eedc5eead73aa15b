"""Writes of compare mode: a run checked and created, its streams run at once, its answers
saved, and the blind judge's verdict. Generation goes through the same backends and pools as
battles; the judge's rules are in ``judge`` (pure)."""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass
from datetime import timedelta

from channels.db import database_sync_to_async
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.models import User
from arena.backends.base import ChatRequest, Message
from arena.backends.registry import UnknownBackend, backend_for
from arena.battles.prompts import prompt_clean_text
from arena.catalog import costs
from arena.catalog.models import ModelEntry
from arena.catalog.selectors import model_by_name
from arena.catalog.services import PARAM_NAMES, images_check, params_check, params_valid
from arena.compare import spend
from arena.compare.access import (
    FORBIDDEN,
    ID_MAX,
    compare_allowed,
    is_id,
    judges_allowed,
    previous_own,
)
from arena.compare.judging import judge_run
from arena.compare.models import CompareAnswer, CompareRun, Rubric
from arena.compare.spend import RunPlan, spend_check
from arena.core.errors import ServiceError
from arena.core.jobs import job_send
from arena.core.models import model_update
from arena.generation.runner import stream_answer
from arena.generation.streams import answer_streams
from arena.images.selectors import image_records, images_for_turn, images_sent
from arena.judges.rubric import (
    DEFAULT_RUBRIC,
    RubricError,
    labels_for,
    rubric_as_data,
    rubric_from,
)

PARAMS = PARAM_NAMES
MIN_MODELS, MAX_MODELS = 2, 8


def _params(raw: dict) -> dict:
    """The shared parameters that are set, checked (``params_valid``); empty ones are left
    out (not sent). max_tokens' real ceiling is each model's own limit (spend.token_limit)."""
    return params_valid(params=raw or {})


@transaction.atomic
def compare_start(
    *,
    user: User,
    prompt: object,
    model_ids: list[int],
    system_prompt: str = "",
    params: dict | None = None,
    judge_id: int | None = None,
    seed: int | None = None,
    rubric: object = None,
    previous_id: object = None,
    images: object = None,
) -> CompareRun:
    """A run checked and saved, queued; the caller runs it (``compare_execute``), through a
    task (the page) or in its own process (the command). Refused past the user's spend
    limits (``spend``)."""
    if not compare_allowed(user=user):
        raise ServiceError("forbidden", FORBIDDEN)
    # The user's row lock: their runs start one at a time, so the runs-at-once cap and the
    # daily budget are counted against what the last one left.
    User.objects.select_for_update().filter(pk=user.pk).first()
    text = prompt_clean_text(prompt)
    system_prompt = str(system_prompt or "").strip()
    if len(system_prompt) > settings.ARENA["PROMPT_MAX_CHARS"]:
        raise ServiceError(
            "prompt_too_long",
            f"The system prompt is {len(system_prompt):,} characters; the limit is "
            f"{settings.ARENA['PROMPT_MAX_CHARS']:,}.",
        )
    if seed is not None and not (isinstance(seed, int) and -ID_MAX <= seed <= ID_MAX):
        raise ServiceError("bad_seed", "The seed must be a whole number of at most 18 digits.")
    previous = previous_own(previous_id=previous_id, user=user)
    if len(set(model_ids)) != len(model_ids):
        raise ServiceError("duplicate_model", "Each model may fill one slot only.")
    if not MIN_MODELS <= len(model_ids) <= MAX_MODELS:
        raise ServiceError(
            "model_count", f"Pick {MIN_MODELS} to {MAX_MODELS} models; {len(model_ids)} given."
        )
    models = ModelEntry.objects.in_bulk([pk for pk in model_ids if is_id(pk)])
    missing = [pk for pk in model_ids if pk not in models or not models[pk].active]
    if missing:
        raise ServiceError("unknown_model", f"No active model with id {missing[0]}.")
    chosen = [models[pk] for pk in model_ids]
    params = _params(params or {})
    params_check(models=chosen, params=params)
    if rubric is None:
        saved = Rubric.objects.filter(is_default=True).first()
        rubric = saved.criteria if saved else rubric_as_data(DEFAULT_RUBRIC)
    try:
        criteria = rubric_from(rubric)
    except RubricError as exc:
        raise ServiceError("bad_rubric", str(exc)) from None
    judge_model = None
    if judge_id is not None:
        judge_model = judges_allowed().filter(pk=judge_id).first() if is_id(judge_id) else None
        if judge_model is None:
            raise ServiceError(
                "unknown_judge",
                f"Model {judge_id} may not judge: pick an active model or a configured judge.",
            )
    attached = images_for_turn(user=user, hashes=images)
    if attached:
        images_check(models=chosen, judge=judge_model)
    plan = RunPlan(
        prompt=text,
        system_prompt=system_prompt,
        max_tokens=params.get("max_tokens"),
        models=tuple(chosen),
        judge_model=judge_model,
        criteria=len(criteria) if judge_model else 0,
    )
    spend_check(user=user, plan=plan)
    seed = seed if seed is not None else random.SystemRandom().randrange(2**31)
    run = CompareRun.objects.create(
        user=user,
        prompt=text,
        system_prompt=system_prompt,
        params=params,
        seed=seed,
        deadline_s=settings.COMPARE["RUN_DEADLINE_S"],
        judge=judge_model,
        rubric=rubric_as_data(criteria),
        previous_id=previous,
        images=image_records(attached),
    )
    labels = labels_for(len(chosen), seed=seed)
    CompareAnswer.objects.bulk_create(
        CompareAnswer(run=run, slot=i, label=labels[i], model=model)
        for i, model in enumerate(chosen)
    )
    return run


COMPARE_TASK = "arena.compare.run"  # the task (arena.compare.tasks) that runs compare_execute


def compare_enqueue(*, run_id: object) -> None:
    """Run it once the transaction that made it commits: one job per pool queue (a model's
    backend settings' "queue"), as battles do, so each GPU pool's own workers stream its
    models; after arena traffic (COMPARE_PRIORITY). In-process mode: the whole run as one job
    in this web process, every stream on one clock, as pool queues mean nothing there."""
    by_queue: dict[str, list[int] | None] = {"": None}
    if settings.GENERATION_MODE == "celery":
        by_queue = {}
        for answer in CompareAnswer.objects.filter(run_id=run_id).select_related("model"):
            by_queue.setdefault(answer.model.pool_queue, []).append(answer.slot)
    for queue, slots in by_queue.items():
        job_send(
            task=COMPARE_TASK, args=[str(run_id), slots], queue=queue,
            priority=settings.COMPARE["PRIORITY"],
        )  # fmt: skip


def compare_cancel(*, run_id: object, user: User) -> bool:
    """Stop a run of the user's: its streams are cancelled (the worker looks every half
    second), what had arrived is kept. False when it had already ended."""
    stopped = CompareRun.objects.filter(
        pk=run_id,
        user=user,
        status__in=[CompareRun.Status.QUEUED, CompareRun.Status.RUNNING],
    ).update(status=CompareRun.Status.CANCELLED, finished_at=timezone.now())
    return bool(stopped)


# How long past its deadline a run may still be running before the sweep calls it failed.
STALE_GRACE_S = 60


def compare_runs_fail_stale(*, now=None) -> int:
    """Runs still queued, running or judging well past their deadline (their worker died):
    failed, with what had arrived. The number failed."""
    now = now or timezone.now()
    stale = CompareRun.objects.filter(
        status__in=[CompareRun.Status.QUEUED, CompareRun.Status.RUNNING, CompareRun.Status.JUDGING]
    )
    failed = 0
    for run in stale:
        limit = timedelta(seconds=run.deadline_s + STALE_GRACE_S + _judging_allowance(run))
        if now - run.created_at < limit:
            continue
        with transaction.atomic():
            _answers_stop(run.pk, "server", "The run stopped before this answer ended.")
            model_update(
                instance=run,
                fields=["status", "error", "finished_at"],
                data={
                    "status": CompareRun.Status.FAILED,
                    "error": "The process running this compare run stopped.",
                    "finished_at": now,
                },
            )
        failed += 1
    return failed


def _judging_allowance(run: CompareRun) -> float:
    """Judge calls come after the deadline: one per criterion, retries, a head-to-head."""
    return 0.0 if run.judge_id is None else 10 * 60.0


def default_judge() -> ModelEntry | None:
    name = settings.COMPARE["JUDGE_MODEL"]
    return model_by_name(name)


def stream_key(*, run_id: object, slot: int) -> str:
    return f"arena:compare:{run_id}:{slot}"


# Running a run --------------------------------------------------------------------------------


@dataclass
class _Slot:
    answer: CompareAnswer
    backend: object | None
    timeout_s: float
    params: dict


def _load(run_id: object, slots: list[int] | None) -> tuple[CompareRun, list[_Slot]]:
    """The run, and those of ``slots`` (all when None) still pending, claimed (running), so a
    task delivered twice streams nothing twice."""
    with transaction.atomic():
        run = (
            CompareRun.objects.select_for_update(of=("self",))
            .select_related("judge")
            .get(pk=run_id)
        )
        if run.status not in (CompareRun.Status.QUEUED, CompareRun.Status.RUNNING):
            return run, []
        mine = run.answers.select_related("model").filter(status=CompareAnswer.Status.PENDING)
        if slots is not None:
            mine = mine.filter(slot__in=slots)
        mine = list(mine)
        CompareAnswer.objects.filter(pk__in=[a.pk for a in mine]).update(
            status=CompareAnswer.Status.RUNNING
        )
        if run.status == CompareRun.Status.QUEUED:
            run.status = CompareRun.Status.RUNNING
            run.save(update_fields=["status"])
    claimed = []
    for answer in mine:
        model = answer.model
        try:
            backend = backend_for(model.backend, model.backend_settings)
        except UnknownBackend:
            backend = None
        own = float(model.backend_settings.get("timeout_s") or run.deadline_s)
        claimed.append(_Slot(answer, backend, own, spend.request_params(model, run.params)))
    return run, claimed


def _streams_all_ended(run_id: object) -> bool:
    """Once every answer has ended, exactly one caller is told so (and judges): the run moves
    on from running, under its row lock."""
    with transaction.atomic():
        run = CompareRun.objects.select_for_update().get(pk=run_id)
        if run.status != CompareRun.Status.RUNNING:
            return False
        if run.answers.filter(
            status__in=[CompareAnswer.Status.PENDING, CompareAnswer.Status.RUNNING]
        ).exists():
            return False
        run.status = CompareRun.Status.JUDGING if run.judge_id else CompareRun.Status.DONE
        run.save(update_fields=["status"])
        return True


def _request(run: CompareRun, model: ModelEntry, prompt: str, system: str, params: dict):
    user = Message("user", prompt, images_sent(run.images))
    messages = ((Message("system", system),) if system else ()) + (user,)
    return ChatRequest(model_id=model.model_id, messages=messages, params=params)


def _save(answer: CompareAnswer, result) -> None:
    cost, cost_status = costs.cost_now(model=answer.model, result=result)
    fields = ["status", "text", "finish_reason", "ttft_ms", "total_ms", "input_tokens"]
    fields += ["output_tokens", "tokens_estimated", "cost", "cost_status", "error_kind"]
    fields += ["error_message"]
    data = {**result.as_dict(), "cost": cost, "cost_status": cost_status}
    model_update(instance=answer, fields=fields, data=data)


async def _stream_one(run: CompareRun, slot: _Slot, began: float) -> None:
    answer = slot.answer
    if slot.backend is None:
        answer.status, answer.error_kind = CompareAnswer.Status.ERROR, "bad_request"
        answer.error_message = f"No backend of kind {answer.model.backend!r} is installed."
        await database_sync_to_async(answer.save)()
        return
    left = run.deadline_s - (time.monotonic() - began)
    key = stream_key(run_id=run.pk, slot=answer.slot)
    streams = answer_streams()
    result = await stream_answer(
        slot.backend,
        _request(run, answer.model, run.prompt, run.system_prompt, slot.params),
        on_delta=lambda text: streams.append(key, text),
        max_chars=settings.ARENA["ANSWER_MAX_CHARS"],
        timeout_s=max(0.1, min(slot.timeout_s, left)),
        # The time to first token as it will be kept, saved at once: the run page's events
        # send it ("first") while the answer still streams.
        on_first=database_sync_to_async(
            lambda ms: CompareAnswer.objects.filter(pk=answer.pk).update(ttft_ms=ms)
        ),
    )
    await database_sync_to_async(_save)(answer, result)
    try:
        await streams.finish(key, answer.status)
    except Exception:  # the page reads the saved answer in the end
        pass


async def compare_execute(run_id: object, slots: list[int] | None = None) -> CompareRun:
    """Stream ``slots`` (every slot when None) at once, each answer saved as it ends; the
    task that ends the last of the run's streams runs the judge and saves the verdict. Safe to
    call twice: what has been claimed is left alone."""
    run, claimed = await database_sync_to_async(_load)(run_id, slots)
    began = time.monotonic()
    streams = [asyncio.ensure_future(_stream_one(run, slot, began)) for slot in claimed]
    watcher = asyncio.ensure_future(_cancel_when_asked(run.pk, streams))
    await asyncio.gather(*streams, return_exceptions=True)
    watcher.cancel()
    if await database_sync_to_async(_cancelled)(run.pk):
        return await database_sync_to_async(CompareRun.objects.get)(pk=run.pk)
    if await database_sync_to_async(_streams_all_ended)(run.pk):
        verdict = {}
        if run.judge_id is not None:
            answers = await database_sync_to_async(
                lambda: list(CompareAnswer.objects.filter(run_id=run.pk).select_related("model"))
            )()
            verdict = await judge_run(run, answers)
        await database_sync_to_async(CompareRun.objects.filter(pk=run.pk).update)(
            status=CompareRun.Status.DONE, verdict=verdict, finished_at=timezone.now()
        )
    return await database_sync_to_async(CompareRun.objects.get)(pk=run.pk)


async def _cancel_when_asked(run_id: object, streams: list[asyncio.Future]) -> None:
    while True:
        await asyncio.sleep(0.5)
        status = await database_sync_to_async(
            lambda: CompareRun.objects.filter(pk=run_id).values_list("status", flat=True).first()
        )()
        if status == CompareRun.Status.CANCELLED:
            for stream in streams:
                stream.cancel()
            return


def _cancelled(run_id: object) -> bool:
    """After the streams: if the run was cancelled, what had not ended is saved as stopped."""
    if not CompareRun.objects.filter(pk=run_id, status=CompareRun.Status.CANCELLED).exists():
        return False
    _answers_stop(run_id, "cancelled", "The run was cancelled.")
    return True


def _answers_stop(run_id: object, kind: str, message: str) -> None:
    """Answers of the run that had not ended: ended now, with the text that had arrived."""
    unfinished = CompareAnswer.objects.filter(
        run_id=run_id, status__in=[CompareAnswer.Status.PENDING, CompareAnswer.Status.RUNNING]
    )
    for answer in unfinished:
        text = answer_streams().text(stream_key(run_id=run_id, slot=answer.slot))
        status = CompareAnswer.Status.PARTIAL if text else CompareAnswer.Status.ERROR
        model_update(
            instance=answer,
            fields=["status", "text", "error_kind", "error_message"],
            data={"status": status, "text": text, "error_kind": kind, "error_message": message},
        )
