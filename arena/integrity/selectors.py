"""Reads of integrity: which votes count, raters' and gold items' agreement, identity terms.

``open_flags`` is the one definition of "a vote that does not count": services, the admin and
the leaderboard all count by it, so a number an admin reads is the number that decides.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import NamedTuple

from django.conf import settings
from django.db import connection
from django.db.models import Case, Count, Exists, F, OuterRef, Q, QuerySet, Subquery, When
from django.db.models.functions import Coalesce

from accounts.models import User
from arena.catalog.models import ModelEntry
from arena.integrity.models import VoteFlag
from arena.records.models import Answer, GoldItem, Vote


def flag_lifted() -> Exists:
    """For annotating VoteFlag rows: has an admin lifted this flag?"""
    return Exists(VoteFlag.objects.filter(review_of=OuterRef("pk"), action=VoteFlag.Action.LIFT))


def open_flags() -> QuerySet[VoteFlag]:
    """Flags (not reviews) no admin has lifted: each keeps its vote out of the leaderboard."""
    return VoteFlag.objects.filter(action=VoteFlag.Action.FLAG).exclude(flag_lifted())


def flag_open() -> Exists:
    """For annotating VoteFlag rows: is this row an open flag?"""
    return Exists(open_flags().filter(pk=OuterRef("pk")))


def vote_flagged(reason: str | None = None) -> Exists:
    """For annotating or filtering Vote rows: does an open flag (of ``reason``, if given) keep
    this vote from counting?"""
    flags = open_flags().filter(vote=OuterRef("pk"))
    return Exists(flags if reason is None else flags.filter(reason=reason))


def counted_votes(*, include_simulated: bool = False) -> QuerySet[Vote]:
    """Votes kept out by no open flag and, unless asked for, not the demo's simulated ones."""
    votes = Vote.objects.exclude(vote_flagged())
    return votes if include_simulated else votes.filter(simulated=False)


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


class Agreement(NamedTuple):
    answered: int
    agreed: int

    @property
    def share(self) -> float | None:
        return self.agreed / self.answered if self.answered else None

    def __str__(self) -> str:
        if not self.answered:
            return "no gold votes"
        return f"{self.agreed} of {self.answered} ({self.share:.0%})"


def _gold_votes(votes: QuerySet[Vote]) -> tuple[QuerySet[Vote], QuerySet[Vote]]:
    """Of ``votes``, those on gold replays, and those of them that agreed. Single-turn only,
    since a follow-up leaves the gold answer behind; sides are shuffled per replay, so
    agreement is the chosen *model*."""
    gold = "battle__gold__"
    votes = votes.filter(battle__gold__isnull=False, turns=1).annotate(
        right=Case(
            When(**{f"{gold}correct_side": Answer.Side.A}, then=F(f"{gold}source__model_a")),
            default=F(f"{gold}source__model_b"),
        )
    )
    agreed = votes.filter(
        Q(choice=Vote.Choice.A, model_a=F("right")) | Q(choice=Vote.Choice.B, model_b=F("right"))
    )
    return votes, agreed


def _gold_agreement(votes: QuerySet[Vote]) -> Agreement:
    """How votes on gold replays went (``_gold_votes``)."""
    answered, agreed = _gold_votes(votes)
    return Agreement(answered.count(), agreed.count())


def rater_gold_agreement(*, rater: User) -> Agreement:
    return _gold_agreement(Vote.objects.filter(rater=rater))


class VoteTallies(NamedTuple):
    """What a vote's findings count, besides the vote itself (``vote_tallies``)."""

    on_prompt: int  # counted votes on its prompt
    rater_on_prompt: int  # of those, the rater's
    rater_since: int  # the rater's counted votes since a time
    gold: Agreement  # the rater's gold agreement (``rater_gold_agreement``), this vote included


def _count(votes: QuerySet[Vote], by: str) -> Coalesce:
    # Grouped by a column every row shares, so one row (or none: 0) comes back.
    counted = votes.order_by().values(by).annotate(n=Count("pk")).values("n")[:1]
    return Coalesce(Subquery(counted), 0)


_TALLIES = ("on_prompt", "rater_on_prompt", "rater_since", "gold_answered", "gold_agreed")


