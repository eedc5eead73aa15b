"""Vote-time integrity flags, raised by the real services on the real database.

Every vote is recorded; a defence only adds VoteFlag rows beside it. Votes that should pass
every defence are made "calm": their turn was shown long enough ago to have been read.
"""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from accounts.models import User
from arena.battles.models import Battle, Turn, Vote
from arena.battles.services import battle_follow_up, battle_start, turn_mark_shown, vote_cast
from arena.core.errors import AppendOnlyError, ServiceError
from arena.integrity.checks import asks_identity
from arena.integrity.gold import gold_draw, gold_mark
from arena.integrity.models import VoteFlag
from arena.integrity.selectors import rater_gold_agreement
from arena.integrity.services import flag_review, rater_ban, rater_unban, vote_flag
from ranking.services import leaderboard_recompute
from tests.conftest import make_model, make_user, ready_battle, wait_for_answers

needs_generation = pytest.mark.usefixtures("generation")


def integrity_settings(settings, **overrides) -> None:
    settings.INTEGRITY = {**settings.INTEGRITY, **overrides}


def shown_ago(battle: Battle, seconds: float) -> None:
    """Move the vote clock back, as if the rater had been reading for ``seconds``."""
    Turn.objects.filter(battle=battle).update(shown_at=timezone.now() - timedelta(seconds=seconds))


def calm_battle(rater: User, text: str) -> Battle:
    battle = ready_battle(rater, text)
    shown_ago(battle, 600)
    return battle


def calm_vote(rater: User, text: str, choice: str = "a") -> Vote:
    battle = calm_battle(rater, text)
    return vote_cast(battle_id=battle.pk, rater=rater, choice=choice)


def flag_reasons(vote: Vote) -> list[str]:
    return sorted(
        VoteFlag.objects.filter(vote=vote, action=VoteFlag.Action.FLAG).values_list(
            "reason", flat=True
        )
    )


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


# Bans ---------------------------------------------------------------------------------------


@needs_generation
def test_banning_a_rater_flags_past_votes_and_refuses_new_ones(alice, bob, two_models):
    staff = make_user("mod@example.com", is_staff=True)
    past = [calm_vote(alice, f"Describe colour number {n}.") for n in range(2)]
    pending = calm_battle(alice, "Describe the colour teal.")
    bystander = calm_vote(bob, "Describe the colour red.")

    flagged = rater_ban(rater=alice, by=staff, reason="vote farming")
    again = rater_ban(rater=alice, by=staff, reason="still farming")
    alice.refresh_from_db()

    assert (flagged, again) == (2, 0)
    assert alice.is_banned and alice.ban_reason == "vote farming"
    for vote in past:
        flag = vote.flags.get()
        assert (flag.reason, flag.created_by, flag.detail) == (
            "banned_rater",
            staff,
            "vote farming",
        )
    assert flag_reasons(bystander) == []
    with pytest.raises(ServiceError) as voting:
        vote_cast(battle_id=pending.pk, rater=alice, choice="a")
    with pytest.raises(ServiceError) as starting:
        battle_start(rater=alice, text="Describe the colour blue.")
    assert voting.value.code == starting.value.code == "banned"
    assert not Vote.objects.filter(battle=pending).exists()

    rater_unban(rater=alice)
    alice.refresh_from_db()
    later = calm_vote(alice, "Describe the colour green.")

    assert not alice.is_banned
    assert flag_reasons(later) == []
    assert all(flag_reasons(v) == ["banned_rater"] for v in past)  # until an admin lifts them


@needs_generation
def test_a_rater_banned_while_signed_in_cannot_start_another_battle(alice, two_models):
    signed_in = User.objects.get(pk=alice.pk)  # as the consumer holds it since connect
    rater_ban(rater=alice, by=None, reason="abuse")

    with pytest.raises(ServiceError) as err:
        battle_start(rater=signed_in, text="One more, please.")
    assert err.value.code == "banned"


# Gold agreement -----------------------------------------------------------------------------


def make_gold_items(curator: User, n: int, correct_side: str = "a") -> list:
    items = []
    for i in range(n):
        battle = ready_battle(curator, f"Is {i * 7 + 3} a prime number?")
        items.append(gold_mark(battle_id=battle.pk, correct_side=correct_side))
    return items


def gold_battle(rater: User) -> Battle:
    prompt = gold_draw(rater=rater)
    assert prompt is not None, "no gold item was drawn"
    battle = battle_start(rater=rater, text=prompt.text, prompt_id=prompt.pk)
    assert battle.gold_id is not None
    wait_for_answers(battle.pk)
    turn_mark_shown(turn_id=battle.turns.get().pk)
    shown_ago(battle, 600)
    return Battle.objects.select_related("gold__source").get(pk=battle.pk)


def choose(battle: Battle, *, right: bool) -> str:
    source = battle.gold.source
    better = source.model_a_id if battle.gold.correct_side == "a" else source.model_b_id
    better_side = "a" if battle.model_a_id == better else "b"
    return better_side if right else {"a": "b", "b": "a"}[better_side]


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


