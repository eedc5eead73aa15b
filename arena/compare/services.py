"""Writes of compare mode: a run checked and created, its streams run at once, its answers
saved, and the blind judge's verdict. Generation goes through the same backends and pools as
battles; the judge's rules are in ``judge`` (pure)."""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass

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
from arena.compare import judge
from arena.compare.models import CompareAnswer, CompareRun, JudgeCall
from arena.core.errors import ServiceError
from arena.core.models import model_update
from arena.generation.runner import stream_answer
from arena.generation.streams import answer_streams
from arena.integrity.selectors import identity_terms

PARAMS = ("temperature", "top_p", "max_tokens")
MIN_MODELS, MAX_MODELS = 2, 8
MOCK_JUDGE_NOTE = "mock scores (deterministic, not a real judge)"
FAILED_NOTE = "not judged: the answer failed"
PARTIAL_NOTE = "not judged: the answer is partial"
FAMILY_NOTE = "not judged: same family as judge"


def compare_allowed(*, user: User) -> bool:
    """Staff, or (COMPARE["ACCESS"] = "team") anyone with the use_compare permission."""
    if not user.is_authenticated:
        return False
    if user.is_staff:
        return True
    return settings.COMPARE["ACCESS"] == "team" and user.has_perm("arena.use_compare")


def _params(raw: dict) -> dict:
    """The shared parameters that are set, checked; empty ones are left out (not sent)."""
    out: dict = {}
    for name, value in (raw or {}).items():
        if name not in PARAMS:
            raise ServiceError("bad_param", f"Unknown parameter {name!r}.")
        if value is None or value == "":
            continue
        try:
            number = int(value) if name == "max_tokens" else float(value)
        except (TypeError, ValueError):
            raise ServiceError("bad_param", f"{name!r} must be a number.") from None
        low, high = {"temperature": (0, 2), "top_p": (0, 1), "max_tokens": (1, 100_000)}[name]
        if not low <= number <= high:
            raise ServiceError("bad_param", f"{name!r} must be between {low} and {high}.")
        out[name] = number
    return out


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
) -> CompareRun:
    """A run checked and saved, queued; the caller runs it (``compare_execute``), through a
    task (the page) or in its own process (the command)."""
    if not compare_allowed(user=user):
        raise ServiceError("forbidden", "Compare mode is for staff and teams given access.")
    text = prompt_clean_text(prompt)
    if len(set(model_ids)) != len(model_ids):
        raise ServiceError("duplicate_model", "Each model may fill one slot only.")
    if not MIN_MODELS <= len(model_ids) <= MAX_MODELS:
        raise ServiceError(
            "model_count", f"Pick {MIN_MODELS} to {MAX_MODELS} models; {len(model_ids)} given."
        )
    models = ModelEntry.objects.in_bulk(model_ids)
    missing = [pk for pk in model_ids if pk not in models or not models[pk].active]
    if missing:
        raise ServiceError("unknown_model", f"No active model with id {missing[0]}.")
    chosen = [models[pk] for pk in model_ids]
    params = _params(params or {})
    for model in chosen:
        for name in model.params_unsupported(params):
            raise ServiceError(
                "param_unsupported",
                f"{model.public_name} does not support {name!r}. Clear it for all models, "
                "or remove the model.",
            )
    try:
        criteria = judge.DEFAULT_RUBRIC if rubric is None else judge.rubric_from(rubric)
    except judge.RubricError as exc:
        raise ServiceError("bad_rubric", str(exc)) from None
    judge_model = None
    if judge_id is not None:
        # Any configured model may judge, active in battles or not.
        judge_model = ModelEntry.objects.filter(pk=judge_id).first()
        if judge_model is None:
            raise ServiceError("unknown_model", f"No judge model with id {judge_id}.")
    seed = seed if seed is not None else random.SystemRandom().randrange(2**31)
    run = CompareRun.objects.create(
        user=user,
        prompt=text,
        system_prompt=str(system_prompt or "").strip(),
        params=params,
        seed=seed,
        deadline_s=settings.COMPARE["RUN_DEADLINE_S"],
        judge=judge_model,
        rubric=judge.rubric_as_data(criteria),
        previous_id=previous_id,
    )
    labels = judge.labels_for(len(chosen), seed=seed)
    CompareAnswer.objects.bulk_create(
        CompareAnswer(run=run, slot=i, label=labels[i], model=model)
        for i, model in enumerate(chosen)
    )
    return run


