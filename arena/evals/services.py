"""Evaluation runs: created from a prompt set, run resumably (every answer and verdict is a
row claimed once, so a run killed and started again continues where it was and makes nothing
twice), stopped at its budget. Answers go through the same backends and pools as battles; the
judge sees what compare mode's judge sees (masked names, no answer of its own family)."""

from __future__ import annotations

import asyncio
import json
import random
from datetime import timedelta
from decimal import Decimal

from asgiref.sync import async_to_sync
from celery import current_app
from channels.db import database_sync_to_async
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Sum
from django.utils import timezone

from accounts.models import User
from arena.backends.base import ChatRequest, Message
from arena.backends.registry import backend_for
from arena.battles.models import Prompt
from arena.catalog import costs
from arena.catalog.models import ModelEntry
from arena.core.errors import ServiceError
from arena.core.models import model_update
from arena.evals import pairwise
from arena.evals.models import EvalAnswer, EvalPrompt, EvalRun, EvalVerdict
from arena.generation.runner import stream_answer

CONCURRENCY = 16
EVAL_TASK = "arena.evals.run"  # arena.evals.tasks, sent by name
HEARTBEAT_S = 2.0


def eval_enqueue(*, run_id: int) -> None:
    """Run it on a worker, at the lowest priority (EVALS_PRIORITY): after arena traffic and
    compare runs. In-process mode (no Redis), here and now."""
    if settings.GENERATION_MODE != "celery":
        async_to_sync(eval_execute)(run_id)
        return
    current_app.send_task(
        EVAL_TASK,
        args=[run_id],
        queue=settings.GENERATION_QUEUE,
        priority=settings.EVALS_PRIORITY,
    )


def evals_resume_stale(*, now=None) -> list[int]:
    """Runs still running whose worker went quiet (killed): sent again, to carry on where they
    were. The runs sent."""
    now = now or timezone.now()
    quiet = timedelta(seconds=settings.EVALS_STALE_S)
    stale = EvalRun.objects.filter(status=EvalRun.Status.RUNNING, heartbeat_at__lt=now - quiet)
    ids = list(stale.values_list("pk", flat=True))
    # Marked as beating now, so the next sweep gives the new worker time to start.
    EvalRun.objects.filter(pk__in=ids).update(heartbeat_at=now)
    for run_id in ids:
        eval_enqueue(run_id=run_id)
    return ids


def prompts_select(*, category: str = "", language: str = "", limit: int = 0) -> list[Prompt]:
    """Curated, active prompts chosen by category and language (empty: any), oldest first."""
    chosen = Prompt.objects.filter(active=True, source=Prompt.Source.CURATED)
    if category:
        chosen = chosen.filter(category=category)
    if language:
        chosen = chosen.filter(language=language)
    chosen = chosen.order_by("pk")
    return list(chosen[:limit] if limit else chosen)


def prompts_from_jsonl(data: bytes) -> list[tuple[str, str]]:
    """(text, category) pairs from JSONL, one {"text": ..., "category": ...} a line; every bad
    line is named, and nothing is taken unless all are good."""
    rows, problems = [], []
    try:
        lines = data.decode("utf-8-sig").splitlines()
    except UnicodeDecodeError:
        raise ServiceError("bad_prompts", "The prompt file is not UTF-8 text.") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            problems.append(f"line {number}: not JSON ({exc.msg})")
            continue
        text = row.get("text") if isinstance(row, dict) else None
        if not isinstance(text, str) or not text.strip():
            problems.append(f'line {number}: needs a "text" string')
            continue
        category = row.get("category") or ""
        if not isinstance(category, str) or len(category) > 64:
            problems.append(f"line {number}: category must be a string of at most 64 characters")
            continue
        rows.append((text, category))
    if problems:
        raise ServiceError("bad_prompts", "; ".join(problems[:10]))
    return rows