def _tallies_query(*, vote_pk: int, since: datetime) -> QuerySet[Vote]:
    """The vote's row with each count a subquery over the same definitions as everywhere
    (``counted_votes``, ``_gold_votes``), tied to the row by its prompt and rater."""
    others = counted_votes().exclude(pk=OuterRef("pk"))
    on_prompt = others.filter(prompt_hash=OuterRef("prompt_hash"))
    mine = others.filter(rater=OuterRef("rater"))
    answered, agreed = _gold_votes(Vote.objects.filter(rater=OuterRef("rater")))
    return (
        Vote.objects.filter(pk=vote_pk)
        .annotate(
            on_prompt=_count(on_prompt, "prompt_hash"),
            rater_on_prompt=_count(on_prompt.filter(rater=OuterRef("rater")), "rater"),
            rater_since=_count(mine.filter(created_at__gte=since), "rater"),
            gold_answered=_count(answered, "rater"),
            gold_agreed=_count(agreed, "rater"),
        )
        .values(*_TALLIES)
    )


# Building and compiling that statement costs several times the CPU of running it, and only
# its two values change from vote to vote: it is compiled once per process and database (two
# builds with different values say which of its parameters are the vote's and the time's) and
# each vote binds its own. A test checks it against each definition counted on its own.
_compiled: dict[str, tuple[str, tuple, dict[int, str]]] = {}
_MARKS = (
    (-1, datetime(2001, 1, 1, tzinfo=UTC)),
    (-2, datetime(2002, 2, 2, tzinfo=UTC)),
)


def _tallies_statement() -> tuple[str, tuple, dict[int, str]]:
    key = f"{connection.alias}:{connection.vendor}"
    if key not in _compiled:
        (sql, params), (other_sql, other) = (
            _tallies_query(vote_pk=pk, since=since).query.sql_with_params() for pk, since in _MARKS
        )
        slots = {
            i: ("pk" if value == _MARKS[0][0] else "since")
            for i, (value, changed) in enumerate(zip(params, other, strict=True))
            if value != changed
        }
        if sql != other_sql or sorted(slots.values()) != ["pk", "since"]:
            raise RuntimeError(f"the tallies' statement did not compile to one shape: {sql}")
        _compiled[key] = sql, tuple(params), slots
    return _compiled[key]


def vote_tallies(*, vote: Vote, since: datetime) -> VoteTallies:
    """In one statement, the counts a vote just written (with its prompt_hash and rater) is
    judged by: the counted votes other than it on its prompt, the rater's among them, the
    rater's since ``since``, and the rater's gold agreement."""
    sql, params, slots = _tallies_statement()
    values = {
        "pk": vote.pk,
        # As the lookup itself would send it (an aware datetime, or SQLite's text).
        "since": Vote._meta.get_field("created_at").get_db_prep_value(since, connection),
    }
    bound = [values[slots[i]] if i in slots else p for i, p in enumerate(params)]
    with connection.cursor() as cursor:
        cursor.execute(sql, bound)
        names = [c[0] for c in cursor.description]
        row = dict(zip(names, cursor.fetchone(), strict=True))
    return VoteTallies(
        on_prompt=row["on_prompt"],
        rater_on_prompt=row["rater_on_prompt"],
        rater_since=row["rater_since"],
        gold=Agreement(row["gold_answered"], row["gold_agreed"]),
    )


def gold_item_agreement(*, item: GoldItem) -> Agreement:
    return _gold_agreement(Vote.objects.filter(battle__gold=item))


def gold_items_with_use(items: QuerySet[GoldItem]) -> QuerySet[GoldItem]:
    """``times_served``: battles that replayed the item."""
    return items.annotate(times_served=Count("served", distinct=True))


def identity_terms(*, models: Iterable[ModelEntry] | None = None) -> tuple[str, ...]:
    """Every name that would unblind a battle: the configured vendor and model names plus each
    model's public name, model id, organisation and vendor. ``models``: every model's row, when
    the caller has read them already (a cache built from one read of the catalog)."""
    terms = list(settings.INTEGRITY["IDENTITY_TERMS"])
    names = ("public_name", "model_id", "organisation", "vendor")
    if models is None:
        rows = ModelEntry.objects.values_list(*names)
    else:
        rows = ((getattr(model, name) for name in names) for model in models)
    for fields in rows:
        terms += fields
    return tuple(sorted({t for t in terms if t and len(t) > 1}))
