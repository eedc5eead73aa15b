"""Generation's writes: the turn deadline and the sweep void only what is still unfinished."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from arena.battles.models import Answer, Battle, Turn
from arena.generation.services import (
    STUCK_GRACE_S,
    battle_void_overdue,
    battles_void_stuck,
    turn_deadline_s,
)
from tests.helpers import ready_battle

pytestmark = pytest.mark.usefixtures("generation")


def past_deadline(battle: Battle) -> Turn:
    turn = battle.turns.get()
    long_ago = timezone.now() - timedelta(seconds=turn_deadline_s() + 1)
    Turn.objects.filter(pk=turn.pk).update(created_at=long_ago)
    return turn


def test_a_turn_whose_answers_have_ended_is_not_voided_for_the_time_showing_takes(
    alice, two_models
):
    battle = ready_battle(alice)
    assert not battle_void_overdue(turn_id=past_deadline(battle).pk)
    assert Battle.objects.get(pk=battle.pk).status == Battle.Status.READY


def test_a_turn_past_its_deadline_with_an_answer_unfinished_is_voided(alice, two_models):
    battle = ready_battle(alice)
    turn = past_deadline(battle)
    Answer.objects.filter(turn=turn, side="b").update(status=Answer.Status.RUNNING)
    assert battle_void_overdue(turn_id=turn.pk)
    battle.refresh_from_db()
    assert (battle.status, battle.void_reason) == (Battle.Status.VOID, "deadline")
    # As the worker would end it, so the fixture does not wait for it in vain.
    Answer.objects.filter(turn=turn, side="b").update(status=Answer.Status.ERROR)


def stuck(battle: Battle, seconds_ago: float) -> None:
    """What a crash leaves: the battle generating, an answer never finished, since then."""
    Battle.objects.filter(pk=battle.pk).update(status=Battle.Status.GENERATING)
    turn = battle.turns.get()
    Turn.objects.filter(pk=turn.pk).update(
        created_at=timezone.now() - timedelta(seconds=seconds_ago)
    )
    Answer.objects.filter(turn=turn, side="a").update(status=Answer.Status.RUNNING)
    Answer.objects.filter(turn=turn, side="b").update(status=Answer.Status.PENDING)


def test_the_sweep_ends_battles_stuck_past_their_deadline_and_only_those(alice, two_models):
    old, recent = ready_battle(alice), ready_battle(alice, "Another question?")
    stuck(old, turn_deadline_s() + STUCK_GRACE_S + 1)
    stuck(recent, 1)
    assert battles_void_stuck() == 1
    old.refresh_from_db()
    assert (old.status, old.void_reason) == (Battle.Status.VOID, "stuck past the deadline")
    assert set(Answer.objects.filter(turn__battle=old).values_list("status", flat=True)) == {
        Answer.Status.ERROR
    }
    assert Battle.objects.get(pk=recent.pk).status == Battle.Status.GENERATING
    assert battles_void_stuck() == 0  # nothing twice
    # As the worker would end them, so the fixture does not wait for them in vain.
    Answer.objects.filter(turn__battle=recent).update(status=Answer.Status.ERROR)
