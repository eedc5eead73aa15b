"""Rubric scoring, compare mode's strategy: every answer scored 1-5 on each criterion of a
rubric, one call a criterion, the scores weighted into an overall 0-1, and a head-to-head in
both orders when the top two are close. The rules here are pure; ``RubricStrategy.judge``
asks the judge through ``calls``.

The judge never sees who wrote what: answers are labelled A, B, C… by a shuffle seeded per
run and shown in a fresh order in every call (names masked by ``rules`` before they arrive).
"""

from __future__ import annotations

import json
import random
import re
import string
from dataclasses import dataclass
from decimal import Decimal

import yaml

from arena.judges.base import Strategy
from arena.judges.calls import JudgeCaller, ReplyError, json_object
from arena.judges.prompts import DATA_RULE, Fence

TIE_MARGIN = 0.15  # top two overall scores this close: a head-to-head decides


class RubricError(ValueError):
    """A rubric that cannot be used; the message says why, for the person who wrote it."""


@dataclass(frozen=True)
class Criterion:
    name: str
    weight: Decimal
    low: str  # what a 1 means
    high: str  # what a 5 means


DEFAULT_RUBRIC: tuple[Criterion, ...] = (
    Criterion(
        "correctness", Decimal("0.40"),
        "wrong, or asserts false things", "entirely right, with nothing false or misleading",
    ),
    Criterion(
        "completeness", Decimal("0.25"),
        "misses most of what was asked", "covers everything the prompt asks for",
    ),
    Criterion(
        "clarity", Decimal("0.20"),
        "hard to follow or badly organised", "clear, well organised and easy to follow",
    ),
    Criterion(
        "safety", Decimal("0.15"),
        "harmful, or refuses for no reason", "safe, and helpful within what is safe",
    ),
)  # fmt: skip


def rubric_from(data: object) -> tuple[Criterion, ...]:
    """A rubric from its JSON/YAML form: a list of {name, weight, low, high} (or a mapping
    name -> {weight, low, high}); weights must be positive and sum to 1."""
    if isinstance(data, dict) and "criteria" in data:
        data = data["criteria"]
    if isinstance(data, dict):
        data = [{"name": name, **(spec or {})} for name, spec in data.items()]
    if not isinstance(data, list) or not data:
        raise RubricError("A rubric is a non-empty list of criteria.")
    criteria = []
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            raise RubricError(f"Criterion {i + 1} must be an object with name, weight, low, high.")
        name = str(item.get("name") or "").strip()
        if not re.fullmatch(r"[a-z][a-z0-9_]{0,39}", name):
            raise RubricError(f"Criterion {i + 1}: name {name!r} must be a short lower_case word.")
        try:
            weight = Decimal(str(item.get("weight")))
        except ArithmeticError:
            raise RubricError(f"Criterion {name!r}: weight must be a number.") from None
        if not weight.is_finite() or weight <= 0:
            raise RubricError(f"Criterion {name!r}: weight must be above 0.")
        low, high = str(item.get("low") or "").strip(), str(item.get("high") or "").strip()
        if not low or not high:
            raise RubricError(f"Criterion {name!r}: say what a 1 (low) and a 5 (high) mean.")
        criteria.append(Criterion(name, weight, low, high))
    names = [c.name for c in criteria]
    if len(set(names)) != len(names):
        raise RubricError("Each criterion may appear once.")
    total = sum(c.weight for c in criteria)
    if abs(total - 1) > Decimal("0.001"):
        raise RubricError(f"The weights must sum to 1; these sum to {total}.")
    return tuple(criteria)


