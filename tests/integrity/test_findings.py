"""Vote-time integrity findings, raised by the real services on the real database.

Every vote is recorded; a defence only adds VoteFlag rows beside it. Votes that should pass
every defence are made "calm": their turn was shown long enough ago to have been read.
"""

from __future__ import annotations

import pytest

from accounts.models import User
from arena.battles.services import battle_follow_up, battle_start, turn_mark_shown, vote_cast
from arena.integrity.checks import asks_identity
from arena.integrity.models import VoteFlag
from arena.integrity.selectors import rater_gold_agreement
from arena.records.models import Vote
from tests.helpers import (
    calm_battle,
    calm_vote,
    choose,
    flag_reasons,
    gold_battle,
    integrity_settings,
    make_gold_items,
    make_model,
    make_user,
    ready_battle,
    run_together,
    shown_ago,
    wait_for_answers,
)

needs_generation = pytest.mark.usefixtures("generation")


def raters(n: int, prefix: str = "rater") -> list[User]:
    return [make_user(f"{prefix}{i}@example.com") for i in range(n)]


# Too fast -----------------------------------------------------------------------------------


@needs_generation
def test_a_vote_faster_than_the_answers_can_be_read_is_flagged_too_fast(alice):
    make_model("Long Winded", "lw-1", answer_tokens=400)
    make_model("Also Long", "al-2", answer_tokens=400, style="markdown")

    at_once = ready_battle(alice, "Explain the history of Rome.")
    at_once_vote = vote_cast(battle_id=at_once.pk, rater=alice, choice="a")

    # Three seconds is past the minimum, but not enough for long answers on both sides.
    skimmed = ready_battle(alice, "Explain the history of Athens.")
    shown_ago(skimmed, 3)
    skimmed_vote = vote_cast(battle_id=skimmed.pk, rater=alice, choice="b")

    read = calm_battle(alice, "Explain the history of Sparta.")
    read_vote = vote_cast(battle_id=read.pk, rater=alice, choice="tie")

    assert flag_reasons(at_once_vote) == ["too_fast"]
    assert flag_reasons(skimmed_vote) == ["too_fast"]
    assert skimmed_vote.decision_ms >= 3000
    detail = VoteFlag.objects.get(vote=skimmed_vote).detail
    floor = int(detail.rsplit("at least ", 1)[1].split()[0])
    assert floor > 3000 > 2000  # long answers raise the floor above the minimum
    assert flag_reasons(read_vote) == []
    assert Vote.objects.count() == 3  # flagged votes are still recorded


# Identical answers ----------------------------------------------------------------------------


@needs_generation
def test_identical_answers_flag_the_vote(alice, two_models):
    battle = battle_start(rater=alice, text="Say hello.")
    wait_for_answers(battle.pk)
    turn = battle.turns.get()
    turn.answers.update(text="Hello! How can I help you today?")
    turn_mark_shown(turn_id=turn.pk)
    shown_ago(battle, 600)

    vote = vote_cast(battle_id=battle.pk, rater=alice, choice="tie")

    assert flag_reasons(vote) == ["identical_answers"]
    assert calm_vote(alice, "Say goodbye.").flags.count() == 0


# Prompt caps --------------------------------------------------------------------------------


@needs_generation
def test_votes_past_the_cap_on_one_prompt_are_flagged(settings, two_models):
    integrity_settings(settings, PROMPT_BATTLE_CAP=2)
    first, second, third = raters(3)
    hasty = make_user("hasty@example.com")
    text = "Write a limerick about a cat."

    # A vote that does not count does not use up the prompt's cap.
    hasty_vote = vote_cast(battle_id=ready_battle(hasty, text).pk, rater=hasty, choice="a")
    votes = [calm_vote(r, text) for r in (first, second, third)]

    assert flag_reasons(hasty_vote) == ["too_fast"]
    assert [flag_reasons(v) for v in votes] == [[], [], ["prompt_cap"]]
    assert "the cap is 2" in votes[2].flags.get().detail
    assert flag_reasons(calm_vote(third, "Write a limerick about a dog.")) == []


@needs_generation
def test_one_rater_reusing_a_prompt_past_the_cap_is_flagged(settings, alice, bob, two_models):
    integrity_settings(settings, RATER_PROMPT_REUSE_CAP=2, PROMPT_BATTLE_CAP=50)
    text = "What is the capital of Australia?"

    mine = [calm_vote(alice, text) for _ in range(3)]
    theirs = calm_vote(bob, text)

    assert [flag_reasons(v) for v in mine] == [[], [], ["prompt_cap"]]
    assert "the rater used this prompt in 2 counted votes" in mine[2].flags.get().detail
    assert flag_reasons(theirs) == []


# Daily cap ----------------------------------------------------------------------------------


@needs_generation
def test_votes_past_the_daily_cap_are_flagged_but_recorded(settings, alice, bob, two_models):
    integrity_settings(settings, DAILY_VOTE_CAP=2)

    votes = [calm_vote(alice, f"Name a prime number above {n}.") for n in (10, 20, 30, 40)]
    other = calm_vote(bob, "Name a prime number above 50.")

    assert [flag_reasons(v) for v in votes] == [[], [], ["daily_cap"], ["daily_cap"]]
    assert VoteFlag.objects.filter(reason="daily_cap").first().created_by is None
    assert Vote.objects.filter(rater=alice).count() == 4
    assert flag_reasons(other) == []


# Identity questions -------------------------------------------------------------------------


@needs_generation
def test_a_prompt_asking_the_model_who_it_is_flags_the_vote(alice, two_models):
    battle = calm_battle(alice, "What model are you?")

    vote = vote_cast(battle_id=battle.pk, rater=alice, choice="a")

    assert [f["reason"] for f in battle.integrity_flags] == ["identity_question"]
    assert flag_reasons(vote) == ["identity_question"]


