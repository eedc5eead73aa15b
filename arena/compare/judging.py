"""The judge at work on one run: its calls (each recorded for audit), the answers it may and may
not judge, and the verdict. The rules themselves are ``judge`` (pure)."""

from __future__ import annotations

from channels.db import database_sync_to_async
from django.conf import settings

from arena.backends.base import ChatRequest, Message
from arena.backends.registry import backend_for
from arena.catalog.models import ModelEntry
from arena.compare import judge
from arena.compare.models import CompareAnswer, CompareRun, JudgeCall
from arena.generation.runner import discard, stream_answer
from arena.integrity.selectors import identity_terms

MOCK_JUDGE_NOTE = "mock scores (deterministic, not a real judge)"
FAILED_NOTE = "not judged: the answer failed"
PARTIAL_NOTE = "not judged: the answer is partial"
FAMILY_NOTE = "not judged: same family as judge"


class _Judge:
    """Calls to the judge model for one run, each recorded (JudgeCall) for audit."""

    def __init__(self, run: CompareRun) -> None:
        self.run = run
        self.model = run.judge
        self.backend = backend_for(self.model.backend, self.model.backend_settings)
        self.temperature = True
        self.temperature_dropped = False
        self.temperature_tried = False  # asked once without it after a refusal: not again
        # Where the provider takes a JSON schema for the reply (OpenAI's response_format, which
        # vLLM and others accept too): its backend settings say "structured_output": true.
        self.structured = bool(self.model.backend_settings.get("structured_output")) and (
            self.model.backend in (ModelEntry.Backend.OPENAI, ModelEntry.Backend.OPENAI_COMPATIBLE)
        )

    async def ask(self, purpose: str, order: list[str], text: str, parse, schema: dict):
        """The parsed reply, or None when it failed validation every time (1 + MAX_RETRIES)."""
        for attempt in range(1, judge.MAX_RETRIES + 2):
            reply, problem, sent_temperature = await self._call(text, schema)
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
                temperature_sent=sent_temperature,
                schema_sent=self.structured,
                reply=reply,
                problem=problem,
            )
            if not problem:
                return parsed
        return None

    async def _call(self, text: str, schema: dict) -> tuple[str, str, bool]:
        """(reply, problem, whether the request that answered carried temperature)."""
        for attempt in range(2):
            sent_temperature = self.temperature
            params: dict = {"temperature": 0} if sent_temperature else {}
            if self.structured:
                params["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": "verdict", "strict": True, "schema": schema},
                }
            request = ChatRequest(
                model_id=self.model.model_id,
                messages=(Message("system", judge.SYSTEM), Message("user", text)),
                params=params,
            )

            result = await stream_answer(
                self.backend,
                request,
                on_delta=discard,
                max_chars=settings.ARENA["ANSWER_MAX_CHARS"],
                timeout_s=float(self.model.backend_settings.get("timeout_s") or 120),
            )
            # A backend never passes on an upstream's error text (backends.errors), so a refused
            # temperature reads as any refused request: asked once more without it, and left
            # out from then on (the run records that) only when that works.
            refused = result.error_kind == "bad_request"
            if attempt == 0 and refused and self.temperature and not self.temperature_tried:
                self.temperature, self.temperature_tried = False, True
                continue
            if attempt == 1:
                self.temperature_dropped = result.status == "ok"
                self.temperature = not self.temperature_dropped  # else it was not the cause
            if result.status != "ok":
                return result.text, f"the judge failed: {result.error_message}", sent_temperature
            return result.text, "", sent_temperature
        return "", "the judge rejected the request", self.temperature


async def judge_run(run: CompareRun, answers: list[CompareAnswer]) -> dict:
    """Judge the run's answers once every stream has ended; the verdict to save."""
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
                criterion.name,
                order,
                text,
                lambda reply, o=order: judge.parse_scores(reply, o),
                judge.scores_schema(order),
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
                judge.winner_schema((first, second)),
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
