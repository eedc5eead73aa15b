"""Running an evaluation run, resumably: every answer and verdict is a row claimed once, so a
run killed and started again continues where it was and makes nothing twice; it stops at its
budget. One piece of work a pool queue: the answers of the models served on that queue (a
model's backend settings' "queue", as battles route them), and, on the judge's queue, the
verdicts, as the answers they need arrive. In one place (``ALL``: the CLI, in-process mode),
the whole run. Each piece beats on its ``EvalWork`` row; the sweep resends one gone quiet."""

from __future__ import annotations

import asyncio
from decimal import Decimal

from channels.db import database_sync_to_async
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Sum
from django.utils import timezone

from arena.backends.base import ChatRequest, Message
from arena.backends.registry import backend_for
from arena.catalog import costs
from arena.catalog.models import ModelEntry
from arena.core.models import model_update
from arena.evals import pairwise
from arena.evals.models import EvalAnswer, EvalPrompt, EvalRun, EvalVerdict, EvalWork
from arena.generation.runner import stream_answer

CONCURRENCY = 16
HEARTBEAT_S = 2.0
ALL = "*"  # the whole run in one place
WAIT_FOR_ANSWERS_S = 1.0  # the judge's piece looks again this often for answers made elsewhere


def queue_of(model: ModelEntry) -> str:
    return model.pool_queue or settings.GENERATION_QUEUE


def _mine(run: EvalRun, queue: str) -> tuple[list[ModelEntry], bool]:
    """The models whose answers this piece makes, and whether it judges."""
    everyone = [run.baseline, *run.contestants.all()]
    if queue == ALL:
        return everyone, True
    return [m for m in everyone if queue_of(m) == queue], queue_of(run.judge) == queue


def _reopen(run_id: int, queue: str) -> tuple[EvalRun, list[ModelEntry], bool]:
    """Start or resume this piece: rows a killed worker left half done go back to be done."""
    with transaction.atomic():
        run = (
            EvalRun.objects.select_for_update(of=("self",))
            .select_related("baseline", "judge")
            .get(pk=run_id)
        )
        models, judges = _mine(run, queue)
        half_done = EvalAnswer.objects.filter(prompt__run=run, status=EvalAnswer.Status.RUNNING)
        half_done.filter(model__in=models).delete()
        if judges:
            EvalVerdict.objects.filter(prompt__run=run, done=False).delete()
        if run.status in (EvalRun.Status.QUEUED, EvalRun.Status.FAILED):
            run.status = EvalRun.Status.RUNNING
        now = timezone.now()
        run.started_at = run.started_at or now
        run.save(update_fields=["status", "started_at"])
        EvalWork.objects.update_or_create(
            run=run, queue=queue, defaults={"heartbeat_at": now, "finished_at": None}
        )
    return run, models, judges


