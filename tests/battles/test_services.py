"""Battle and vote services on the real database."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from arena.battles.answers import answer_conversation
from arena.battles.prompts import prompt_create
from arena.battles.services import (
    battle_follow_up,
    battle_note_redaction,
    battle_pick_models,
    battle_rejoin,
    battle_start,
    battle_stop,
    turn_mark_shown,
    vote_cast,
)
from arena.catalog.services import params_check
from arena.core.errors import AppendOnlyError, ServiceError
from arena.records.models import Answer, Battle, Prompt, Vote
from tests.helpers import calm_battle, make_model, ready_battle, run_together, wait_for_answers

needs_generation = pytest.mark.usefixtures("generation")


def test_both_sides_get_identical_params_and_system_prompt(alice, two_models):
    prompt, _ = prompt_create(
        text="Explain DNS.",
        category="tech",
        language="en",
        system_prompt="Answer in one paragraph.",
    )
    battle = battle_start(rater=alice, text="Explain DNS.", prompt_id=prompt.pk)
    answers = {a.side: a for a in Answer.objects.filter(turn__battle=battle)}
    requests = {side: answer_conversation(answers[side]) for side in "ab"}
    assert requests["a"].params == requests["b"].params == battle.params
    assert set(battle.params) == {"temperature", "top_p", "max_tokens"}
    assert requests["a"].messages == requests["b"].messages
    assert requests["a"].messages[0].role == "system"
    assert requests["a"].messages[0].content == "Answer in one paragraph."
    assert {requests["a"].model_id, requests["b"].model_id} == {m.model_id for m in two_models}
    assert battle.prompt == prompt
    assert Prompt.objects.get(pk=prompt.pk).usage_count == 1


def test_pairs_are_two_different_models_on_random_sides(db):
    for i in range(4):
        make_model(f"M{i}", f"id-{i}")
    twin = make_model("M0 again", "id-0")  # the same underlying model under another entry
    rng = random.Random(7)
    pairs = [battle_pick_models(rng=rng)[:2] for _ in range(300)]
    assert all(a.model_id != b.model_id for a, b in pairs)
    ids = [f"id-{i}" for i in range(4)]
    ordered = {(a.model_id, b.model_id) for a, b in pairs}
    assert ordered == {(x, y) for x in ids for y in ids if x != y}
    assert twin in {m for pair in pairs for m in pair}


def test_fewer_than_two_models_is_a_clear_error(alice):
    make_model("Lonely", "lonely-1")
    with pytest.raises(ServiceError) as err:
        battle_start(rater=alice, text="hello")
    assert err.value.code == "no_models"
    assert not Battle.objects.exists()


def test_typed_prompts_are_deduplicated_by_normalised_hash(alice, two_models):
    battle_start(rater=alice, text="What is  Love?")
    battle_start(rater=alice, text="what is love?")
    assert Prompt.objects.filter(source=Prompt.Source.RATER).count() == 1


@needs_generation
def test_vote_records_the_whole_event(alice, two_models):
    battle = ready_battle(alice, "Write a haiku about tea.")
    vote = vote_cast(battle_id=battle.pk, rater=alice, choice="a")
    assert vote.rater_pool == alice.rater_pool
    assert vote.prompt_hash == battle.prompt.text_hash
    assert (vote.model_a, vote.model_b) == (battle.model_a, battle.model_b)
    assert vote.params == battle.params and vote.turns == 1
    assert vote.decision_ms >= 0
    for side in (vote.side_a, vote.side_b):
        assert side["output_tokens"] > 0 and side["finish_reason"] == "stop"
        assert side["ttft_ms"][0] is not None and side["total_ms"][0] is not None
        assert set(side["style"]) == {"chars", "headers", "list_items", "bold"}
    answers = {a.side: a for a in Answer.objects.filter(turn__battle=battle)}
    assert vote.side_a["style"]["chars"] == len(answers["a"].text)
    assert Battle.objects.get(pk=battle.pk).status == Battle.Status.VOTED


@needs_generation
def test_decision_time_is_measured_from_when_both_answers_were_shown(
    alice, two_models, monkeypatch
):
    battle = ready_battle(alice)
    turn = battle.turns.get()
    turn.shown_at = turn.shown_at - timedelta(seconds=12)
    turn.save(update_fields=["shown_at"])
    # The vote is cast 12 s after that on the test's own clock, however long the test takes.
    voted_at = turn.shown_at + timedelta(seconds=12)
    monkeypatch.setattr(timezone, "now", lambda: voted_at)
    vote = vote_cast(battle_id=battle.pk, rater=alice, choice="tie")
    assert vote.decision_ms == 12_000


@needs_generation
def test_second_vote_is_rejected(alice, two_models):
    battle = ready_battle(alice)
    vote_cast(battle_id=battle.pk, rater=alice, choice="a")
    with pytest.raises(ServiceError) as err:
        vote_cast(battle_id=battle.pk, rater=alice, choice="b")
    assert err.value.code == "already_voted"
    assert Vote.objects.get().choice == "a"


@needs_generation
def test_the_same_vote_again_is_answered_as_the_first_and_stored_once(alice, two_models):
    # A retry after the reply was lost (a dropped socket, a web process killed mid-vote).
    battle = ready_battle(alice)
    first = vote_cast(battle_id=battle.pk, rater=alice, choice="tie")
    again = vote_cast(battle_id=battle.pk, rater=alice, choice="tie")
    assert again.pk == first.pk
    assert Vote.objects.filter(battle=battle).count() == 1


@needs_generation
def test_unknown_choice_is_rejected(alice, two_models):
    battle = ready_battle(alice)
    with pytest.raises(ServiceError) as err:
        vote_cast(battle_id=battle.pk, rater=alice, choice="c")
    assert err.value.code == "unknown_choice"
    assert not Vote.objects.exists()


@needs_generation
def test_vote_on_someone_elses_battle_is_rejected(alice, bob, two_models):
    battle = ready_battle(alice)
    with pytest.raises(ServiceError) as err:
        vote_cast(battle_id=battle.pk, rater=bob, choice="a")
    assert err.value.code == "not_your_battle"
    with pytest.raises(ServiceError) as err:
        vote_cast(battle_id="not-a-uuid", rater=bob, choice="a")
    assert err.value.code == "unknown_battle"
    assert not Vote.objects.exists()


@needs_generation
@pytest.mark.parametrize("read", [False, True], ids=["just_shown", "read_long_ago"])
def test_two_tabs_voting_at_once_record_exactly_one_vote(alice, two_models, read):
    battle = calm_battle(alice, "Why is the sky blue?") if read else ready_battle(alice)

    outcomes = run_together(
        *(
            lambda c=choice: vote_cast(battle_id=battle.pk, rater=alice, choice=c)
            for choice in ("a", "b")
        )
    )

    assert sorted(outcomes) == ["already_voted", "ok"]
    assert Vote.objects.filter(battle=battle).count() == 1


@needs_generation
def test_votes_cannot_be_changed_or_deleted_through_the_model(alice, two_models):
    battle = ready_battle(alice)
    vote = vote_cast(battle_id=battle.pk, rater=alice, choice="a")
    vote.choice = "b"
    with pytest.raises(AppendOnlyError):
        vote.save()
    with pytest.raises(AppendOnlyError):
        vote.delete()
    assert Vote.objects.get().choice == "a"


@needs_generation
@pytest.mark.skipif(connection.vendor != "postgresql", reason="the trigger is PostgreSQL's")
def test_database_refuses_update_and_delete_of_votes(alice, two_models):
    battle = ready_battle(alice)
    vote_cast(battle_id=battle.pk, rater=alice, choice="a")
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        Vote.objects.update(choice="b")
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        with connection.cursor() as cursor:  # past the ORM, which protects flagged votes
            cursor.execute("DELETE FROM arena_vote")
    assert Vote.objects.get().choice == "a"


@needs_generation
def test_follow_up_needs_a_ready_battle_and_respects_the_turn_limit(alice, two_models, settings):
    settings.ARENA = {**settings.ARENA, "MAX_TURNS": 2}
    battle = ready_battle(alice)
    turn = battle_follow_up(battle_id=battle.pk, rater=alice, text="More, please.")
    assert turn.index == 1
    with pytest.raises(ServiceError) as err:
        battle_follow_up(battle_id=battle.pk, rater=alice, text="Again?")
    assert err.value.code == "answers_incomplete"
    wait_for_answers(battle.pk)
    turn_mark_shown(turn_id=turn.pk)
    with pytest.raises(ServiceError) as err:
        battle_follow_up(battle_id=battle.pk, rater=alice, text="Once more?")
    assert err.value.code == "too_many_turns"


def test_a_model_that_cannot_take_a_shared_parameter_sits_battles_out(alice):
    make_model("Takes All", "all-1")
    make_model("Also All", "all-2")
    fixed = make_model("Fixed Temperature", "fixed-1")
    fixed.supported_params = ["max_tokens", "top_p"]  # refuses a custom temperature
    fixed.save()
    rng = random.Random(3)
    picked = {m for _ in range(100) for m in battle_pick_models(rng=rng)[:2]}
    assert fixed not in picked and len(picked) == 2


def test_params_check_names_the_model_and_the_parameter(db):
    fine = make_model("Fine", "fine-1")
    fixed = make_model("Fixed Temperature", "fixed-1")
    fixed.supported_params = ["max_tokens"]
    with pytest.raises(ServiceError) as err:
        params_check(models=[fine, fixed], params={"temperature": 0.7, "max_tokens": 9})
    assert "Fixed Temperature" in err.value.message and "'temperature'" in err.value.message
    params_check(models=[fine, fixed], params={"temperature": None, "max_tokens": 9})


@needs_generation
def test_stopping_a_voted_battle_is_refused_and_it_stays_voted(alice, two_models):
    battle = ready_battle(alice)
    vote_cast(battle_id=battle.pk, rater=alice, choice="a")
    with pytest.raises(ServiceError) as err:
        battle_stop(battle_id=battle.pk, rater=alice)
    assert err.value.code == "already_voted"
    assert Battle.objects.get(pk=battle.pk).status == Battle.Status.VOTED


@needs_generation
def test_rejoining_a_battle_ends_it_at_once_when_a_worker_died_mid_answer(alice, two_models):
    battle = ready_battle(alice)
    answer = Answer.objects.filter(turn__battle=battle).first()
    # What a worker killed mid-stream leaves: the answer claimed, its text in its stream, and
    # no heartbeat.
    Answer.objects.filter(pk=answer.pk).update(
        status=Answer.Status.RUNNING, started_at=timezone.now() - timedelta(seconds=5)
    )
    Battle.objects.filter(pk=battle.pk).update(status=Battle.Status.GENERATING)
    battle_rejoin(battle_id=battle.pk, rater=alice)  # now, not at the next sweep
    answer.refresh_from_db()
    assert answer.status == Answer.Status.PARTIAL
    battle.refresh_from_db()
    assert (battle.status, battle.void_reason) == (Battle.Status.VOID, "a model server stopped")


def test_a_redaction_is_noted_on_the_battle_once(alice, two_models):
    battle = battle_start(rater=alice, text="Tell me a joke.")
    assert battle_note_redaction(battle_id=battle.pk)
    assert not battle_note_redaction(battle_id=battle.pk)
    reasons = [f["reason"] for f in Battle.objects.get(pk=battle.pk).integrity_flags]
    assert reasons == ["identity_leak"]