def default_judge() -> ModelEntry | None:
    name = settings.COMPARE["JUDGE_MODEL"]
    return ModelEntry.objects.filter(public_name=name).first() if name else None


def stream_key(*, run_id: object, slot: int) -> str:
    return f"arena:compare:{run_id}:{slot}"


# Running a run --------------------------------------------------------------------------------


@dataclass
class _Slot:
    answer: CompareAnswer
    backend: object | None
    timeout_s: float


def _load(run_id: object) -> tuple[CompareRun, list[_Slot]]:
    run = CompareRun.objects.select_related("judge").get(pk=run_id)
    CompareRun.objects.filter(pk=run_id).update(status=CompareRun.Status.RUNNING)
    slots = []
    for answer in run.answers.select_related("model"):
        model = answer.model
        try:
            backend = backend_for(model.backend, model.backend_settings)
        except UnknownBackend:
            backend = None
        own = float(model.backend_settings.get("timeout_s") or run.deadline_s)
        slots.append(_Slot(answer, backend, own))
    return run, slots


def _request(run: CompareRun, model: ModelEntry, prompt: str, system: str, params: dict):
    messages = ((Message("system", system),) if system else ()) + (Message("user", prompt),)
    return ChatRequest(model_id=model.model_id, messages=messages, params=params)


def _save(answer: CompareAnswer, result) -> None:
    cost, cost_status = costs.answer_cost(
        model=answer.model,
        on=timezone.localdate(),
        input_tokens=result.input_tokens,
        output_tokens=result.output_tokens,
        tokens_estimated=result.tokens_estimated,
    )
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
        _request(run, answer.model, run.prompt, run.system_prompt, run.params),
        on_delta=lambda text: streams.append(key, text),
        max_chars=settings.ARENA["ANSWER_MAX_CHARS"],
        timeout_s=max(0.1, min(slot.timeout_s, left)),
    )
    await database_sync_to_async(_save)(answer, result)
    try:
        await streams.finish(key, answer.status)
    except Exception:  # the page reads the saved answer in the end
        pass


async def compare_execute(run_id: object) -> CompareRun:
    """Every model's stream at once, each saved as it ends, then the judge; the run saved.
    Safe to call twice: a run that is not queued is left alone."""
    run = await database_sync_to_async(CompareRun.objects.get)(pk=run_id)
    if run.status != CompareRun.Status.QUEUED:
        return run
    run, slots = await database_sync_to_async(_load)(run_id)
    began = time.monotonic()
    await asyncio.gather(*(_stream_one(run, slot, began) for slot in slots))
    if run.judge_id is not None:
        await database_sync_to_async(CompareRun.objects.filter(pk=run.pk).update)(
            status=CompareRun.Status.JUDGING
        )
        verdict = await _judge_run(run, [s.answer for s in slots])
    else:
        verdict = {}
    await database_sync_to_async(CompareRun.objects.filter(pk=run.pk).update)(
        status=CompareRun.Status.DONE, verdict=verdict, finished_at=timezone.now()
    )
    return await database_sync_to_async(CompareRun.objects.get)(pk=run.pk)


# The judge ------------------------------------------------------------------------------------


