"""Writes of tags: a vote's prompt tagged by the rules and, when one is set, the LLM labeller,
as new rows of the append-only VoteTags log.

A vote only sends a job (``votes_tag_later``, on commit); the job's ``votes_tag`` does the
work on a worker (or in process without Redis), so a vote never waits for it. The labeller
labels a prompt's text once per version: a vote of the same text (its prompt hash) reuses a
label already written, and a batch asks once per text. Its calls stop for the day once what
they cost today, plus the worst case of those in flight, would pass TAGGER_DAILY_BUDGET_USD;
votes are then tagged by rules alone ("rules" in the row's labeller).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

from channels.db import database_sync_to_async
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Sum
from django.utils import timezone

from arena.catalog.models import ModelEntry
from arena.catalog.selectors import model_by_name
from arena.core.errors import ServiceError
from arena.core.jobs import job_send
from arena.records.models import Turn, Vote
from arena.tagging.models import VoteTags
from arena.tagging.rules import rule_tags

TAG_TASK = "arena.tagging.tag_votes"  # the task (arena.tagging.tasks) that runs votes_tag
# The tagging version written. Raise it when the rules or the labeller's instructions change:
# `manage.py tag_prompts` then adds the new version's rows, which boards read instead.
VERSION = 1
CONCURRENCY = 8  # labeller calls one job has in flight
PROMPT_MAX_CHARS = 8_000  # the labeller reads at most this much of a prompt (bounds its cost)
RULES = "rules"


# The labeller's tags: those a label adds to the rules'.
LABELLER_TAGS = frozenset({"creative_writing", "instruction_following", "hard"})


class Labeller(Protocol):
    """What votes_tag asks of a labeller (judges.labeller.PromptLabeller, handed in by the
    edges: ranking, which the judges use, reads this room, so this room cannot import them)."""

    name: str  # the model's public name

    async def label(self, text: str) -> Any: ...  # .tags (None: unreadable), .cost, .calls

    def worst_cost(self, text: str) -> Decimal: ...


def tagger() -> ModelEntry | None:
    """The labeller TAGGER_MODEL names, or None when rules alone tag."""
    name = settings.TAGGER_MODEL
    model = model_by_name(name)
    if name and model is None:
        raise ServiceError("unknown_tagger", f"TAGGER_MODEL names no model: {name!r}.")
    return model


def labeller_name(labeller: Labeller | None) -> str:
    """What a row's ``labeller`` says: the rules, and the model when it answered."""
    return f"{RULES}+{labeller.name}" if labeller is not None else RULES


def votes_tag_later(*, vote_ids: list[int]) -> None:
    """Tag these votes in a job once the current transaction commits: on the labeller's pool
    queue (where its calls are served), at evaluation priority (after arena traffic). Never
    raises: a vote is never refused for its tags (an unknown labeller is reported by the job)."""
    try:
        model = tagger()
    except ServiceError:
        model = None
    queue = (model.pool_queue if model is not None else "") or settings.GENERATION_QUEUE
    job_send(task=TAG_TASK, args=[vote_ids], queue=queue, priority=settings.EVALS_PRIORITY)