def eval_check(
    *,
    prompts: list[tuple[str, str]],
    model_ids: list[int],
    baseline_id: int,
    judge_id: int,
    params: dict,
) -> dict[int, ModelEntry]:
    """Why such a run cannot be made (a ServiceError), or the models it names, by id."""
    if not prompts:
        raise ServiceError("no_prompts", "No prompts match: an evaluation needs at least one.")
    found = ModelEntry.objects.in_bulk([*model_ids, baseline_id, judge_id])
    for pk in [*model_ids, baseline_id, judge_id]:
        if pk not in found:
            raise ServiceError("unknown_model", f"No model with id {pk}.")
    if baseline_id in model_ids:
        raise ServiceError("baseline_in_models", "The baseline is compared with; not a contestant.")
    if not model_ids:
        raise ServiceError("no_models", "Name at least one model to evaluate.")
    for model in (found[pk] for pk in [*model_ids, baseline_id]):
        for param in model.params_unsupported(params):
            raise ServiceError(
                "param_unsupported", f"{model.public_name} does not support {param!r}."
            )
    return found


@transaction.atomic
def eval_create(
    *,
    user: User,
    name: str,
    prompts: list[tuple[str, str]],
    model_ids: list[int],
    baseline_id: int,
    judge_id: int,
    params: dict | None = None,
    budget: Decimal | None = None,
    max_judge_calls: int | None = None,
    seed: int = 0,
    public: bool = False,
) -> EvalRun:
    """A run of ``prompts`` ((text, category) pairs, copied in) for these models against the
    baseline; nothing is generated yet (``eval_execute`` does it)."""
    params = {k: v for k, v in (params or {}).items() if v is not None}
    found = eval_check(
        prompts=prompts, model_ids=model_ids, baseline_id=baseline_id, judge_id=judge_id,
        params=params,
    )  # fmt: skip
    run = EvalRun.objects.create(
        name=name,
        created_by=user,
        baseline=found[baseline_id],
        judge=found[judge_id],
        params=params,
        seed=seed,
        budget=budget,
        max_judge_calls=max_judge_calls,
        public=public,
    )
    run.contestants.set(model_ids)
    EvalPrompt.objects.bulk_create(
        EvalPrompt(run=run, index=i, text=text, category=category)
        for i, (text, category) in enumerate(prompts)
    )
    return run


# Running ----------------------------------------------------------------------------------------


def _reopen(run_id: int) -> EvalRun:
    """Start or resume: rows a killed worker left half done go back to be done again."""
    with transaction.atomic():
        run = (
            EvalRun.objects.select_for_update(of=("self",))
            .select_related("baseline", "judge")
            .get(pk=run_id)
        )
        EvalAnswer.objects.filter(prompt__run=run, status=EvalAnswer.Status.RUNNING).delete()
        EvalVerdict.objects.filter(prompt__run=run, done=False).delete()
        if run.status in (EvalRun.Status.QUEUED, EvalRun.Status.FAILED):
            run.status = EvalRun.Status.RUNNING
        run.heartbeat_at = timezone.now()
        run.started_at = run.started_at or run.heartbeat_at
        run.save(update_fields=["status", "heartbeat_at", "started_at"])
    return run


async def _beat(run_id: int) -> None:
    while True:
        await asyncio.sleep(HEARTBEAT_S)
        await database_sync_to_async(EvalRun.objects.filter(pk=run_id).update)(
            heartbeat_at=timezone.now()
        )


def spent(*, run_id: int) -> tuple[Decimal, int]:
    """Cost of the run's answers so far, and the judge calls made."""
    cost = EvalAnswer.objects.filter(prompt__run_id=run_id).aggregate(c=Sum("cost"))["c"]
    calls = EvalVerdict.objects.filter(prompt__run_id=run_id).aggregate(c=Sum("attempts"))["c"]
    return cost or Decimal("0"), calls or 0


def _over_budget(run: EvalRun, cost: Decimal, calls: int) -> str:
    """Why the run must stop before the next unit of work, or "". ``calls``: judge calls made
    and on their way, the next one included, so no more are started than the limit allows.
    Cost is known only once an answer ends, so a cost budget may be passed by what is in
    flight when it is reached."""
    if run.budget is not None and cost >= run.budget:
        return f"Stopped at its budget: ${cost:.4f} spent of ${run.budget}."
    if run.max_judge_calls is not None and calls > run.max_judge_calls:
        return f"Stopped at its budget: {calls - 1} judge calls of {run.max_judge_calls}."
    return ""


