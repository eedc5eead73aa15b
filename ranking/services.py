"""Writes for ranking: computing and storing leaderboard snapshots."""

from __future__ import annotations

import hashlib
import json
import logging
import math
import time
from dataclasses import asdict
from datetime import datetime

from django.conf import settings as django_settings
from django.db import transaction
from django.utils import timezone

from arena.models import Vote
from ranking import selectors
from ranking.compute import Board, Settings, compute_all
from ranking.models import LeaderboardRow, LeaderboardSnapshot

log = logging.getLogger(__name__)


def ranking_settings(**overrides) -> Settings:
    conf = {**django_settings.RANKING, **overrides}
    known = {k: v for k, v in conf.items() if k in Settings.__dataclass_fields__}
    return Settings(**known)


def _clean(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def boards_hash(boards: list[Board]) -> str:
    """A content hash of the numbers: the same votes and settings give the same hash."""
    canonical = [
        {
            "view": b.view,
            "breakdown": b.breakdown,
            "rows": [
                {
                    k: (
                        round(v, 9)
                        if isinstance(v, float) and not math.isnan(v)
                        else (None if isinstance(v, float) else v)
                    )
                    for k, v in asdict(r).items()
                }
                for r in b.rows
            ],
        }
        for b in boards
    ]
    return hashlib.sha256(json.dumps(canonical, sort_keys=True).encode()).hexdigest()


def leaderboard_recompute(
    *,
    cutoff: datetime | None = None,
    include_simulated: bool | None = None,
    **overrides,
) -> LeaderboardSnapshot:
    """Compute every board from the vote log and store it as a new snapshot.

    Nothing is written unless the whole computation succeeds, so a failed run leaves the
    previous snapshot as the one published.
    """
    started = time.perf_counter()
    cutoff = cutoff or timezone.now()
    if include_simulated is None:
        include_simulated = django_settings.RANKING_INCLUDE_SIMULATED
    conf = ranking_settings(**overrides)
    loaded = selectors.vote_arrays(cutoff=cutoff, include_simulated=include_simulated)
    boards = compute_all(loaded.arrays, conf)
    digest = boards_hash(boards)
    with transaction.atomic():
        snapshot = LeaderboardSnapshot.objects.create(
            cutoff=cutoff,
            method=conf.method,
            settings={**conf.as_dict(), "include_simulated": include_simulated},
            votes_used=int(len(loaded.arrays.a)),
            votes_excluded=loaded.excluded,
            includes_simulated=include_simulated
            and Vote.objects.filter(simulated=True, created_at__lte=cutoff).exists(),
            style_coefs={
                f"{b.breakdown}": {k: list(v) for k, v in (b.style_coefs or {}).items()}
                for b in boards
                if b.view == "style" and b.style_coefs
            },
            notes=sorted({f"{b.view}/{b.breakdown}: {b.note}" for b in boards if b.note}),
            content_hash=digest,
        )
        rows = []
        for b in boards:
            for r in b.rows:
                entry = loaded.models.get(r.model)
                section = r.section
                if entry is not None and not entry.active:
                    section = LeaderboardRow.Section.RETIRED
                rows.append(
                    LeaderboardRow(
                        snapshot=snapshot,
                        view=b.view,
                        breakdown=b.breakdown,
                        model_name=r.model,
                        organisation=entry.organisation if entry else "",
                        section=section,
                        score=_clean(r.score),
                        lower=_clean(r.lower),
                        upper=_clean(r.upper),
                        rank_best=r.rank_best if r.section == "ranked" else None,
                        rank_worst=r.rank_worst if r.section == "ranked" else None,
                        votes=r.votes,
                        wins=r.wins,
                        losses=r.losses,
                        ties=r.ties,
                        both_bad=r.both_bad,
                        both_bad_rate=_clean(r.both_bad_rate),
                    )
                )
        LeaderboardRow.objects.bulk_create(rows, batch_size=2000)
        snapshot.duration_s = time.perf_counter() - started
        snapshot.save(update_fields=["duration_s"])
    return snapshot
