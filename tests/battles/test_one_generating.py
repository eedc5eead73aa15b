"""One battle generating per rater, whichever socket or web process started it: a new battle
(or a follow-up on another) abandons the rater's other battle still generating or waiting, and
its answers are stopped where they run, so a script opening and closing sockets cannot keep
dozens of battles generating with nobody watching."""

from __future__ import annotations

import pytest

from arena.battles.services import ABANDONED, battle_follow_up, battle_start
from arena.records.models import Answer, Battle
from tests.helpers import make_model, ready_battle, run_together, wait_until

pytestmark = pytest.mark.usefixtures("generation")


def stalling_pair() -> None:
    # Neither ends by itself before the deadline: only a stop ends their answers early.
    make_model("Stuck Heron", "stuck-heron", misbehaviour="stall")
    make_model("Slow Heron", "slow-heron", tokens_per_s=4, answer_tokens=400)


def answers_of(battle: Battle) -> list[Answer]:
    return list(Answer.objects.filter(turn__battle=battle))


def test_a_new_battle_abandons_the_one_still_generating_and_stops_its_answers(alice, db):
    stalling_pair()
    first = battle_start(rater=alice, text="Tell me a long story.")
    wait_until(lambda: {a.status for a in answers_of(first)} == {Answer.Status.RUNNING})
    second = battle_start(rater=alice, text="Another long story.")
    first.refresh_from_db()
    assert (first.status, first.void_reason) == (Battle.Status.VOID, ABANDONED)
    assert Battle.objects.get(pk=second.pk).status == Battle.Status.GENERATING
    # Stopped where they ran (within a heartbeat), not left to reach their deadline.
    wait_until(lambda: all(a.is_terminal for a in answers_of(first)))
    assert {a.error_kind for a in answers_of(first)} == {"stopped"}


def test_two_starts_at_once_leave_one_battle_of_the_rater_unfinished(alice, two_models):
    outcomes = run_together(
        lambda: battle_start(rater=alice, text="First at once?"),
        lambda: battle_start(rater=alice, text="Second at once?"),
    )
    assert outcomes == ["ok", "ok"]
    statuses = sorted(Battle.objects.filter(rater=alice).values_list("status", flat=True))
    assert statuses.count(Battle.Status.VOID) == 1
    assert Battle.objects.filter(rater=alice, void_reason=ABANDONED).count() == 1


def test_a_follow_up_abandons_the_raters_other_unfinished_battle_but_not_a_ready_one(
    alice, two_models
):
    older = ready_battle(alice)
    newer = battle_start(rater=alice, text="Something else?")
    assert Battle.objects.get(pk=older.pk).status == Battle.Status.READY  # kept for its vote
    battle_follow_up(battle_id=older.pk, rater=alice, text="And in one line?")
    newer.refresh_from_db()
    assert (newer.status, newer.void_reason) == (Battle.Status.VOID, ABANDONED)
    assert Battle.objects.get(pk=older.pk).status != Battle.Status.VOID
