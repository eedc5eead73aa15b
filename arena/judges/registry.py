"""Judging strategies: the one list of them, and the one way any room has a judge judge.

Each strategy is one module whose class says what it can do (``base.Strategy``); adding one
means one line here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from django.conf import settings

from arena.backends.base import Image
from arena.catalog.models import ModelEntry
from arena.judges.base import Judgement, Strategy
from arena.judges.calls import Call, JudgeCaller
from arena.judges.pairwise import PairwiseStrategy
from arena.judges.rubric import RubricStrategy
from arena.judges.rules import mask

_STRATEGIES: tuple[type[Strategy], ...] = (RubricStrategy, PairwiseStrategy)
_BY_NAME = {strategy.name: strategy for strategy in _STRATEGIES}


class UnknownStrategy(LookupError):
    """A name no strategy is registered under."""


def strategy_for(name: str) -> Strategy:
    try:
        return _BY_NAME[name]()
    except KeyError:
        raise UnknownStrategy(f"No judging strategy is named {name!r}.") from None


def strategy_names() -> list[str]:
    return sorted(_BY_NAME)


async def judge_answers(
    strategy: str,
    *,
    judge: ModelEntry,
    prompt: str,
    answers: dict[str, str],
    terms: tuple[str, ...],
    on_call: Callable[[Call], Awaitable[None]] | None = None,
    images: tuple[Image, ...] = (),
    **options,
) -> Judgement:
    """``judge``'s judgement of ``answers`` (label -> text) to ``prompt`` by the strategy so
    named, every model's names (``terms``: ``rules.mask_terms``) masked out of what it reads;
    ``on_call`` is told of each call as it ends; ``images``: those the answers were given,
    shown to the judge with the prompt; the options are the strategy's own."""
    chosen = strategy_for(strategy)
    fewest, most = chosen.answer_count
    if not fewest <= len(answers) <= most:
        raise ValueError(f"{chosen.name} judges {fewest} to {most} answers, not {len(answers)}.")
    caller = JudgeCaller(
        judge,
        system=chosen.system,
        max_chars=chosen.reply_max_chars or settings.ARENA["ANSWER_MAX_CHARS"],
        on_call=on_call,
        temperature_fallback=chosen.temperature_fallback,
        images=images,
    )
    outcome = await chosen.judge(
        caller,
        prompt=mask(prompt, terms),
        answers={label: mask(text, terms) for label, text in answers.items()},
        **options,
    )
    return Judgement(outcome, tuple(caller.calls), caller.temperature_dropped)