@dataclass
class Tally:
    """What one tagging pass did: votes tagged (rows written); prompt texts the labeller
    answered, reused (an earlier label of the same text), could not answer, or skipped for the
    day's budget; its calls, what they cost (at list price) and whether some call's cost could
    not be told."""

    votes: int = 0
    labelled: int = 0
    reused: int = 0
    failed: int = 0
    over_budget: int = 0
    calls: int = 0
    cost: Decimal = Decimal(0)
    cost_unknown: bool = False

    def add(self, other: Tally) -> None:
        for name in ("votes", "labelled", "reused", "failed", "over_budget", "calls", "cost"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.cost_unknown = self.cost_unknown or other.cost_unknown


@dataclass(frozen=True)
class _Vote:
    pk: int
    prompt_hash: str
    category: str
    turns: list[str]
    images: int


def _read(vote_ids: list[int], version: int, labeller: str | None) -> tuple[list[_Vote], set]:
    """The votes among ``vote_ids`` still to tag at ``version`` (with ``labeller``: those
    without a row of that labeller there), with the rater's turns in order; and which of them
    have a row at ``version`` already (the rules', left when the labeller did not answer)."""
    have = dict(
        VoteTags.objects.filter(vote_id__in=vote_ids, version=version).values_list(
            "vote_id", "labeller"
        )
    )
    skip = {v for v, name in have.items() if labeller is None or name == labeller}
    rows = list(
        Vote.objects.filter(pk__in=vote_ids)
        .exclude(pk__in=skip)
        .order_by("pk")
        .values_list("pk", "battle_id", "prompt_hash", "prompt_category", "images")
    )
    turns: dict[object, list[str]] = {}
    for battle_id, text in (
        Turn.objects.filter(battle_id__in=[r[1] for r in rows])
        .order_by("battle_id", "index")
        .values_list("battle_id", "text")
    ):
        turns.setdefault(battle_id, []).append(text)
    votes = [
        _Vote(pk, h, category, turns.get(battle, []), len(images or ()))
        for pk, battle, h, category, images in rows
    ]
    return votes, set(have) - skip


def _known_labels(name: str, version: int, hashes: set[str]) -> dict[str, frozenset]:
    """Labels the labeller ``name`` already gave these prompt texts at ``version``."""
    rows = VoteTags.objects.filter(
        prompt_hash__in=hashes, version=version, labeller=name
    ).values_list("prompt_hash", "tags")
    return {h: frozenset(tags) & LABELLER_TAGS for h, tags in rows}


def spent_today() -> Decimal:
    """What the labeller's calls cost today (the site's time zone), as the rows record it."""
    today = timezone.localdate()
    found = VoteTags.objects.filter(created_at__date=today, cost__gt=0).aggregate(s=Sum("cost"))
    return found["s"] or Decimal(0)


_COLUMNS = ("vote_id", "prompt_hash", "tags", "labeller", "version", "cost", "created_at")


def _write(rows: list[VoteTags]) -> None:
    """Insert the rows in bulk: on PostgreSQL by COPY (a backfill's 100,000 rows take a few
    seconds, against three times that through INSERT), elsewhere ``bulk_create``."""
    if connection.vendor != "postgresql":
        VoteTags.objects.bulk_create(rows, batch_size=2000)
        return
    now = timezone.now()
    sql = f"COPY {VoteTags._meta.db_table} ({', '.join(_COLUMNS)}) FROM STDIN"
    with transaction.atomic(), connection.cursor() as cursor, cursor.cursor.copy(sql) as copy:
        for r in rows:
            copy.write_row(
                (r.vote_id, r.prompt_hash, json.dumps(r.tags), r.labeller, r.version, r.cost, now)
            )


class _Budget:
    """Today's spend and the worst cases in flight, for one job's calls."""

    def __init__(self, spent: Decimal) -> None:
        self.limit = settings.TAGGER_DAILY_BUDGET_USD
        self.spent, self.held = spent, Decimal(0)

    def hold(self, worst: Decimal) -> bool:
        if self.spent + self.held + worst > self.limit:
            return False
        self.held += worst
        return True

    def settle(self, worst: Decimal, cost: Decimal) -> None:
        self.held -= worst
        self.spent += cost


@dataclass(frozen=True)
class _Label:
    tags: frozenset[str] | None  # None: the labeller gave no reply that could be read
    cost: Decimal


async def _label_all(labeller: Labeller, texts: dict[str, str], tally: Tally) -> dict[str, _Label]:
    """The labeller's label of each prompt hash -> text, CONCURRENCY at a time; a text the
    budget left out is absent."""
    budget = _Budget(await database_sync_to_async(spent_today)())
    gate = asyncio.Semaphore(CONCURRENCY)
    out: dict[str, _Label] = {}

    async def one(prompt_hash: str, text: str) -> None:
        async with gate:
            text = text[:PROMPT_MAX_CHARS]
            worst = await database_sync_to_async(labeller.worst_cost)(text)
            if not budget.hold(worst):
                tally.over_budget += 1
                return
            cost = Decimal(0)
            try:
                done = await labeller.label(text)
                cost = done.cost
            finally:
                budget.settle(worst, cost)
            tally.calls += done.calls
            tally.cost += done.cost
            tally.cost_unknown = tally.cost_unknown or done.cost_unknown
            tally.labelled += done.tags is not None
            tally.failed += done.tags is None
            out[prompt_hash] = _Label(done.tags, done.cost)

    await asyncio.gather(*(one(h, t) for h, t in texts.items()))
    return out


async def votes_tag(
    *, vote_ids: list[int], labeller: Labeller | None, version: int | None = None
) -> Tally:
    """Tag the votes among ``vote_ids`` that have no row at ``version`` (VERSION)
    yet, or, with a ``labeller``, none of its rows there (so a pass with the labeller adds
    its row beside a rules-only one left when it failed or the budget ran out). Without a
    labeller, rules alone."""
    version = version or VERSION
    name = labeller_name(labeller)
    votes, tagged = await database_sync_to_async(_read)(
        vote_ids, version, name if labeller else None
    )
    tally = Tally()
    labels: dict[str, _Label] = {}
    if labeller is not None and votes:
        hashes = {v.prompt_hash for v in votes}
        known = await database_sync_to_async(_known_labels)(name, version, hashes)
        tally.reused = len(known)
        labels = {h: _Label(tags, Decimal(0)) for h, tags in known.items()}
        asks = {v.prompt_hash: v.turns[0] for v in votes if v.prompt_hash not in known and v.turns}
        labels.update(await _label_all(labeller, asks, tally))
    rows, charged = [], set()
    for vote in votes:
        tags = rule_tags(vote.turns, category=vote.category, images=vote.images)
        label = labels.get(vote.prompt_hash)
        if label is not None and label.tags is not None:
            tags |= label.tags
        # A label's cost is carried by the first row of its text, so the day's sum is exact.
        cost = Decimal(0)
        if label is not None and vote.prompt_hash not in charged:
            cost = label.cost
            charged.add(vote.prompt_hash)
        answered = label is not None and label.tags is not None
        if not answered and vote.pk in tagged and not cost:
            continue  # its rules-only row is there already: another would say nothing new
        rows.append(
            VoteTags(
                vote_id=vote.pk,
                prompt_hash=vote.prompt_hash,
                tags=sorted(tags),
                labeller=name if answered else RULES,
                version=version,
                cost=cost,
            )
        )
    await database_sync_to_async(_write)(rows)
    tally.votes = len(rows)
    return tally
