"""Reads of battles, prompts and votes for views, the consumer, exports and the admin; and of
answers per replica (health, measured throughput) for the pools page."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Prefetch, QuerySet
from django.utils import timezone

from arena.backends.pools import live_state, replica_urls
from arena.catalog.models import ModelEntry
from arena.core.text import prompt_hash
from arena.records.models import Answer, Battle, Prompt, Turn, Vote


@dataclass(frozen=True)
class TurnSides:
    turn_id: int
    index: int
    sides: dict[int, str]  # answer id -> "a" | "b"
    finished: dict[int, tuple[str, str]]  # answer id -> (status, text), once it has ended


def turn_sides(*, battle_id: object, index: int | None = None) -> TurnSides:
    """A turn's answers by side; the battle's last turn when ``index`` is None."""
    turns = Turn.objects.filter(battle_id=battle_id)
    turn = turns.get(index=index) if index is not None else turns.latest("index")
    sides: dict[int, str] = {}
    finished: dict[int, tuple[str, str]] = {}
    for pk, side, status, text in Answer.objects.filter(turn=turn).values_list(
        "pk", "side", "status", "text"
    ):
        sides[pk] = side
        if status in Answer.TERMINAL:
            finished[pk] = (status, text)
    return TurnSides(turn_id=turn.pk, index=turn.index, sides=sides, finished=finished)


def turns_before(*, battle_id: object, index: int) -> tuple[list[dict], str]:
    """What a page shown the battle again needs besides the last turn, which is shown anew:
    the earlier turns (prompt and both answers, unredacted) and the last turn's prompt."""
    turns = list(
        Turn.objects.filter(battle_id=battle_id, index__lte=index)
        .prefetch_related("answers")
        .order_by("index")
    )
    earlier = [{"text": t.text, **{a.side: a.text for a in t.answers.all()}} for t in turns[:-1]]
    return earlier, turns[-1].text


# A battle left more than this long ago is not offered again (its answer streams are gone).
RESUMABLE_FOR = timedelta(hours=1)


def battle_in_progress(*, rater) -> Battle | None:
    """The rater's latest battle that can still be carried on (answers coming, finished but
    not yet watched to the end, or no vote)."""
    return (
        Battle.objects.filter(
            rater=rater,
            status__in=Battle.UNFINISHED,
            created_at__gte=timezone.now() - RESUMABLE_FOR,
        )
        .order_by("-created_at")
        .first()
    )


def vote_reveal(*, vote: Vote) -> dict:
    """The first frame that names the models: from the vote as ``vote_cast`` returns it, its
    models read with it (no statement of its own)."""
    return {
        "battle": str(vote.battle_id),
        "choice": vote.choice,
        "a": {"name": vote.model_a.public_name, "organisation": vote.model_a.organisation},
        "b": {"name": vote.model_b.public_name, "organisation": vote.model_b.organisation},
    }


def prompt_random(*, rng: random.Random | None = None) -> Prompt | None:
    ids = list(
        Prompt.objects.filter(active=True, source=Prompt.Source.CURATED).values_list(
            "pk", flat=True
        )
    )
    if not ids:
        return None
    return Prompt.objects.get(pk=(rng or random.SystemRandom()).choice(ids))


def votes_for_export(*, since: datetime | None = None) -> QuerySet[Vote]:
    """Votes oldest first, each with its battle's turns, both answers and its tags' rows
    already loaded."""
    turns = Turn.objects.order_by("index").prefetch_related(
        Prefetch("answers", queryset=Answer.objects.order_by("side"))
    )
    votes = Vote.objects.select_related("battle", "model_a", "model_b").prefetch_related(
        Prefetch("battle__turns", queryset=turns),
        "tag_rows",  # every labeller version's; the export takes the newest
    )
    if since is not None:
        votes = votes.filter(created_at__gte=since)
    # pk breaks ties between votes cast in the same instant, so exports are reproducible.
    return votes.order_by("created_at", "pk")


def prompt_twin(*, text: str, exclude_pk: int | None = None) -> int | None:
    """The id of another prompt with the same normalised text, if there is one."""
    twins = Prompt.objects.filter(text_hash=prompt_hash(text)).exclude(pk=exclude_pk)
    return twins.values_list("pk", flat=True).first()


@dataclass(frozen=True)
class ReplicaStats:
    replica: str  # base URL, or "in-process" for backends without replicas
    down: bool | None  # None: no live state published yet
    in_flight: int | None
    answers: int
    tokens_per_s: float | None
    ttft_ms: float | None
    mean_output_tokens: float | None
    replica_seconds_per_vote: float | None

    def replica_hours_per_day(self, votes_per_day: int) -> float | None:
        if self.replica_seconds_per_vote is None:
            return None
        return votes_per_day * self.replica_seconds_per_vote / 3600


def replica_stats(*, model: ModelEntry, window: int = 200) -> list[ReplicaStats]:
    """Health and rolling throughput per replica of a model's backend, from the last answers.

    Replica-seconds per vote: a vote needs two answers of the measured mean length at the
    measured output rate, each after its prefill (time to first token).
    """
    rows = []
    for url in replica_urls(model.backend_settings or {}):
        recent = list(
            Answer.objects.filter(model=model, replica=url, status=Answer.Status.OK)
            .exclude(ttft_ms=None)
            .order_by("-finished_at")
            .values_list("output_tokens", "ttft_ms", "total_ms")[:window]
        )
        tokens = sum(t or 0 for t, _, _ in recent)
        decode_s = sum(max(0.0, (total - ttft) / 1000) for _, ttft, total in recent)
        tps = tokens / decode_s if decode_s > 0 else None
        ttft = sum(ttft for _, ttft, _ in recent) / len(recent) if recent else None
        mean_tokens = tokens / len(recent) if recent else None
        per_vote = (
            2 * (mean_tokens / tps + ttft / 1000)
            if tps and mean_tokens is not None and ttft is not None
            else None
        )
        live = live_state(url) if url else None
        rows.append(
            ReplicaStats(
                replica=url or "in-process",
                down=live["down"] if live else None,
                in_flight=live["in_flight"] if live else None,
                answers=len(recent),
                tokens_per_s=tps,
                ttft_ms=ttft,
                mean_output_tokens=mean_tokens,
                replica_seconds_per_vote=per_vote,
            )
        )
    return rows


@dataclass(frozen=True)
class ModelPool:
    model: ModelEntry
    queue: str  # the Celery queue its answers go to
    replicas: list[ReplicaStats]


def model_pools() -> list[ModelPool]:
    """Every model, active first, with its queue and its replicas' stats."""
    return [
        ModelPool(
            model=model,
            queue=model.pool_queue or settings.GENERATION_QUEUE,
            replicas=replica_stats(model=model),
        )
        for model in ModelEntry.objects.order_by("-active", "public_name")
    ]
