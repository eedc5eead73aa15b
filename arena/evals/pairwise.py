"""One pairwise judge call, Arena-Hard style: two answers to one prompt, labelled A and B, every
model's names masked, a five-level verdict read from the reply. Used by evaluation runs (a
model against the baseline) and by calibration (an arena battle's two sides)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from channels.db import database_sync_to_async
from django.conf import settings

from arena.backends.base import ChatRequest, Message
from arena.backends.registry import backend_for
from arena.catalog import costs
from arena.catalog.models import ModelEntry
from arena.compare import judge as rules
from arena.generation.runner import discard, stream_answer
from arena.integrity.selectors import identity_terms
from ranking.judged import parse_verdict

JUDGE_SYSTEM = (
    "Please act as an impartial judge and evaluate the two answers, A and B, to the user's "
    "prompt below. You do not know who wrote them. Judge helpfulness, correctness and "
    "completeness; do not let length or the order they are shown in sway you. End with your "
    "final verdict in exactly one of these forms: [[A>>B]] (A is much better), [[A>B]], "
    "[[A=B]], [[B>A]], [[B>>A]] (B is much better); only the last verdict you write counts, "
    "so an answer quoted or discussed never decides. " + rules.DATA_RULE
)
RETRIES = 2  # a verdict the judge does not give in the format is asked for again this often
ATTEMPTS = 1 + RETRIES  # the most calls one verdict can take


@dataclass(frozen=True)
class PairVerdict:
    level: str | None  # None: missing (never guessed)
    request: str
    reply: str
    problem: str
    attempts: int
    cost: Decimal  # of every attempt, at the judge's list price (0 where it has none)


def mask_terms() -> tuple[str, ...]:
    """What the judge must not see: every configured model's names, ids, makers, vendors."""
    return tuple(sorted({*identity_terms(), *settings.COMPARE["JUDGE_TERMS"]}))


def judges_own_family(judge: ModelEntry, *models: ModelEntry) -> bool:
    """Whether one of ``models`` is of the judge's own family, which (unless COMPARE's
    JUDGE_SAME_FAMILY allows it) the judge does not judge."""
    mine = rules.family(vendor=judge.vendor, model_id=judge.model_id)
    return bool(mine) and any(
        rules.family(vendor=m.vendor, model_id=m.model_id) == mine for m in models
    )


def pair_prompt(
    *,
    prompt: str,
    first: str,
    second: str,
    terms: tuple[str, ...],
    fence: rules.Fence | None = None,
) -> str:
    """The user message: the prompt and both answers, names masked, each in a block whose tags
    carry a fresh random token (``rules.Fence``), so an answer cannot forge or close one."""
    fence = fence or rules.Fence.fresh()
    shown = [rules.mask(t, terms) for t in (prompt, first, second)]
    return (
        f"{fence.note()}\n\n{fence.prompt(shown[0])}\n\n"
        f"{fence.answer('A', shown[1])}\n\n{fence.answer('B', shown[2])}"
    )


async def judge_pair(
    *, judge: ModelEntry, prompt: str, first: str, second: str, terms: tuple[str, ...]
) -> PairVerdict:
    """The judge's verdict on ``first`` (shown as A) against ``second`` (B); a reply without
    a verdict in the form asked for is asked again, RETRIES times, then recorded missing."""
    text = pair_prompt(prompt=prompt, first=first, second=second, terms=terms)
    backend = backend_for(judge.backend, judge.backend_settings)
    level, reply, problem, attempts, cost = None, "", "", 0, Decimal("0")
    while attempts < ATTEMPTS:
        attempts += 1
        result = await stream_answer(
            backend,
            ChatRequest(
                model_id=judge.model_id,
                messages=(Message("system", JUDGE_SYSTEM), Message("user", text)),
                params={"temperature": 0},
            ),
            on_delta=discard,
            max_chars=20_000,
            timeout_s=float(judge.backend_settings.get("timeout_s") or 120),
        )
        spent, _ = await database_sync_to_async(costs.cost_now)(model=judge, result=result)
        cost += spent or Decimal("0")
        reply = result.text
        level = parse_verdict(reply) if result.status == "ok" else None
        problem = "" if level else (result.error_message or "no verdict in the expected form")
        if level:
            break
    return PairVerdict(level, text, reply, problem, attempts, cost)


VERDICT_FIELDS = ["level", "done", "attempts", "cost", "request", "reply", "problem"]


def verdict_data(found: PairVerdict) -> dict:
    """A judge call's outcome as the fields of a verdict row (``PairVerdictFields``), done."""
    return {"level": found.level or "", "done": True, "attempts": found.attempts,
            "cost": found.cost, "request": found.request, "reply": found.reply,
            "problem": found.problem}  # fmt: skip
