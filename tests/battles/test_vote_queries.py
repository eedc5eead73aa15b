"""A vote: what it costs the database, and that integrity's one read counts what its separate
reads count."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import User
from arena.battles.consumers import _vote_cast
from arena.battles.services import battle_start, vote_cast
from arena.core.errors import ServiceError
from arena.integrity.models import VoteFlag
from arena.integrity.selectors import counted_votes, rater_gold_agreement, vote_tallies
from arena.records.models import Answer, Battle, GoldItem, Turn, Vote
from tests.helpers import make_model
from tests.votes import logged_vote

# The socket's vote, its reveal included: the transaction's savepoint and its release (BEGIN
# and COMMIT outside a test); the rater, the battle and its prompt locked in one statement, its
# models read with it; the answers with their turns; the vote; integrity's tallies (every count
# in one statement); the flags (one insert, only when there are any); the battle's status. The
# reveal reads nothing. Before issue 28 the same vote made 22 (20 statements, 15 of them reads).
VOTE_QUERIES = 8
SELECTS = 3


def _ready(rater: User, text: str) -> Battle:
    """A battle ready for a vote, written without generation: its answers (the same text on
    both sides, read at once, so the vote is flagged twice) and its turn shown just now."""
    battle = battle_start(rater=rater, text=text)
    Answer.objects.filter(turn__battle=battle).update(
        status=Answer.Status.OK, text="An answer.", output_tokens=3
    )
    Turn.objects.filter(battle=battle).update(shown_at=timezone.now())
    Battle.objects.filter(pk=battle.pk).update(status=Battle.Status.READY)
    return battle


def test_a_vote_locks_reads_twice_and_writes_once_per_row(alice, two_models):
    _ready(alice, "Warm up.")  # this process's start cache holds the catalog and draw
    battle = _ready(alice, "Explain DNS.")
    with CaptureQueriesContext(connection) as ctx:
        reveal = _vote_cast(battle_id=battle.pk, rater=alice, choice="a")
    assert len(ctx.captured_queries) <= VOTE_QUERIES
    selects = [q["sql"] for q in ctx.captured_queries if q["sql"].startswith("SELECT")]
    assert len(selects) == SELECTS
    vote = Vote.objects.select_related("model_a", "model_b").get(battle=battle)
    assert reveal == {
        "battle": str(battle.pk),
        "choice": "a",
        "a": {"name": vote.model_a.public_name, "organisation": vote.model_a.organisation},
        "b": {"name": vote.model_b.public_name, "organisation": vote.model_b.organisation},
    }
    flags = VoteFlag.objects.filter(vote=vote).values_list("reason", flat=True)
    assert sorted(flags) == ["identical_answers", "too_fast"]
    battle.refresh_from_db()
    assert battle.status == Battle.Status.VOTED


def test_the_same_vote_again_is_answered_as_the_first(alice, two_models):
    battle = _ready(alice, "Explain DNS.")
    first = _vote_cast(battle_id=battle.pk, rater=alice, choice="b")
    assert _vote_cast(battle_id=battle.pk, rater=alice, choice="b") == first
    assert Vote.objects.filter(battle=battle).count() == 1


def test_the_tallies_count_what_each_definition_counts(alice, bob):
    m1, m2 = make_model("Model One", "m-1"), make_model("Model Two", "m-2")
    source = logged_vote(bob, (m1, m2), ["Is 7 prime?"])
    item = GoldItem.objects.create(source=source.battle, correct_side="a")

    def gold(choice: str, texts: list[str]) -> Vote:
        vote = logged_vote(alice, (m1, m2), texts, choice=choice)
        Battle.objects.filter(pk=vote.battle_id).update(gold=item)
        return vote

    logged_vote(alice, (m1, m2), ["Explain DNS."])  # counted
    flagged = logged_vote(alice, (m2, m1), ["Explain DNS."])
    VoteFlag.objects.create(vote=flagged, reason=VoteFlag.Reason.TOO_FAST)
    lifted = logged_vote(alice, (m2, m1), ["Explain DNS."])
    flag = VoteFlag.objects.create(vote=lifted, reason=VoteFlag.Reason.TOO_FAST)
    VoteFlag.objects.create(
        vote=lifted, reason=flag.reason, action=VoteFlag.Action.LIFT, review_of=flag
    )
    logged_vote(bob, (m1, m2), ["Explain DNS."])  # counted, someone else's
    gold("a", ["Is 7 prime?"])  # agreed: model A is the source's side A
    gold("b", ["Is 7 prime?"])
    gold("a", ["Is 7 prime?", "And 9?"])  # a follow-up leaves the gold answer behind
    vote = logged_vote(alice, (m1, m2), ["Explain DNS."])
    since = vote.created_at.replace(hour=0, minute=0, second=0, microsecond=0)

    tallies = vote_tallies(vote=vote, since=since)

    others = counted_votes().exclude(pk=vote.pk)
    on_prompt = others.filter(prompt_hash=vote.prompt_hash)
    assert tallies.on_prompt == on_prompt.count() == 3
    assert tallies.rater_on_prompt == on_prompt.filter(rater=alice).count() == 2
    today = others.filter(rater=alice, created_at__gte=since).count()
    assert tallies.rater_since == today == 5
    assert tallies.gold == rater_gold_agreement(rater=alice) == (2, 1)
    # Compiled once, bound again: another vote, another rater, another time.
    theirs = logged_vote(bob, (m1, m2), ["Explain DNS."])
    again = vote_tallies(vote=theirs, since=timezone.now() + timedelta(hours=1))
    assert again == (4, 1, 0, (0, 0))


def test_a_refused_vote_says_why_as_before_a_ban_first(alice, bob, two_models):
    """The one locking statement finds only the rater's own battle; the refusals are the
    ones a vote always gave, in the same order."""
    battle = _ready(alice, "Explain DNS.")

    def refusal(rater: User, battle_id: object) -> str:
        with pytest.raises(ServiceError) as err:
            vote_cast(battle_id=battle_id, rater=rater, choice="a")
        return err.value.code

    assert refusal(bob, battle.pk) == "not_your_battle"
    assert refusal(alice, uuid.uuid4()) == "unknown_battle"
    assert refusal(alice, "not a battle id") == "unknown_battle"
    User.objects.filter(pk=bob.pk).update(banned_at=timezone.now())
    assert refusal(bob, battle.pk) == "banned"
    assert refusal(bob, "not a battle id") == "banned"
    User.objects.filter(pk=alice.pk).update(banned_at=timezone.now())
    assert refusal(alice, battle.pk) == "banned"
    assert not Vote.objects.exists()