def _claim_answer(units: list[tuple[EvalPrompt, ModelEntry]]) -> list[EvalAnswer]:
    """Claim these answers, all in one statement; those this worker is now to make. One made
    already, or being made (a conflict, rare: ``_plan`` leaves out those made), is left out."""
    try:
        with transaction.atomic():
            return EvalAnswer.objects.bulk_create(EvalAnswer(prompt=p, model=m) for p, m in units)
    except IntegrityError:
        if len(units) == 1:
            return []
        return [answer for unit in units for answer in _claim_answer([unit])]


def _claim_verdict(prompt: EvalPrompt, model: ModelEntry, model_first: bool) -> EvalVerdict | None:
    try:
        with transaction.atomic():
            return EvalVerdict.objects.create(prompt=prompt, model=model, model_first=model_first)
    except IntegrityError:
        return None


async def _generate(run: EvalRun, answer: EvalAnswer) -> tuple[Decimal, int]:
    """Make the answer this worker claimed; what it cost, and judge calls made (none)."""
    prompt, model = answer.prompt, answer.model
    request = ChatRequest(
        model_id=model.model_id, messages=(Message("user", prompt.text),), params=run.params
    )
    result = await stream_answer(
        backend_for(model.backend, model.backend_settings),
        request,
        on_delta=_ignore,
        max_chars=settings.ARENA["ANSWER_MAX_CHARS"],
        timeout_s=float(model.backend_settings.get("timeout_s") or 120),
    )
    await database_sync_to_async(_answer_save)(answer, result)
    return answer.cost or Decimal("0"), 0


def _answer_save(answer: EvalAnswer, result) -> None:
    cost, cost_status = costs.cost_now(model=answer.model, result=result)
    data = {**result.as_dict(), "cost": cost, "cost_status": cost_status}
    fields = ["status", "text", "ttft_ms", "total_ms", "output_tokens", "cost", "cost_status"]
    model_update(instance=answer, fields=[*fields, "error_message"], data=data)


async def _ignore(_text: str) -> None:
    return None


async def _judge(
    run: EvalRun,
    prompt: EvalPrompt,
    model: ModelEntry,
    model_first: bool,
    texts: tuple[str, str],
    terms: tuple[str, ...],
) -> tuple[Decimal, int]:
    """Ask for the verdict if no one has; what it cost (answers only count) and the calls."""
    verdict = await database_sync_to_async(_claim_verdict)(prompt, model, model_first)
    if verdict is None:
        return Decimal("0"), 0
    mine, base = texts
    first, second = (mine, base) if model_first else (base, mine)
    found = await pairwise.judge_pair(
        judge=run.judge, prompt=prompt.text, first=first, second=second, terms=terms
    )
    await database_sync_to_async(model_update)(
        instance=verdict,
        fields=["level", "done", "attempts", "request", "reply", "problem"],
        data={
            "level": found.level or "",
            "done": True,
            "attempts": found.attempts,
            "request": found.request,
            "reply": found.reply,
            "problem": found.problem,
        },  # fmt: skip
    )
    return Decimal("0"), found.attempts


def _plan(
    run: EvalRun,
) -> tuple[list[EvalPrompt], list[ModelEntry], tuple[str, ...], set[int], set[tuple[int, int]]]:
    """The prompts, the contestants, the judge's mask terms, the contestants it may not judge,
    and the answers made already, as (prompt, model) ids."""
    prompts = list(run.prompts.all())
    contestants = list(run.contestants.all())
    same_family = set()
    if not settings.COMPARE["JUDGE_SAME_FAMILY"]:
        same_family = {m.pk for m in contestants if pairwise.judges_own_family(run.judge, m)}
    made = set(EvalAnswer.objects.filter(prompt__run=run).values_list("prompt_id", "model_id"))
    return prompts, contestants, pairwise.mask_terms(), same_family, made


def _answers(run: EvalRun) -> tuple[dict[tuple[int, int], EvalAnswer], set[tuple[int, int, bool]]]:
    """All the run's answers by (prompt, model), in one query; the verdicts made already, as
    (prompt, model, model_first)."""
    answers = EvalAnswer.objects.filter(prompt__run=run).only("prompt", "model", "status", "text")
    verdicts = EvalVerdict.objects.filter(prompt__run=run)
    return (
        {(a.prompt_id, a.model_id): a for a in answers},
        set(verdicts.values_list("prompt_id", "model_id", "model_first")),
    )


