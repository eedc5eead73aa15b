"""Reads. Views and consumers get data through these, never by querying models themselves."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Prefetch, Q, QuerySet

from arena.models import Answer, ModelEntry, Prompt, Turn, Vote


@dataclass(frozen=True)
class TurnSides:
    turn_id: int
    sides: dict[int, str]  # answer id -> "a" | "b"


def turn_sides(*, battle_id: object, index: int) -> TurnSides:
    turn = Turn.objects.get(battle_id=battle_id, index=index)
    sides = dict(Answer.objects.filter(turn=turn).values_list("pk", "side"))
    return TurnSides(turn_id=turn.pk, sides=sides)


def vote_reveal(*, vote_id: int) -> dict:
    vote = Vote.objects.select_related("model_a", "model_b").get(pk=vote_id)
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


@dataclass(frozen=True)
class ModelCounts:
    name: str
    organisation: str
    active: bool
    battles: int
    wins: int
    ties: int
    losses: int
    both_bad: int


def model_vote_counts() -> list[ModelCounts]:
    """Raw per-model outcome counts from the vote log: what happened, not a ranking."""
    rows = []
    for model in ModelEntry.objects.all():
        as_a = Q(model_a=model)
        as_b = Q(model_b=model)
        votes = Vote.objects.filter(as_a | as_b)
        wins = votes.filter((as_a & Q(choice="a")) | (as_b & Q(choice="b"))).count()
        losses = votes.filter((as_a & Q(choice="b")) | (as_b & Q(choice="a"))).count()
        rows.append(
            ModelCounts(
                name=model.public_name,
                organisation=model.organisation,
                active=model.active,
                battles=votes.count(),
                wins=wins,
                ties=votes.filter(choice="tie").count(),
                losses=losses,
                both_bad=votes.filter(choice="both_bad").count(),
            )
        )
    rows.sort(key=lambda r: (-r.battles, r.name))
    return rows


def votes_for_export(*, since: datetime | None = None) -> QuerySet[Vote]:
    """Votes oldest first, each with its battle's turns and both answers already loaded."""
    turns = Turn.objects.order_by("index").prefetch_related(
        Prefetch("answers", queryset=Answer.objects.order_by("side"))
    )
    votes = Vote.objects.select_related("battle", "model_a", "model_b").prefetch_related(
        Prefetch("battle__turns", queryset=turns)
    )
    if since is not None:
        votes = votes.filter(created_at__gte=since)
    # pk breaks ties between votes cast in the same instant, so exports are reproducible.
    return votes.order_by("created_at", "pk")


# Pools ----------------------------------------------------------------------------------------


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
    from django.core.cache import cache

    from arena.backends.pools import cache_key

    settings = model.backend_settings or {}
    urls = [str(r["base_url"]).rstrip("/") for r in settings.get("replicas") or []]
    if not urls:
        urls = [str(settings["base_url"]).rstrip("/")] if settings.get("base_url") else [""]
    rows = []
    for url in urls:
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
        live = cache.get(cache_key(url)) if url else None
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


def identity_terms() -> tuple[str, ...]:
    """Every name that would unblind a battle: the configured vendor and model names plus each
    model's public name and model id."""
    from django.conf import settings

    terms = list(settings.INTEGRITY["IDENTITY_TERMS"])
    for name, model_id in ModelEntry.objects.values_list("public_name", "model_id"):
        terms += [name, model_id]
    return tuple(sorted({t for t in terms if t and len(t) > 1}))