async def _beat(run_id: int, queue: str) -> None:
    while True:
        await asyncio.sleep(HEARTBEAT_S)
        await database_sync_to_async(EvalWork.objects.filter(run_id=run_id, queue=queue).update)(
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


class Piece:
    """One piece of a run on one worker: its budget kept as running totals (seeded from what
    the run had spent), so the budget costs no query per unit."""

    def __init__(self, run: EvalRun, queue: str, models: list[ModelEntry], on_progress) -> None:
        self.run, self.queue, self.models, self.on_progress = run, queue, models, on_progress
        self.gate = asyncio.Semaphore(CONCURRENCY)
        self.stop = ""
        self.cost, self.calls, self.judging_now = Decimal("0"), 0, 0

    async def limited(self, work, *, judge_call: bool = False) -> None:
        try:
            async with self.gate:
                if self.stop:
                    return
                planned = self.calls + self.judging_now + judge_call
                if reason := _over_budget(self.run, self.cost, planned):
                    self.stop = reason
                    return
                self.judging_now += judge_call  # on its way: counted until its calls are
                try:
                    unit_cost, unit_calls = await work
                finally:
                    self.judging_now -= judge_call
                self.cost += unit_cost
                self.calls += unit_calls
                if self.on_progress is not None:
                    await self.on_progress(self.run)
        finally:
            work.close()  # one never started (stopped, or the run cancelled) is dropped quietly

    async def answer(self, prompts: list[EvalPrompt], made: set[tuple[int, int]]) -> None:
        """This piece's answers: claimed CONCURRENCY at a time in one statement, a batch
        ahead of the work, and made by CONCURRENCY workers as they are claimed."""
        units = [(p, m) for p in prompts for m in self.models if (p.pk, m.pk) not in made]
        claimed: asyncio.Queue[EvalAnswer | None] = asyncio.Queue(CONCURRENCY)
        claimed_ids: list[int] = []

        async def claiming() -> None:
            for i in range(0, len(units), CONCURRENCY):
                if self.stop:
                    break
                batch = units[i : i + CONCURRENCY]
                for answer in await database_sync_to_async(_claim_answer)(batch):
                    claimed_ids.append(answer.pk)
                    await claimed.put(answer)
            for _ in range(CONCURRENCY):
                await claimed.put(None)  # no more: each worker ends

        async def answering() -> None:
            while (answer := await claimed.get()) is not None:
                await self.limited(_generate(self.run, answer))

        workers = [claiming(), *(answering() for _ in range(CONCURRENCY))]
        tasks = [asyncio.ensure_future(worker) for worker in workers]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()  # none left behind when one fails or the run is cancelled
        if self.stop:  # claimed, never started: given back
            unstarted = EvalAnswer.objects.filter(
                pk__in=claimed_ids, status=EvalAnswer.Status.RUNNING
            )
            await database_sync_to_async(unstarted.delete)()

    async def judge(self, prompts, contestants, terms, same_family) -> bool:
        """Every verdict whose two answers are made and not judged yet; whether every answer
        of the run had ended when it looked (so nothing more can come)."""
        run = self.run
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
                        continue  # judged already (a resumed run, or an earlier look)
                    work = _judge(run, prompt, model, model_first, (mine.text, base.text), terms)
                    judging.append(self.limited(work, judge_call=True))
        await asyncio.gather(*judging)
        ended = [a for a in answers.values() if a.status != EvalAnswer.Status.RUNNING]
        return len(ended) == len(prompts) * (len(contestants) + 1)

    async def execute(self, judges: bool) -> EvalRun:
        run = self.run
        prompts, contestants, terms, same_family, made = await database_sync_to_async(_plan)(run)
        self.cost, self.calls = await database_sync_to_async(spent)(run_id=run.pk)
        await self.answer(prompts, made)
        if not judges:
            if self.stop:
                await database_sync_to_async(EvalRun.objects.filter(pk=run.pk).update)(
                    note=self.stop
                )
            return run
        while True:
            # Read before the answers: if the other pools' pieces had ended by then, what is
            # read is all there will be.
            others = await database_sync_to_async(_others_working)(run, self.queue)
            if await self.judge(prompts, contestants, terms, same_family) or self.stop:
                break
            if not others:  # they ended (stopped at the budget) with answers still unmade
                self.stop = await database_sync_to_async(_note)(run) or "Stopped early."
                break
            await asyncio.sleep(WAIT_FOR_ANSWERS_S)
            cost, _ = await database_sync_to_async(spent)(run_id=run.pk)
            self.cost = max(self.cost, cost)  # what the other pieces spent counts too
        status = EvalRun.Status.BUDGET if self.stop else EvalRun.Status.DONE
        await database_sync_to_async(EvalRun.objects.filter(pk=run.pk).update)(
            status=status, note=self.stop, finished_at=timezone.now()
        )
        return await database_sync_to_async(EvalRun.objects.get)(pk=run.pk)


def _others_working(run: EvalRun, queue: str) -> bool:
    return EvalWork.objects.filter(run=run, finished_at=None).exclude(queue=queue).exists()


def _note(run: EvalRun) -> str:
    return EvalRun.objects.values_list("note", flat=True).get(pk=run.pk)


async def eval_execute(run_id: int, *, queue: str = ALL, on_progress=None) -> EvalRun:
    """This piece of the run (``ALL``: all of it): every missing answer of its models, and
    on the judge's queue every verdict, CONCURRENCY at a time, until done or the budget is
    reached; safe to run again after a crash."""
    run, models, judges = await database_sync_to_async(_reopen)(run_id, queue)
    if run.status != EvalRun.Status.RUNNING:
        return run  # ended already (a task delivered twice)
    beating = asyncio.ensure_future(_beat(run.pk, queue))
    try:
        run = await Piece(run, queue, models, on_progress).execute(judges)
    finally:
        beating.cancel()
    await database_sync_to_async(EvalWork.objects.filter(run=run, queue=queue).update)(
        finished_at=timezone.now()
    )
    return run