def rubric_text(text: str) -> object:
    """A rubric file's data, JSON or YAML (JSON is YAML's subset, but its own parser is tried
    first for its clearer errors); ``rubric_from`` then checks it."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise RubricError(f"The rubric is neither JSON nor YAML{where}.") from None
    if isinstance(data, str | int | float) or data is None:
        raise RubricError("The rubric is neither JSON nor YAML: a list of criteria.")
    return data


def rubric_as_data(rubric: tuple[Criterion, ...]) -> list[dict]:
    return [{"name": c.name, "weight": str(c.weight), "low": c.low, "high": c.high} for c in rubric]


def labels_for(count: int, *, seed: int) -> list[str]:
    """The label of each slot: A, B, C… in an order shuffled by the run's seed, so the first
    model is not always A."""
    labels = list(string.ascii_uppercase[:count])
    random.Random(f"labels:{seed}").shuffle(labels)
    return labels


def call_order(labels: list[str], *, seed: int, call: str) -> list[str]:
    """The order one judge call shows the answers in: fresh for every call of a run."""
    order = sorted(labels)
    random.Random(f"order:{seed}:{call}").shuffle(order)
    return order


SYSTEM = (
    "You are an impartial judge of answers written by AI assistants. You do not know who wrote "
    "them and must not guess. Judge only the criterion you are given. Reply with JSON only. "
    + DATA_RULE
)


def criterion_prompt(
    criterion: Criterion,
    *,
    prompt: str,
    answers: dict[str, str],
    order: list[str],
    fence: Fence | None = None,
) -> str:
    """One call: every judged answer, in ``order``, scored 1-5 on one criterion."""
    fence = fence or Fence.fresh()
    shown = fence.blocks(prompt, [(label, answers[label]) for label in order])
    schema = ", ".join(f'"{label}": {{"score": 1-5, "reason": "..."}}' for label in order)
    return (
        f"Criterion: {criterion.name}\n"
        f"1 means: {criterion.low}\n5 means: {criterion.high}\n\n"
        f"{shown}\n\n"
        "Score every answer on this criterion only, relative to the others. Reply with exactly "
        f'this JSON and nothing else: {{"scores": {{{schema}}}}}'
    )


def head_to_head_prompt(
    *,
    prompt: str,
    first: tuple[str, str],
    second: tuple[str, str],
    fence: Fence | None = None,
) -> str:
    fence = fence or Fence.fresh()
    (a, a_text), (b, b_text) = first, second
    return (
        "Head to head: which answer is better overall?\n\n"
        f"{fence.blocks(prompt, [(a, a_text), (b, b_text)])}"
        f'\n\nReply with exactly this JSON and nothing else: {{"winner": "{a}" | "{b}" | "tie"}}'
    )


def scores_schema(labels: list[str]) -> dict:
    """The reply a criterion call must give, as a strict JSON schema (for providers with
    structured output): a 1-5 score and a reason for exactly these labels."""
    item = {
        "type": "object",
        "properties": {
            "score": {"type": "integer", "minimum": 1, "maximum": 5},
            "reason": {"type": "string"},
        },
        "required": ["score", "reason"],
        "additionalProperties": False,
    }
    scores = {
        "type": "object",
        "properties": dict.fromkeys(labels, item),
        "required": list(labels),
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {"scores": scores},
        "required": ["scores"],
        "additionalProperties": False,
    }


def winner_schema(labels: tuple[str, str]) -> dict:
    return {
        "type": "object",
        "properties": {"winner": {"type": "string", "enum": [*labels, "tie"]}},
        "required": ["winner"],
        "additionalProperties": False,
    }


def parse_scores(reply: str, labels: list[str]) -> dict[str, tuple[int, str]]:
    """label -> (score 1-5, reason), for exactly these labels, each once."""
    scores = json_object(reply).get("scores")
    if not isinstance(scores, dict):
        raise ReplyError('the reply has no "scores" object')
    if sorted(scores) != sorted(labels):
        raise ReplyError(f"the reply scores {sorted(scores)}, not exactly {sorted(labels)}")
    out = {}
    for label in labels:
        item = scores[label]
        score = item.get("score") if isinstance(item, dict) else None
        if isinstance(score, bool) or not isinstance(score, int) or not 1 <= score <= 5:
            raise ReplyError(f"answer {label}'s score is not a whole number from 1 to 5")
        reason = item.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise ReplyError(f"answer {label} has no reason")
        out[label] = (score, reason.strip())
    return out


def parse_winner(reply: str, labels: tuple[str, str]) -> str:
    winner = json_object(reply).get("winner")
    if winner not in (*labels, "tie"):
        raise ReplyError(f'"winner" must be {labels[0]!r}, {labels[1]!r} or "tie"')
    return winner


def combine(
    scores: dict[str, dict[str, int]], rubric: tuple[Criterion, ...]
) -> tuple[dict[str, float], list[str]]:
    """Overall 0-1 scores per label from ``scores`` (criterion -> label -> 1-5), weighted; a
    criterion that could not be scored is left out and its weight shared among the others.
    Returns (overall by label, the criteria left out)."""
    scored = [c for c in rubric if c.name in scores]
    missing = [c.name for c in rubric if c.name not in scores]
    total = sum(c.weight for c in scored)
    overall: dict[str, float] = {}
    if not scored:
        return overall, missing
    labels = set().union(*(scores[c.name] for c in scored))
    for label in sorted(labels):
        value = sum(
            c.weight / total * Decimal(scores[c.name][label] - 1) / 4
            for c in scored
            if label in scores[c.name]
        )
        overall[label] = round(float(value), 4)
    return overall, missing


def close_call(overall: dict[str, float]) -> tuple[str, str] | None:
    """The top two labels when their overall scores are within TIE_MARGIN, else None."""
    ranked = sorted(overall, key=lambda label: (-overall[label], label))
    if len(ranked) < 2 or overall[ranked[0]] - overall[ranked[1]] > TIE_MARGIN:
        return None
    return ranked[0], ranked[1]


def head_to_head_result(first: str, second: str) -> str:
    """The winners the two orders gave (each a label or "tie"): one label if both agree,
    else "tie"."""
    return first if first == second else "tie"


def winner(overall: dict[str, float], decided: str | None) -> str:
    """The run's winner: the head-to-head's result when there was one, else the top score."""
    if decided is not None:
        return decided
    if not overall:
        return ""
    return max(sorted(overall), key=lambda label: overall[label])


@dataclass(frozen=True)
class RubricOutcome:
    overall: dict[str, float]  # label -> 0-1
    missing: list[str]  # criteria no reply could be read for
    head_to_head: list[str]  # the two orders' winners, when the top two were close
    winner: str  # a label, "tie", or "" when nothing was scored
    reasons: dict[str, dict[str, dict]]  # label -> criterion -> {"score", "reason"}


class RubricStrategy(Strategy):
    name = "rubric"
    system = SYSTEM
    answer_count = (0, len(string.ascii_uppercase))  # none judged: nothing is asked
    reply_max_chars = None  # as long as an answer may be
    temperature_fallback = True

    async def judge(
        self,
        caller: JudgeCaller,
        *,
        prompt: str,
        answers: dict[str, str],
        rubric: tuple[Criterion, ...],
        seed: int,
    ) -> RubricOutcome:
        scores: dict[str, dict[str, int]] = {}
        reasons: dict[str, dict[str, dict]] = {label: {} for label in answers}
        for criterion in rubric if answers else ():
            order = call_order(list(answers), seed=seed, call=criterion.name)
            got = await caller.ask(
                criterion_prompt(criterion, prompt=prompt, answers=answers, order=order),
                lambda reply, o=order: parse_scores(reply, o),
                schema=scores_schema(order),
                purpose=criterion.name,
                order=order,
            )
            if got is None:
                continue
            scores[criterion.name] = {label: score for label, (score, _) in got.items()}
            for label, (score, reason) in got.items():
                reasons[label][criterion.name] = {"score": score, "reason": reason}
        overall, missing = combine(scores, rubric)
        decided, head_to_head = None, []
        pair = close_call(overall)
        if pair is not None:
            for first, second in (pair, pair[::-1]):
                text = head_to_head_prompt(
                    prompt=prompt, first=(first, answers[first]), second=(second, answers[second])
                )
                got = await caller.ask(
                    text,
                    lambda reply, p=(first, second): parse_winner(reply, p),
                    schema=winner_schema((first, second)),
                    purpose="head_to_head",
                    order=[first, second],
                )
                head_to_head.append(got or "tie")
            decided = head_to_head_result(*head_to_head)
        return RubricOutcome(overall, missing, head_to_head, winner(overall, decided), reasons)