@needs_generation
def test_an_identity_question_in_a_follow_up_flags_the_vote(alice, two_models):
    battle = ready_battle(alice, "Tell me about tea.")
    turn = battle_follow_up(battle_id=battle.pk, rater=alice, text="Wer bist du?")
    wait_for_answers(battle.pk)
    turn_mark_shown(turn_id=turn.pk)
    shown_ago(battle, 600)

    vote = vote_cast(battle_id=battle.pk, rater=alice, choice="b")

    assert flag_reasons(vote) == ["identity_question"]
    assert "turn 2" in vote.flags.get().detail


@pytest.mark.parametrize(
    "text",
    [
        "What model are you?",
        "which AI model is this",
        "Who made you?",
        "Who are you, really?",
        "你是谁？",
        "请问你是什么模型",
        "是谁开发了你？",
        "¿Quién eres?",
        "¿Qué modelo eres?",
        "¿Quién te creó?",
        "Qui es-tu ?",
        "Quel modèle es-tu ?",
        "Qui t'a créé ?",
        "Wer bist du?",
        "Welches Modell bist du?",
        "Wer hat dich trainiert?",
        "あなたは誰ですか？",
        "これは何のモデルですか",
    ],
)
def test_identity_questions_are_recognised_in_several_languages(settings, text):
    assert asks_identity(text)


@pytest.mark.parametrize(
    "text",
    [
        "What is a monad?",
        "Write a story about who we are as a species.",
        "¿Qué es un modelo de lenguaje?",
        "Wer war Goethe?",
        "東京の人口は？",
    ],
)
def test_ordinary_prompts_are_not_identity_questions(settings, text):
    assert not asks_identity(text)


# Gold agreement -----------------------------------------------------------------------------


@needs_generation
def test_a_rater_who_disagrees_on_gold_battles_gets_low_agreement_flags(settings, two_models):
    integrity_settings(settings, GOLD_SHARE=1.0, GOLD_MIN_ANSWERED=2, GOLD_MIN_AGREEMENT=0.6)
    curator = make_user("curator@example.com", rater_pool=User.Pool.INTERNAL)
    make_gold_items(curator, 2)
    crowd = make_user("crowd@example.com")

    votes = []
    for _ in range(2):
        battle = gold_battle(crowd)
        votes.append(
            vote_cast(battle_id=battle.pk, rater=crowd, choice=choose(battle, right=False))
        )
    settings.INTEGRITY = {**settings.INTEGRITY, "GOLD_SHARE": 0.0}
    next_vote = calm_vote(crowd, "Summarise the plot of Hamlet.")

    assert rater_gold_agreement(rater=crowd) == (2, 0)
    # One gold answer was too few to judge when it was cast; once the rater falls below the
    # agreement bar, their earlier votes are flagged too.
    assert flag_reasons(votes[0]) == ["low_agreement"]
    assert flag_reasons(votes[1]) == ["low_agreement"]
    assert flag_reasons(next_vote) == ["low_agreement"]
    assert next_vote.flags.get().detail == "agreed on 0 of 2 gold battles"


@needs_generation
def test_a_rater_who_agrees_on_gold_battles_is_not_flagged(settings, two_models):
    integrity_settings(settings, GOLD_SHARE=1.0, GOLD_MIN_ANSWERED=2, GOLD_MIN_AGREEMENT=0.6)
    curator = make_user("curator@example.com", rater_pool=User.Pool.INTERNAL)
    make_gold_items(curator, 2, correct_side="b")
    crowd = make_user("crowd@example.com")

    for _ in range(2):
        battle = gold_battle(crowd)
        vote_cast(battle_id=battle.pk, rater=crowd, choice=choose(battle, right=True))
    settings.INTEGRITY = {**settings.INTEGRITY, "GOLD_SHARE": 0.0}
    next_vote = calm_vote(crowd, "Summarise the plot of Macbeth.")

    assert rater_gold_agreement(rater=crowd) == (2, 2)
    assert flag_reasons(next_vote) == []


# Races --------------------------------------------------------------------------------------


@needs_generation
def test_one_rater_racing_past_the_daily_cap_gets_exactly_one_counted_vote(
    settings, alice, two_models
):
    integrity_settings(settings, DAILY_VOTE_CAP=1)
    battles = [calm_battle(alice, f"Give me a fun fact about {x}.") for x in ("owls", "bees")]

    outcomes = run_together(
        *(lambda b=battle: vote_cast(battle_id=b.pk, rater=alice, choice="a") for battle in battles)
    )

    votes = list(Vote.objects.filter(rater=alice))
    assert outcomes == ["ok", "ok"] and len(votes) == 2
    assert sorted(flag_reasons(v) for v in votes) == [[], ["daily_cap"]]


@needs_generation
def test_many_accounts_racing_one_prompt_past_its_cap_count_only_the_cap(settings, two_models):
    integrity_settings(settings, PROMPT_BATTLE_CAP=2)
    accounts = raters(4, prefix="sock")
    battles = [calm_battle(r, "Rate my startup idea: uber for cats.") for r in accounts]

    outcomes = run_together(
        *(
            lambda b=battle, r=rater: vote_cast(battle_id=b.pk, rater=r, choice="a")
            for battle, rater in zip(battles, accounts, strict=True)
        )
    )

    votes = list(Vote.objects.all())
    assert outcomes == ["ok"] * 4 and len(votes) == 4
    assert sorted(flag_reasons(v) for v in votes) == [[], [], ["prompt_cap"], ["prompt_cap"]]
