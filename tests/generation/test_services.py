"""Generation's writes: the turn deadline voids only what is still unfinished."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from arena.battles.models import Answer, Battle, Turn
from arena.generation.services import battle_void_overdue, turn_deadline_s
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
