"""Reads of generation: each replica's health and measured throughput, for the pool page."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from arena.backends.pools import live_state, replica_urls
from arena.battles.models import Answer
from arena.catalog.models import ModelEntry


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
