"""Strategies are chosen by name from one list, and every one is asked through the same loop:
names masked, every call kept with its cost."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from arena.judges import pairwise, rubric
from arena.judges.calls import ATTEMPTS
from arena.judges.registry import UnknownStrategy, judge_answers, strategy_for, strategy_names
from tests.helpers import make_model

pytestmark = pytest.mark.usefixtures("transactional_db")


def test_each_strategy_is_found_by_its_name_and_an_unknown_name_is_refused():
    assert strategy_names() == ["pairwise", "rubric"]
    assert isinstance(strategy_for("pairwise"), pairwise.PairwiseStrategy)
    assert strategy_for("rubric").system == rubric.SYSTEM
    with pytest.raises(UnknownStrategy):
        strategy_for("vibes")


async def test_a_pairwise_judge_reads_exactly_two_answers():
    judge = await database_sync_to_async(make_model)("Judge", "judge-1", judge=True)
    with pytest.raises(ValueError, match="2 to 2 answers, not 3"):
        await judge_answers(
            "pairwise", judge=judge, prompt="Hi", answers=dict.fromkeys("ABC", "x"), terms=()
        )


async def test_a_pairwise_judge_reads_the_answers_with_every_name_masked():
    judge = await database_sync_to_async(make_model)("Judge", "judge-1", judge=True)
    found = await judge_answers(
        "pairwise", judge=judge, prompt="Which is Zephyr Quill?",
        answers={"A": "I am Zephyr Quill.", "B": "I cannot say."}, terms=("Zephyr Quill",),
    )  # fmt: skip
    assert found.outcome in {"A>>B", "A>B", "A=B", "B>A", "B>>A"}
    assert found.attempts == 1 and found.calls[0].temperature_sent is True
    assert "Zephyr" not in found.calls[0].request and "[MODEL]" in found.calls[0].request
    assert pairwise.verdict_data(found)["level"] == found.outcome


async def test_a_pairwise_judge_that_rejects_temperature_is_not_asked_behind_its_call_count():
    """An evaluation's judge-call limit counts calls: a request it does not count is never
    sent, so a judge that refuses temperature fails its calls, each counted."""
    judge = await database_sync_to_async(make_model)(
        "Judge", "judge-1", judge=True, misbehaviour="judge_rejects_temperature"
    )
    found = await judge_answers(
        "pairwise", judge=judge, prompt="Hi", answers={"A": "x", "B": "y"}, terms=()
    )
    assert found.outcome is None and found.temperature_dropped is False
    assert [c.temperature_sent for c in found.calls] == [True] * ATTEMPTS
