"""What the admin's review screens ask about flags, raters and gold items.

The integrity writes live in ``arena.services`` and ``arena.gold``; this module answers the
questions those screens need, with the same definitions the services count by (a flag is open
until an admin lifts it; gold agreement is single-turn only), so a number an admin reads is the
number that decides whether a vote counts. ``gold_set_active`` is the one write: the services
can mark an item gold but had no way to withdraw one.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.db.models import Count, Exists, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from accounts.models import User
from arena import gold
from arena.models import GoldItem, Vote, VoteFlag


def flag_lifted() -> Exists:
    """For annotating VoteFlag rows: has an admin lifted this flag?"""
    return Exists(VoteFlag.objects.filter(review_of=OuterRef("pk"), action=VoteFlag.Action.LIFT))


def open_flags() -> QuerySet[VoteFlag]:
    """Flags (not reviews) no admin has lifted: each keeps its vote out of the leaderboard."""
    return VoteFlag.objects.filter(action=VoteFlag.Action.FLAG).exclude(
        reviews__action=VoteFlag.Action.LIFT
    )


def vote_flagged() -> Exists:
    """For annotating Vote rows: does an open flag keep this vote from counting?"""
    return Exists(open_flags().filter(vote=OuterRef("pk")))


def _per_rater(votes: QuerySet[Vote]) -> Coalesce:
    # A grouped subquery rather than Count() over a join: two counts over the same join would
    # multiply each other, and raters without votes still need a 0.
    counted = votes.order_by().values("rater").annotate(n=Count("pk")).values("n")[:1]
    return Coalesce(Subquery(counted), 0)


def raters_with_vote_counts(users: QuerySet[User]) -> QuerySet[User]:
    """``votes_total`` and ``votes_flagged`` (votes an open flag keeps out) on each user."""
    votes = Vote.objects.filter(rater=OuterRef("pk"))
    return users.annotate(
        votes_total=_per_rater(votes), votes_flagged=_per_rater(votes.filter(vote_flagged()))
    )


@dataclass(frozen=True)
class Agreement:
    answered: int
    agreed: int

    @property
    def share(self) -> float | None:
        return self.agreed / self.answered if self.answered else None

    def __str__(self) -> str:
        if not self.answered:
            return "no gold votes"
        return f"{self.agreed} of {self.answered} ({self.share:.0%})"


def rater_gold_agreement(*, rater: User) -> Agreement:
    return Agreement(*gold.rater_agreement(rater=rater))


def gold_item_agreement(*, item: GoldItem) -> Agreement:
    """How the votes on an item's replays went; the same rule as ``gold.rater_agreement``."""
    source = item.source
    right = source.model_a_id if item.correct_side == "a" else source.model_b_id
    # Sides are shuffled per replay, so agreement is the chosen *model*, not the chosen side.
    votes = Vote.objects.filter(battle__gold=item, turns=1)
    agreed = votes.filter(Q(choice="a", model_a_id=right) | Q(choice="b", model_b_id=right))
    return Agreement(votes.count(), agreed.count())


def gold_items_with_use(items: QuerySet[GoldItem]) -> QuerySet[GoldItem]:
    """``times_served``: battles that replayed the item."""
    return items.annotate(times_served=Count("served", distinct=True))


@transaction.atomic
def gold_set_active(*, item_ids: list[int], active: bool) -> int:
    """Serve (or stop serving) gold items; returns how many changed. Past replays and their
    votes stay as they are: agreement already measured remains measured."""
    return GoldItem.objects.filter(pk__in=item_ids).exclude(active=active).update(active=active)
