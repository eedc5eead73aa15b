"""A battle whose answers all finished while nobody watched them to the end waits for its
rater: offered again and resumable, ready once watched, and abandoned by the sweep once its
streams are gone. Nothing stays generating past its deadline."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from arena.battles.selectors import battle_in_progress
from arena.battles.services import battle_rejoin, battle_start, turn_mark_shown, vote_cast
from arena.battles.sweep import NOBODY_WATCHED, battles_end_unwatched, battles_void_stuck
from arena.core.errors import ServiceError
from arena.generation.streams import answer_streams, stream_key
from arena.records.models import Battle, Turn
from tests.helpers import wait_for_answers

pytestmark = pytest.mark.usefixtures("generation")


def unwatched(rater, text: str = "What is a monad?") -> Battle:
    """A battle started and never watched: its socket closed at once."""
    battle = battle_start(rater=rater, text=text)
    wait_for_answers(battle.pk)
    return Battle.objects.get(pk=battle.pk)


def streams_gone(battle: Battle) -> None:
    """As Redis expiring them (or losing them in a restart) leaves the battle's streams."""
    keys = [
        stream_key(battle_id=battle.pk, answer_id=pk)
        for pk in battle.turns.get().answers.values_list("pk", flat=True)
    ]
    answer_streams().expire(keys, 0)


def stranded(battle: Battle) -> None:
    """What a battle finished before answers moved it on looks like: generating, its turn's
    deadline long past, both answers complete."""
    Battle.objects.filter(pk=battle.pk).update(status=Battle.Status.GENERATING)
    Turn.objects.filter(battle=battle).update(created_at=timezone.now() - timedelta(hours=1))


def test_answers_finished_with_nobody_watching_leave_the_battle_waiting_until_watched(
    alice, two_models
):
    battle = unwatched(alice)
    assert battle.status == Battle.Status.WAITING
    assert battle_in_progress(rater=alice) == battle
    client = Client()
    client.force_login(alice)
    # The next page load offers to carry it on.
    assert f'data-in-progress="{battle.pk}"' in client.get("/").content.decode()
    with pytest.raises(ServiceError) as refused:
        vote_cast(battle_id=battle.pk, rater=alice, choice="a")  # unseen answers
    assert refused.value.code == "answers_incomplete"
    assert battle_rejoin(battle_id=battle.pk, rater=alice) == battle
    assert turn_mark_shown(turn_id=battle.turns.get().pk).status == Battle.Status.READY
    vote_cast(battle_id=battle.pk, rater=alice, choice="a")


def test_the_sweep_ends_a_generating_battle_whose_answers_finished_long_ago(alice, bob, two_models):
    readable, gone = unwatched(alice), unwatched(bob)
    stranded(readable)
    stranded(gone)
    streams_gone(gone)
    assert battles_void_stuck() == 1
    assert Battle.objects.get(pk=readable.pk).status == Battle.Status.WAITING
    gone.refresh_from_db()
    assert (gone.status, gone.void_reason) == (Battle.Status.VOID, NOBODY_WATCHED)


def test_a_waiting_battle_is_abandoned_once_its_streams_are_gone(alice, bob, two_models):
    battle, kept = unwatched(alice), unwatched(bob)
    assert battles_end_unwatched() == 0
    streams_gone(battle)
    assert battles_end_unwatched() == 1
    battle.refresh_from_db()
    assert (battle.status, battle.void_reason) == (Battle.Status.VOID, NOBODY_WATCHED)
    assert Battle.objects.get(pk=kept.pk).status == Battle.Status.WAITING
    with pytest.raises(ServiceError):
        battle_rejoin(battle_id=battle.pk, rater=alice)