async def eval_execute(run_id: int, *, on_progress=None) -> EvalRun:
    """Generate every missing answer and verdict, CONCURRENCY at a time, until all are done
    or the budget is reached; safe to run again after a crash."""
    run = await database_sync_to_async(_reopen)(run_id)
    if run.status != EvalRun.Status.RUNNING:
        return run  # ended already (a task delivered twice)
    beating = asyncio.ensure_future(_beat(run.pk))
    try:
        return await _execute(run, on_progress)
    finally:
        beating.cancel()


async def _execute(run: EvalRun, on_progress) -> EvalRun:
    prompts, contestants, terms, same_family, made = await database_sync_to_async(_plan)(run)
    gate = asyncio.Semaphore(CONCURRENCY)
    stop = ""

    # What the run has spent, kept here as each unit ends (seeded from what a resumed run had
    # spent already), so the budget costs no query per unit.
    cost, calls = await database_sync_to_async(spent)(run_id=run.pk)
    judging_now = 0

    async def limited(work, *, judge_call: bool = False) -> None:
        nonlocal stop, judging_now, cost, calls
        try:
            async with gate:
                if stop:
                    return
                if reason := _over_budget(run, cost, calls + judging_now + judge_call):
                    stop = reason
                    return
                judging_now += judge_call  # on its way: counted until its calls are
                try:
                    unit_cost, unit_calls = await work
                finally:
                    judging_now -= judge_call
                cost += unit_cost
                calls += unit_calls
                if on_progress is not None:
                    await on_progress(run)
        finally:
            work.close()  # one never started (stopped, or the run cancelled) is dropped quietly

    # Answers: claimed CONCURRENCY at a time in one statement, a batch ahead of the work, and
    # made by CONCURRENCY workers as they are claimed.
    everyone = [run.baseline, *contestants]
    units = [(p, m) for p in prompts for m in everyone if (p.pk, m.pk) not in made]
    claimed: asyncio.Queue[EvalAnswer | None] = asyncio.Queue(CONCURRENCY)
    claimed_ids: list[int] = []

    async def claiming() -> None:
        for i in range(0, len(units), CONCURRENCY):
            if stop:
                break
            for answer in await database_sync_to_async(_claim_answer)(units[i : i + CONCURRENCY]):
                claimed_ids.append(answer.pk)
                await claimed.put(answer)
        for _ in range(CONCURRENCY):
            await claimed.put(None)  # no more: each worker ends

    async def answering() -> None:
        while (answer := await claimed.get()) is not None:
            await limited(_generate(run, answer))

    workers = [claiming(), *(answering() for _ in range(CONCURRENCY))]
    tasks = [asyncio.ensure_future(worker) for worker in workers]
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()  # none left behind when one fails or the run is cancelled
    if stop:  # claimed, never started: given back
        unstarted = EvalAnswer.objects.filter(pk__in=claimed_ids, status=EvalAnswer.Status.RUNNING)
        await database_sync_to_async(unstarted.delete)()
    answers, judged = await database_sync_to_async(_answers)(run)
    judging = []
    for prompt in prompts:
        base = answers.get((prompt.pk, run.baseline_id))
        for model in contestants:
            mine = answers.get((prompt.pk, model.pk))
            if model.pk in same_family or base is None or mine is None:
                continue
            if base.status != EvalAnswer.Status.OK or mine.status != EvalAnswer.Status.OK:
                continue  # a failed or partial answer is not judged
            for model_first in (True, False):
                if (prompt.pk, model.pk, model_first) in judged:
                    continue  # judged already (a resumed run)
                work = _judge(run, prompt, model, model_first, (mine.text, base.text), terms)
                judging.append(limited(work, judge_call=True))
    await asyncio.gather(*judging)
    status = EvalRun.Status.BUDGET if stop else EvalRun.Status.DONE
    await database_sync_to_async(EvalRun.objects.filter(pk=run.pk).update)(
        status=status, note=stop, finished_at=timezone.now()
    )
    return await database_sync_to_async(EvalRun.objects.get)(pk=run.pk)


def seed_from(value: int | None) -> int:
    return value if value is not None else random.SystemRandom().randrange(2**31)
