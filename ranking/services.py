"""Writes for ranking: computing and storing leaderboard snapshots."""

from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import asdict
from datetime import datetime

from django.conf import settings as django_settings
from django.db import transaction
from django.utils import timezone

from ranking import exposure, selectors
from ranking.compute import Board, RankingConfig, compute_all, pairs_all
from ranking.models import LeaderboardRow, LeaderboardSnapshot
from ranking.numbers import none_if_nan
from ranking.snapshots import snapshot_latest

log = logging.getLogger(__name__)


def ranking_config(**overrides) -> RankingConfig:
    conf = {**django_settings.RANKING, **overrides}
    known = {k: v for k, v in conf.items() if k in RankingConfig.__dataclass_fields__}
    return RankingConfig(**known)


def _db_float(x: float | None) -> float | None:
    """A row's number as its column stores it: a float, or NULL where there is no value."""
    x = none_if_nan(x)
    return None if x is None else float(x)


def _hashed(value: object) -> object:
    """A number as the content hash sees it: rounded past float noise, None for no value."""
    value = none_if_nan(value)
    return round(value, 9) if isinstance(value, float) else value


def boards_hash(boards: list[Board]) -> str:
    """A content hash of the numbers: the same votes and settings give the same hash."""
    canonical = [
        {
            "view": b.view,
            "breakdown": b.breakdown,
            "rows": [{k: _hashed(v) for k, v in asdict(r).items()} for r in b.rows],
        }
        for b in boards
    ]
    return hashlib.sha256(json.dumps(canonical, sort_keys=True).encode()).hexdigest()


def _untagged_note(loaded: selectors.LoadedVotes) -> list[str]:
    """Say so when some counted votes are not tagged yet: until they are, they count on no
    tag's board (only on their curated category's, if they have one)."""
    untagged = loaded.untagged()
    if not untagged:
        return []
    return [
        f"tags: {untagged} of the {len(loaded.arrays.a)} votes have no tags yet (manage.py "
        "tag_prompts tags them): until then they count on the overall and language boards, "
        "and on their curated category's if they have one, but on no tag's board"
    ]


def leaderboard_refresh() -> LeaderboardSnapshot | None:
    """A new snapshot if votes were cast after the latest one's cutoff (or there is none yet
    and there are votes); None when the published one is still current."""
    latest = snapshot_latest()
    if not selectors.votes_since(cutoff=latest.cutoff if latest else None):
        return None
    return leaderboard_recompute()


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
        # A board that counted the demo's simulated votes keeps counting them (and says so),
        # or a plain recompute would empty the demo's leaderboard.
        latest = snapshot_latest()
        include_simulated = django_settings.RANKING_INCLUDE_SIMULATED or bool(
            latest is not None and latest.settings.get("include_simulated")
        )
    conf = ranking_config(**overrides)
    loaded = selectors.vote_arrays(cutoff=cutoff, include_simulated=include_simulated)
    boards = compute_all(loaded.arrays, conf)
    digest = boards_hash(boards)
    shares = exposure.battle_shares(cutoff=cutoff, include_simulated=include_simulated)
    overall = next((b for b in boards if (b.view, b.breakdown) == ("raw", "all")), None)
    weights = exposure.sampling_weights(
        entries=loaded.models.values(),
        board={r.model: (r.lower, r.upper, r.votes) for r in (overall.rows if overall else [])},
    )
    with transaction.atomic():
        snapshot = LeaderboardSnapshot.objects.create(
            cutoff=cutoff,
            method=conf.method,
            settings={**conf.as_dict(), "include_simulated": include_simulated},
            votes_used=int(len(loaded.arrays.a)),
            votes_excluded=loaded.excluded,
            includes_simulated=include_simulated and selectors.simulated_votes_exist(cutoff=cutoff),
            style_coefs={
                f"{b.breakdown}": {k: list(v) for k, v in (b.style_coefs or {}).items()}
                for b in boards
                if b.view == "style" and b.style_coefs
            },
            notes=sorted({f"{b.view}/{b.breakdown}: {b.note}" for b in boards if b.note})
            + _untagged_note(loaded),
            content_hash=digest,
            pairs=pairs_all(loaded.arrays, conf),
            model_stats=loaded.answers,
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
                        score=_db_float(r.score),
                        lower=_db_float(r.lower),
                        upper=_db_float(r.upper),
                        rank_best=r.rank_best if r.section == "ranked" else None,
                        rank_worst=r.rank_worst if r.section == "ranked" else None,
                        votes=r.votes,
                        wins=r.wins,
                        losses=r.losses,
                        ties=r.ties,
                        both_bad=r.both_bad,
                        both_bad_rate=_db_float(r.both_bad_rate),
                        line=entry.line if entry else "",
                        preview=bool(entry and entry.preview),
                        retired_at=entry.retired_at if entry and not entry.active else None,
                        battle_share=shares.get(r.model),
                        sampling_weight=weights.get(r.model, 0.0 if entry else None),
                    )
                )
        LeaderboardRow.objects.bulk_create(rows, batch_size=2000)
        snapshot.duration_s = time.perf_counter() - started
        snapshot.save(update_fields=["duration_s"])
    return snapshot
