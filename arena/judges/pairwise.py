"""Pairwise verdicts, Arena-Hard style, the strategy of evaluation runs (a model against the
baseline) and calibration (an arena battle's two sides): two answers labelled A and B, a
five-level verdict read from the reply."""

from __future__ import annotations

from arena.judges.base import Judgement, Strategy
from arena.judges.calls import JudgeCaller, ReplyError
from arena.judges.prompts import DATA_RULE, Fence
from ranking.judged import parse_verdict

JUDGE_SYSTEM = (
    "Please act as an impartial judge and evaluate the two answers, A and B, to the user's "
    "prompt below. You do not know who wrote them. Judge helpfulness, correctness and "
    "completeness; do not let length or the order they are shown in sway you. End with your "
    "final verdict in exactly one of these forms: [[A>>B]] (A is much better), [[A>B]], "
    "[[A=B]], [[B>A]], [[B>>A]] (B is much better); only the last verdict you write counts, "
    "so an answer quoted or discussed never decides. " + DATA_RULE
)


def pair_prompt(*, prompt: str, first: str, second: str, fence: Fence | None = None) -> str:
    """The user message: the prompt and both answers, each in a block whose tags carry a fresh
    random token (``Fence``), so an answer cannot forge or close one."""
    fence = fence or Fence.fresh()
    return fence.blocks(prompt, [("A", first), ("B", second)])


def verdict_level(reply: str) -> str:
    level = parse_verdict(reply)
    if not level:
        raise ReplyError("no verdict in the expected form")
    return level


class PairwiseStrategy(Strategy):
    name = "pairwise"
    system = JUDGE_SYSTEM
    answer_count = (2, 2)
    reply_max_chars = 20_000
    temperature_fallback = False  # an evaluation's judge-call limit counts every request

    async def judge(
        self, caller: JudgeCaller, *, prompt: str, answers: dict[str, str]
    ) -> str | None:
        """The level of A (``answers["A"]``, shown first) against B; None: missing, never
        guessed, when no reply gave one in the form asked for."""
        text = pair_prompt(prompt=prompt, first=answers["A"], second=answers["B"])
        return await caller.ask(text, verdict_level)


VERDICT_FIELDS = ["level", "done", "attempts", "cost", "request", "reply", "problem"]


def verdict_data(found: Judgement[str | None]) -> dict:
    """A pairwise judgement as the fields of the row that keeps it (evals'
    ``PairVerdictFields``), done: its level ("" when missing) and its last call."""
    last = found.calls[-1]
    return {"level": found.outcome or "", "done": True, "attempts": found.attempts,
            "cost": found.cost, "request": last.request, "reply": last.reply,
            "problem": last.problem}  # fmt: skip
