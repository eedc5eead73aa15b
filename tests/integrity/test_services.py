"""Who may battle, bans, and the review of flags: the integrity services on the real database.

Flags and reviews are append-only rows beside the votes; a review lifts or confirms a flag
without changing it, and only votes left unflagged (or lifted) reach the leaderboard.
"""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction

from accounts.models import User
from arena.battles.services import battle_start, vote_cast
from arena.core.errors import AppendOnlyError, ServiceError
from arena.integrity.models import VoteFlag
from arena.integrity.services import flag_review, rater_ban, rater_unban, vote_flag
from arena.records.models import Battle, Vote
from ranking.services import leaderboard_recompute
from tests.helpers import (
    calm_battle,
    calm_vote,
    flag_reasons,
    integrity_settings,
    make_user,
    ready_battle,
)

needs_generation = pytest.mark.usefixtures("generation")


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


def test_a_rater_banned_while_signed_in_cannot_start_another_battle(alice, two_models):
    signed_in = User.objects.get(pk=alice.pk)  # as the consumer holds it since connect
    rater_ban(rater=alice, by=None, reason="abuse")

    with pytest.raises(ServiceError) as err:
        battle_start(rater=signed_in, text="One more, please.")
    assert err.value.code == "banned"


# Email verification -------------------------------------------------------------------------


def test_crowd_raters_need_a_verified_email_to_battle(two_models):
    unverified = make_user("new@example.com", verified=False)
    internal = make_user("staffer@example.com", verified=False, rater_pool=User.Pool.INTERNAL)

    with pytest.raises(ServiceError) as err:
        battle_start(rater=unverified, text="Hello there.")
    battle = battle_start(rater=internal, text="Hello there.")

    assert err.value.code == "email_unverified"
    assert not Battle.objects.filter(rater=unverified).exists()
    assert battle.rater == internal


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
