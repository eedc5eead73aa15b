"""Running an evaluation run, resumably: every answer and verdict is a row claimed once, so a
run killed and started again continues where it was and makes nothing twice; it stops at its
budget (answers' and judge calls' cost, judge calls), each unit holding its worst case in the
database before it starts, against the whole run's limits (``arena.evals.budget``). One piece
of work a pool queue (``arena.evals.works``): the answers of the models served on that queue,
as battles route them, and, on the judge's queue, the verdicts, as the answers they need
arrive."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from decimal import Decimal
from functools import partial

from channels.db import database_sync_to_async
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from arena.backends.base import ChatRequest, Image, Message
from arena.backends.registry import backend_for
from arena.catalog import costs
from arena.catalog.models import ModelEntry
from arena.core.models import model_update
from arena.evals import budget, works
from arena.evals.models import EvalAnswer, EvalPrompt, EvalRun, EvalVerdict
from arena.generation.runner import discard, stream_answer
from arena.images.selectors import images_sent
from arena.judges import pairwise, rules
from arena.judges.base import Judgement
from arena.judges.registry import judge_answers

EVAL_TASK = "arena.evals.run"  # the task (arena.evals.tasks) that runs eval_execute
CONCURRENCY = 16
HEARTBEAT_S = 2.0
WAIT_FOR_ANSWERS_S = 1.0  # the judge's piece looks again this often for answers made elsewhere
ALL = works.ALL


spent = budget.spent  # what the run's answers and judge calls cost so far, and the calls


def _budget_note(run: EvalRun, kind: str, cost: Decimal, calls: int) -> str:
    """What the run says when it stopped, with what it had spent by the end."""
    if kind == "cost":
        return f"Stopped at its budget: ${cost:.4f} spent of ${run.budget}."
    return f"Stopped at its budget: {calls} judge calls of {run.max_judge_calls}."


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


async def _generate(
    answer: EvalAnswer, params: dict, images: tuple[Image, ...], _allowed: int
) -> Callable[[], None]:
    """Make the answer this worker claimed (``images``: the run's, sent with its prompt); what
    writes it (with its cost) as its hold goes."""
    prompt, model = answer.prompt, answer.model
    request = ChatRequest(
        model_id=model.model_id, messages=(Message("user", prompt.text, images),), params=params
    )
    result = await stream_answer(
        backend_for(model.backend, model.backend_settings),
        request,
        on_delta=discard,
        max_chars=settings.ARENA["ANSWER_MAX_CHARS"],
        timeout_s=model.timeout_s,
    )
    return partial(_answer_save, answer, result)


def _answer_save(answer: EvalAnswer, result) -> None:
    cost, cost_status = costs.cost_now(model=answer.model, result=result)
    data = {**result.as_dict(), "cost": cost, "cost_status": cost_status}
    fields = ["status", "text", "ttft_ms", "total_ms", "output_tokens", "cost", "cost_status"]
    model_update(instance=answer, fields=[*fields, "error_message"], data=data)


async def _judge(
    run: EvalRun,
    prompt: EvalPrompt,
    model: ModelEntry,
    model_first: bool,
    texts: tuple[str, str],
    terms: tuple[str, ...],
    images: tuple[Image, ...],
    allowed: int,
) -> Callable[[], object] | None:
    """Ask for the verdict if no one has, in at most ``allowed`` calls; what writes it (with
    its calls and their cost) as its hold goes."""
    verdict = await database_sync_to_async(_claim_verdict)(prompt, model, model_first)
    if verdict is None:
        return None
    try:
        found = await judge_answers(
            "pairwise", judge=run.judge, prompt=prompt.text, answers=_ordered(texts, model_first),
            terms=terms, on_call=budget.calls_counter(allowed), images=images,
        )  # fmt: skip
    except budget.CallsSpent as spent_all:  # the run's last calls, and no reply read
        found = Judgement(None, tuple(spent_all.calls), False)
    return partial(
        model_update,
        instance=verdict, fields=pairwise.VERDICT_FIELDS, data=pairwise.verdict_data(found),
    )  # fmt: skip


def _ordered(texts: tuple[str, str], model_first: bool) -> dict[str, str]:
    mine, base = texts
    first, second = (mine, base) if model_first else (base, mine)
    return {"A": first, "B": second}


def _plan(run: EvalRun) -> tuple[list[EvalPrompt], list[ModelEntry], set[tuple[int, int]]]:
    """The prompts, the contestants, and the answers made already, as (prompt, model) ids."""
    prompts = list(run.prompts.all())
    contestants = list(run.contestants.all())
    made = set(EvalAnswer.objects.filter(prompt__run=run).values_list("prompt_id", "model_id"))
    return prompts, contestants, made


def _answers(run: EvalRun) -> tuple[dict[tuple[int, int], EvalAnswer], set[tuple[int, int, bool]]]:
    """All the run's answers by (prompt, model), in one query; the verdicts made already, as
    (prompt, model, model_first)."""
    answers = EvalAnswer.objects.filter(prompt__run=run).only("prompt", "model", "status", "text")
    verdicts = EvalVerdict.objects.filter(prompt__run=run)
    return (
        {(a.prompt_id, a.model_id): a for a in answers},
        set(verdicts.values_list("prompt_id", "model_id", "model_first")),
    )


def _status(run_id: int) -> str:
    return EvalRun.objects.values_list("status", flat=True).get(pk=run_id)


class Piece:
    """One piece of a run on one worker (``token``: its lease), its units held against the
    whole run's limits with every other piece's (``budget.Budget``)."""

    def __init__(
        self, run: EvalRun, queue: str, models: list[ModelEntry], on_progress, token: str = ""
    ) -> None:
        self.run, self.queue, self.models, self.on_progress = run, queue, models, on_progress
        self.gate = asyncio.Semaphore(CONCURRENCY)
        self.stop = ""
        self.budget = budget.Budget(run_id=run.pk, owner=token or uuid.uuid4().hex, queue=queue)
        self.rates: dict[int, tuple[Decimal, Decimal]] = {}
        self.params: dict[int, dict] = {}
        self.images: tuple[Image, ...] = ()  # the run's, read once for every answer and verdict

    @property
    def cost(self) -> Decimal:
        return self.budget.cost

    @property
    def calls(self) -> int:
        return self.budget.calls

    async def _refresh(self) -> bool:
        """Whether the run is still running (not ended elsewhere, at its budget)."""
        status = await database_sync_to_async(_status)(self.run.pk)
        return status == EvalRun.Status.RUNNING

    async def limited(self, make, *, worst_each: Decimal, judge_call: bool = False) -> None:
        """Run ``make(allowed)`` (the unit's work, allowed that many judge calls) once the
        budget holds its worst case; not at all once the run has reached a limit."""
        async with self.gate:
            if self.stop:
                return
            took = await self.budget.take(worst_each=worst_each, judge=judge_call)
            if took is None:
                self.stop = self.stop or self.budget.stop
                return
            record = None
            try:
                record = await make(took.allowed)
            finally:
                # Cancelled or failed, the hold goes all the same (else its lease ends it).
                await self.budget.give_back(took, record)
            if self.on_progress is not None:
                await self.on_progress(self.run)

    async def answer(self, prompts: list[EvalPrompt], made: set[tuple[int, int]]) -> None:
        """This piece's answers: claimed CONCURRENCY at a time in one statement, a batch
        ahead of the work, and made by CONCURRENCY workers as they are claimed."""
        units = [(p, m) for p in prompts for m in self.models if (p.pk, m.pk) not in made]
        claimed: asyncio.Queue[EvalAnswer | None] = asyncio.Queue(CONCURRENCY)
        claimed_ids: list[int] = []

        async def claiming() -> None:
            for i in range(0, len(units), CONCURRENCY):
                if self.stop or not await self._refresh():
                    break  # stopped here, or the run ended elsewhere (its budget)
                batch = units[i : i + CONCURRENCY]
                for answer in await database_sync_to_async(_claim_answer)(batch):
                    claimed_ids.append(answer.pk)
                    await claimed.put(answer)
            for _ in range(CONCURRENCY):
                await claimed.put(None)  # no more: each worker ends

        async def answering() -> None:
            while (answer := await claimed.get()) is not None:
                model, params = answer.model, self.params[answer.model_id]
                worst = budget.answer_worst(self.rates[model.pk], model, answer.prompt.text, params)
                work = partial(_generate, answer, params, self.images)
                await self.limited(work, worst_each=worst)

        tasks = [asyncio.ensure_future(claiming())]
        tasks += [asyncio.ensure_future(answering()) for _ in range(CONCURRENCY)]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()  # none left behind when one fails or the run is cancelled
        unstarted = EvalAnswer.objects.filter(pk__in=claimed_ids, status=EvalAnswer.Status.RUNNING)
        await database_sync_to_async(unstarted.delete)()  # claimed, never started: given back

    async def judge(
        self, prompts: list[EvalPrompt], contestants: list[ModelEntry], terms: tuple[str, ...]
    ) -> bool:
        """Every verdict whose two answers are made and not judged yet; whether every answer
        of the run had ended when it looked (so nothing more can come)."""
        run = self.run
        answers, judged = await database_sync_to_async(_answers)(run)
        judging = []
        for prompt in prompts:
            base = answers.get((prompt.pk, run.baseline_id))
            for model in contestants:
                mine = answers.get((prompt.pk, model.pk))
                if base is None or mine is None:
                    continue
                if base.status != EvalAnswer.Status.OK or mine.status != EvalAnswer.Status.OK:
                    continue  # a failed or partial answer is not judged
                texts = (mine.text, base.text)
                worst = budget.verdict_worst_call(
                    self.rates[run.judge_id], prompt.text, texts, terms
                )
                for model_first in (True, False):
                    if (prompt.pk, model.pk, model_first) in judged:
                        continue  # judged already (a resumed run, or an earlier look)
                    work = partial(
                        _judge, run, prompt, model, model_first, texts, terms, self.images
                    )
                    judging.append(self.limited(work, worst_each=worst, judge_call=True))
        await asyncio.gather(*judging)
        ended = [a for a in answers.values() if a.status != EvalAnswer.Status.RUNNING]
        return len(ended) == len(prompts) * (len(contestants) + 1)

    async def execute(self, judges: bool) -> EvalRun:
        run = self.run
        prompts, contestants, made = await database_sync_to_async(_plan)(run)
        everyone = [*self.models, run.judge]
        self.rates = await database_sync_to_async(budget.rates_of)(everyone)
        self.params = await database_sync_to_async(budget.params_of)(self.models, run.params)
        self.images = await database_sync_to_async(images_sent)(run.images)
        await self.answer(prompts, made)
        if not judges:
            if self.stop:
                note = _budget_note(run, self.stop, self.cost, self.calls)
                await database_sync_to_async(EvalRun.objects.filter(pk=run.pk).update)(note=note)
            return run
        terms = await database_sync_to_async(rules.mask_terms)()  # once, not once a look
        while True:
            # Read before the answers: if the other pools' pieces had ended by then, what is
            # read is all there will be.
            others = await database_sync_to_async(works.pieces_others_working)(
                run_id=run.pk, queue=self.queue
            )
            if await self.judge(prompts, contestants, terms) or self.stop:
                break
            if not others:  # they ended (stopped at the budget) with answers still unmade
                self.stop = "elsewhere"
                break
            await asyncio.sleep(WAIT_FOR_ANSWERS_S)
        note = ""
        if self.stop == "elsewhere":
            note = await database_sync_to_async(_note)(run) or "Stopped early."
        elif self.stop:
            note = _budget_note(run, self.stop, self.cost, self.calls)
        status = EvalRun.Status.BUDGET if self.stop else EvalRun.Status.DONE
        await database_sync_to_async(EvalRun.objects.filter(pk=run.pk).update)(
            status=status, note=note, finished_at=timezone.now()
        )
        return await database_sync_to_async(EvalRun.objects.get)(pk=run.pk)


def _note(run: EvalRun) -> str:
    return EvalRun.objects.values_list("note", flat=True).get(pk=run.pk)


async def _beat(run_id: int, queue: str, token: str, piece: asyncio.Future) -> None:
    """Beat while the piece works; stop it the moment another worker has taken it over."""
    while True:
        await asyncio.sleep(HEARTBEAT_S)
        if not await database_sync_to_async(works.piece_beat)(
            run_id=run_id, queue=queue, token=token
        ):
            piece.cancel()
            return


async def eval_execute(run_id: int, *, queue: str = ALL, on_progress=None) -> EvalRun:
    """This piece of the run (``ALL``: all of it): every missing answer of its models, and
    on the judge's queue every verdict, CONCURRENCY at a time, until done or the budget is
    reached; safe to run again after a crash, and a no-op while another worker holds it."""
    token = uuid.uuid4().hex
    taken = await database_sync_to_async(works.piece_take)(run_id=run_id, queue=queue, token=token)
    if taken is None:
        return await database_sync_to_async(EvalRun.objects.get)(pk=run_id)
    run, models, judges = taken
    piece = asyncio.ensure_future(Piece(run, queue, models, on_progress, token).execute(judges))
    beating = asyncio.ensure_future(_beat(run.pk, queue, token, piece))
    try:
        run = await piece
    except asyncio.CancelledError:
        if beating.done() and not beating.cancelled():  # taken over by another worker
            return await database_sync_to_async(EvalRun.objects.get)(pk=run_id)
        # Stopped from outside (the worker shutting down): the next may take it at once.
        await database_sync_to_async(works.piece_release)(run_id=run_id, queue=queue, token=token)
        raise
    finally:
        beating.cancel()
    await database_sync_to_async(works.piece_finish)(run_id=run.pk, queue=queue, token=token)
    return run