class _Judge:
    """Calls to the judge model for one run, each recorded (JudgeCall) for audit."""

    def __init__(self, run: CompareRun) -> None:
        self.run = run
        self.model = run.judge
        self.backend = backend_for(self.model.backend, self.model.backend_settings)
        self.temperature = True
        self.temperature_dropped = False

    async def ask(self, purpose: str, order: list[str], text: str, parse):
        """The parsed reply, or None when it failed validation every time (1 + MAX_RETRIES)."""
        for attempt in range(1, judge.MAX_RETRIES + 2):
            reply, problem = await self._call(text)
            if not problem:
                try:
                    parsed = parse(reply)
                except judge.ReplyError as exc:
                    problem = str(exc)
            await database_sync_to_async(JudgeCall.objects.create)(
                run=self.run,
                purpose=purpose,
                attempt=attempt,
                order=order,
                request=text,
                temperature_sent=self.temperature,
                reply=reply,
                problem=problem,
            )
            if not problem:
                return parsed
        return None

    async def _call(self, text: str) -> tuple[str, str]:
        for _ in range(2):
            params = {"temperature": 0} if self.temperature else {}
            request = ChatRequest(
                model_id=self.model.model_id,
                messages=(Message("system", judge.SYSTEM), Message("user", text)),
                params=params,
            )

            async def ignore(_text: str) -> None:
                return None

            result = await stream_answer(
                self.backend,
                request,
                on_delta=ignore,
                max_chars=settings.ARENA["ANSWER_MAX_CHARS"],
                timeout_s=float(self.model.backend_settings.get("timeout_s") or 120),
            )
            rejected = "temperature" in result.error_message.lower()
            if result.status != "ok" and self.temperature and rejected:
                self.temperature = False  # retried once without it, and the run records that
                self.temperature_dropped = True
                continue
            if result.status != "ok":
                return result.text, f"the judge failed: {result.error_message}"
            return result.text, ""
        return "", "the judge rejected the request"


async def _judge_run(run: CompareRun, answers: list[CompareAnswer]) -> dict:
    terms = await database_sync_to_async(identity_terms)()
    terms = tuple(sorted({*terms, *settings.COMPARE["JUDGE_TERMS"]}))
    judge_family = judge.family(vendor=run.judge.vendor, model_id=run.judge.model_id)
    judged: dict[str, str] = {}
    for answer in answers:
        if answer.status == CompareAnswer.Status.ERROR:
            answer.not_judged = FAILED_NOTE
        elif answer.status != CompareAnswer.Status.OK:
            answer.not_judged = PARTIAL_NOTE
        elif (
            not settings.COMPARE["JUDGE_SAME_FAMILY"]
            and judge_family
            and judge.family(vendor=answer.model.vendor, model_id=answer.model.model_id)
            == judge_family
        ):
            answer.not_judged = FAMILY_NOTE
        else:
            judged[answer.label] = judge.mask(answer.text, terms)
    rubric = judge.rubric_from(run.rubric)
    prompt = judge.mask(run.prompt, terms)
    caller = _Judge(run)
    scores: dict[str, dict[str, int]] = {}
    reasons: dict[str, dict[str, dict]] = {label: {} for label in judged}
    if judged:
        for criterion in rubric:
            order = judge.call_order(list(judged), seed=run.seed, call=criterion.name)
            text = judge.criterion_prompt(criterion, prompt=prompt, answers=judged, order=order)
            got = await caller.ask(
                criterion.name, order, text, lambda reply, o=order: judge.parse_scores(reply, o)
            )
            if got is None:
                continue
            scores[criterion.name] = {label: score for label, (score, _) in got.items()}
            for label, (score, reason) in got.items():
                reasons[label][criterion.name] = {"score": score, "reason": reason}
    overall, missing = judge.combine(scores, rubric)
    decided = None
    pair = judge.close_call(overall)
    head_to_head = []
    if pair is not None:
        for first, second in (pair, pair[::-1]):
            text = judge.head_to_head_prompt(
                prompt=prompt, first=(first, judged[first]), second=(second, judged[second])
            )
            got = await caller.ask(
                "head_to_head",
                [first, second],
                text,
                lambda reply, p=(first, second): judge.parse_winner(reply, p),
            )
            head_to_head.append(got or "tie")
        decided = judge.head_to_head_result(*head_to_head)
    for answer in answers:
        answer.judged = reasons.get(answer.label, {})
    await database_sync_to_async(
        lambda: CompareAnswer.objects.bulk_update(answers, ["judged", "not_judged"])
    )()
    return {
        "overall": overall,
        "missing": missing,
        "head_to_head": head_to_head,
        "winner": judge.winner(overall, decided),
        "temperature_dropped": caller.temperature_dropped,
        "mock": MOCK_JUDGE_NOTE if run.judge.backend == ModelEntry.Backend.MOCK else "",
    }