# Email verification -------------------------------------------------------------------------


@needs_generation
def test_crowd_raters_need_a_verified_email_to_battle(two_models):
    unverified = make_user("new@example.com", verified=False)
    internal = make_user("staffer@example.com", verified=False, rater_pool=User.Pool.INTERNAL)

    with pytest.raises(ServiceError) as err:
        battle_start(rater=unverified, text="Hello there.")
    battle = battle_start(rater=internal, text="Hello there.")

    assert err.value.code == "email_unverified"
    assert not Battle.objects.filter(rater=unverified).exists()
    assert battle.rater == internal


@needs_generation
def test_verification_can_be_switched_off_for_crowd_raters(settings, two_models):
    integrity_settings(settings, REQUIRE_VERIFIED_EMAIL_FOR_CROWD=False)
    unverified = make_user("new@example.com", verified=False)

    assert battle_start(rater=unverified, text="Hello there.").rater == unverified


# The leaderboard ----------------------------------------------------------------------------


@needs_generation
def test_flagged_votes_are_left_out_of_the_leaderboard_until_lifted(alice, bob, two_models):
    staff = make_user("mod@example.com", is_staff=True)
    clean = [calm_vote(alice, "Explain recursion."), calm_vote(bob, "Explain iteration.")]
    hasty = vote_cast(
        battle_id=ready_battle(alice, "Explain closures.").pk, rater=alice, choice="b"
    )
    curious = calm_vote(bob, "Who are you?")
    admin_flagged = calm_vote(bob, "Explain generators.")
    vote_flag(vote=admin_flagged, by=staff, reason="admin", detail="copy-paste spam")

    before = leaderboard_recompute(rounds=20, min_votes=1)

    assert [flag_reasons(v) for v in clean] == [[], []]
    assert flag_reasons(hasty) == ["too_fast"] and flag_reasons(curious) == ["identity_question"]
    assert before.votes_used == 2
    assert before.votes_excluded == {"too_fast": 1, "identity_question": 1, "admin": 1}

    flag = hasty.flags.get()
    confirmed = flag_review(
        flag=admin_flagged.flags.get(), by=staff, action="confirm", note="spam indeed"
    )
    lift = flag_review(flag=flag, by=staff, action="lift", note="a fast reader")
    after = leaderboard_recompute(rounds=20, min_votes=1)

    assert after.votes_used == 3
    assert after.votes_excluded == {"identity_question": 1, "admin": 1}
    assert (lift.review_of, lift.action, lift.created_by) == (flag, "lift", staff)
    assert confirmed.action == "confirm"
    unchanged = VoteFlag.objects.get(pk=flag.pk)
    assert (unchanged.action, unchanged.reason, unchanged.detail) == (
        "flag",
        "too_fast",
        flag.detail,
    )
    with pytest.raises(AppendOnlyError):
        unchanged.save()
    with pytest.raises(AppendOnlyError):
        unchanged.delete()


@needs_generation
@pytest.mark.skipif(connection.vendor != "postgresql", reason="triggers are PostgreSQL's")
def test_database_refuses_update_and_delete_of_flags(alice, two_models):
    vote = vote_cast(battle_id=ready_battle(alice, "Explain closures.").pk, rater=alice, choice="a")
    assert flag_reasons(vote) == ["too_fast"]

    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        VoteFlag.objects.update(action="lift")
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        VoteFlag.objects.all().delete()


@needs_generation
def test_reviews_need_a_note_and_cannot_review_reviews(alice, two_models):
    staff = make_user("mod@example.com", is_staff=True)
    vote = calm_vote(alice, "Explain monads.")
    flag = vote_flag(vote=vote, by=staff, detail="suspicious")

    with pytest.raises(ServiceError, match="note"):
        flag_review(flag=flag, by=staff, action="lift", note="   ")
    review = flag_review(flag=flag, by=staff, action="lift", note="fine after all")
    with pytest.raises(ServiceError, match="not a review"):
        flag_review(flag=review, by=staff, action="confirm", note="no")
    with pytest.raises(ServiceError):
        flag_review(flag=flag, by=staff, action="flag", note="again")
    assert VoteFlag.objects.count() == 2


# Races --------------------------------------------------------------------------------------


def run_together(*calls) -> list[str]:
    """Start every call at the same instant, each in its own thread and connection."""
    barrier = threading.Barrier(len(calls))
    outcomes: list[str] = []

    def run(call) -> None:
        barrier.wait()
        try:
            call()
            outcomes.append("ok")
        except ServiceError as exc:
            outcomes.append(exc.code)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(c,)) for c in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return outcomes


@needs_generation
def test_two_votes_at_once_on_one_battle_record_exactly_one(alice, two_models):
    battle = calm_battle(alice, "Why is the sky blue?")

    outcomes = run_together(
        *(
            lambda c=choice: vote_cast(battle_id=battle.pk, rater=alice, choice=c)
            for choice in ("a", "b")
        )
    )

    assert sorted(outcomes) == ["already_voted", "ok"]
    assert Vote.objects.filter(battle=battle).count() == 1


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
