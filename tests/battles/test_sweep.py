"""A battle's answers and its end: the turn deadline and the sweep void only what is still
unfinished, and an answer whose worker stopped is handed on once or ends its battle."""

from __future__ import annotations

from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync
from django.utils import timezone

from arena.battles.answers import answer_claim
from arena.battles.ending import battle_void_overdue, turn_deadline_s
from arena.battles.sweep import (
    QUEUED_LOST_S,
    STALLED_MESSAGE,
    STUCK_GRACE_S,
    answers_recover_stalled,
    battles_void_stuck,
)
from arena.generation.streams import HEARTBEAT_TTL_S, START, answer_streams, stream_key
from arena.records.models import Answer, Battle, Turn
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


def running_since(battle: Battle, side: str, seconds_ago: float) -> tuple[Answer, str]:
    """What a worker leaves when it is killed mid-answer: a follow-up's answer running, no
    heartbeat, nothing in its stream yet."""
    Battle.objects.filter(pk=battle.pk).update(status=Battle.Status.GENERATING)
    turn, _ = Turn.objects.get_or_create(battle=battle, index=1, defaults={"text": "And then?"})
    answer = Answer.objects.create(
        turn=turn,
        side=side,
        model=battle.model_for(side),
        status=Answer.Status.RUNNING,
        started_at=timezone.now() - timedelta(seconds=seconds_ago),
    )
    return answer, stream_key(battle_id=battle.pk, answer_id=answer.pk)


def test_an_answer_whose_worker_stopped_before_writing_is_handed_on_once(alice, two_models):
    battle = ready_battle(alice)
    answer, key = running_since(battle, "a", HEARTBEAT_TTL_S + 1)
    assert answers_recover_stalled() == [(answer.pk, "")]
    answer.refresh_from_db()
    assert (answer.status, answer.requeues, answer.started_at) == (Answer.Status.PENDING, 1, None)
    # The second worker stops too: the answer is not handed on again.
    Answer.objects.filter(pk=answer.pk).update(
        status=Answer.Status.RUNNING,
        started_at=timezone.now() - timedelta(seconds=HEARTBEAT_TTL_S + 1),
    )
    assert answers_recover_stalled() == []
    battle.refresh_from_db()
    assert (battle.status, battle.void_reason) == (Battle.Status.VOID, "a model server stopped")


def test_an_answer_whose_worker_stopped_mid_text_fails_and_its_viewers_are_told(alice, two_models):
    battle = ready_battle(alice)
    answer, key = running_since(battle, "b", HEARTBEAT_TTL_S + 1)
    streams = answer_streams()
    async_to_sync(streams.append)(key, "Half an ans")
    assert answers_recover_stalled() == []
    answer.refresh_from_db()
    assert (answer.status, answer.text) == (Answer.Status.PARTIAL, "Half an ans")
    assert answer.error_message == STALLED_MESSAGE
    assert Battle.objects.get(pk=battle.pk).status == Battle.Status.VOID
    entries = async_to_sync(streams.read)({key: START})
    assert [e.done for e in entries] == ["", Answer.Status.PARTIAL]


def test_an_answer_whose_worker_still_beats_or_only_just_began_is_left_alone(alice, two_models):
    battle = ready_battle(alice)
    beating, key = running_since(battle, "a", HEARTBEAT_TTL_S + 1)
    async_to_sync(answer_streams().beat)([key], HEARTBEAT_TTL_S)
    fresh, _ = running_since(battle, "b", 1)
    assert answers_recover_stalled() == []
    statuses = Answer.objects.filter(turn__index=1).values_list("status", flat=True)
    assert set(statuses) == {Answer.Status.RUNNING}
    Answer.objects.filter(turn__battle=battle).update(status=Answer.Status.OK)


def test_an_answer_pending_long_after_its_turn_began_is_sent_again_once(alice, two_models):
    battle = ready_battle(alice)
    Battle.objects.filter(pk=battle.pk).update(status=Battle.Status.GENERATING)
    turn = Turn.objects.create(battle=battle, index=1, text="And then?")
    Turn.objects.filter(pk=turn.pk).update(
        created_at=timezone.now() - timedelta(seconds=QUEUED_LOST_S + 1)
    )
    lost = Answer.objects.create(turn=turn, side="a", model=battle.model_a)  # its task gone
    assert answers_recover_stalled() == [(lost.pk, "")]
    assert answers_recover_stalled() == []  # once
    Answer.objects.filter(pk=lost.pk).update(status=Answer.Status.OK)


def test_a_second_task_for_an_answer_another_worker_is_running_leaves_it_be(alice, two_models):
    battle = ready_battle(alice)
    answer, key = running_since(battle, "a", 1)
    async_to_sync(answer_streams().beat)([key], HEARTBEAT_TTL_S)
    assert answer_claim(answer_id=answer.pk) is None
    answer.refresh_from_db()
    assert answer.status == Answer.Status.RUNNING
    Answer.objects.filter(pk=answer.pk).update(status=Answer.Status.OK)
