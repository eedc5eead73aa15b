"""Tagging the votes that have no tags yet (``manage.py tag_prompts``): in batches, each written
as it ends, so a run that stops is resumed by running it again; with a labeller, what it may
cost at most is told before a call is made.

Rules alone read a batch's votes and turns in three queries and write its rows in one
``bulk_create``: 100,000 votes take seconds (bench/tag_prompts.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

from asgiref.sync import async_to_sync
from django.db.models import QuerySet

from arena.records.models import Vote
from arena.tagging.models import VoteTags
from arena.tagging.services import (
    PROMPT_MAX_CHARS,
    VERSION,
    Labeller,
    Tally,
    labeller_name,
    spent_today,
    votes_tag,
)

BATCH = 2_000


def votes_to_tag(*, version: int, labeller: Labeller | None) -> QuerySet:
    """Ids of the votes with no row at ``version`` (with a labeller: none of its rows there),
    oldest first."""
    done = VoteTags.objects.filter(version=version)
    if labeller is not None:
        done = done.filter(labeller=labeller_name(labeller))
    return (
        Vote.objects.exclude(pk__in=done.values("vote_id"))
        .order_by("pk")
        .values_list("pk", flat=True)
    )


@dataclass(frozen=True)
class Forecast:
    """Before a run: votes to tag; distinct prompt texts the labeller would be asked about
    (not labelled at this version yet); the most those calls can cost at list price; and
    what today's budget has left."""

    votes: int
    texts: int
    worst_cost: Decimal
    budget_left: Decimal


def forecast(*, version: int, labeller: Labeller | None, budget: Decimal) -> Forecast:
    ids = votes_to_tag(version=version, labeller=labeller)
    votes = ids.count()
    left = max(Decimal(0), budget - spent_today())
    if labeller is None:
        return Forecast(votes, 0, Decimal(0), left)
    labelled = VoteTags.objects.filter(version=version, labeller=labeller_name(labeller))
    texts = dict(
        Vote.objects.filter(pk__in=ids)
        .exclude(prompt_hash__in=labelled.values("prompt_hash"))
        .values_list("prompt_hash", "prompt__text")
    )
    worst = sum((labeller.worst_cost(t[:PROMPT_MAX_CHARS]) for t in texts.values()), Decimal(0))
    return Forecast(votes, len(texts), worst, left)


def backlog_tag(
    *,
    labeller: Labeller | None,
    version: int = VERSION,
    limit: int | None = None,
    batch: int = BATCH,
    on_batch: Callable[[Tally], None] | None = None,
) -> Tally:
    """Tag up to ``limit`` votes still to tag, ``batch`` at a time (each batch committed when
    it ends); ``on_batch`` hears of each. What was done, all batches together."""
    ids = list(votes_to_tag(version=version, labeller=labeller)[:limit] if limit else
               votes_to_tag(version=version, labeller=labeller))  # fmt: skip
    total = Tally()
    for start in range(0, len(ids), batch):
        done = async_to_sync(votes_tag)(
            vote_ids=ids[start : start + batch], labeller=labeller, version=version
        )
        total.add(done)
        if on_batch is not None:
            on_batch(done)
    return total
