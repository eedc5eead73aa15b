"""Reads for ranking: the vote log as arrays, and published snapshots."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import numpy as np
from django.db.models import Exists, OuterRef, Q

from arena.models import ModelEntry, Vote, VoteFlag
from ranking.compute import VoteArrays
from ranking.logs import Record, arrays_from_records
from ranking.models import LeaderboardRow, LeaderboardSnapshot

STYLE_KEYS = ("output_tokens", "style__headers", "style__list_items", "style__bold")


def exclusion_rules(*, include_simulated: bool) -> list[tuple[str, Q]]:
    """Why a vote in the log does not count, in order; the first matching reason is reported.

    A vote is excluded by each VoteFlag on it that an admin has not lifted.
    """
    rules: list[tuple[str, Q]] = []
    if not include_simulated:
        rules.append(("simulated", Q(simulated=True)))
    for reason in VoteFlag.Reason.values:
        open_flags = VoteFlag.objects.filter(
            vote=OuterRef("pk"), reason=reason, action=VoteFlag.Action.FLAG
        ).exclude(reviews__action=VoteFlag.Action.LIFT)
        rules.append((reason, Q(Exists(open_flags))))
    return rules


@dataclass
class LoadedVotes:
    arrays: VoteArrays
    excluded: dict[str, int]
    models: dict[str, ModelEntry]  # public name -> entry


def vote_arrays(*, cutoff: datetime, include_simulated: bool) -> LoadedVotes:
    """Every counted vote up to ``cutoff`` as arrays, read in one streamed query."""
    votes = Vote.objects.filter(created_at__lte=cutoff)
    excluded: dict[str, int] = {}
    seen = Q(pk__in=[])
    for reason, rule in exclusion_rules(include_simulated=include_simulated):
        count = votes.filter(rule).exclude(seen).count()
        if count:
            excluded[reason] = count
        seen |= rule
    names = dict(ModelEntry.objects.values_list("pk", "public_name"))
    fields = [
        "model_a_id",
        "model_b_id",
        "choice",
        "prompt_category",
        "prompt_language",
        "sampling_probability",
        *(f"side_a__{k}" for k in STYLE_KEYS),
        *(f"side_b__{k}" for k in STYLE_KEYS),
    ]
    rows = votes.exclude(seen).order_by("pk").values_list(*fields)
    records = (
        Record(names[r[0]], names[r[1]], r[2], _style(r[6:10]), _style(r[10:14]), r[3], r[4], r[5])
        for r in rows.iterator(chunk_size=20_000)
    )
    arrays = arrays_from_records(records)
    entries = {m.public_name: m for m in ModelEntry.objects.all()}
    return LoadedVotes(arrays, excluded, entries)


def _style(values: tuple) -> tuple[float, float, float, float]:
    return tuple(float(v) if isinstance(v, int | float) else 0.0 for v in values)  # type: ignore[return-value]


def snapshot_latest() -> LeaderboardSnapshot | None:
    return LeaderboardSnapshot.objects.order_by("-computed_at", "-pk").first()


@dataclass(frozen=True)
class BoardView:
    snapshot: LeaderboardSnapshot
    view: str
    breakdown: str
    ranked: list[LeaderboardRow]
    provisional: list[LeaderboardRow]
    disconnected: list[LeaderboardRow]
    retired: list[LeaderboardRow]
    breakdowns: list[str]


def board(*, snapshot: LeaderboardSnapshot, view: str, breakdown: str) -> BoardView:
    rows = list(snapshot.rows.filter(view=view, breakdown=breakdown))
    by = {s: [r for r in rows if r.section == s] for s in LeaderboardRow.Section.values}
    by["ranked"].sort(key=lambda r: (-(r.score or 0), r.model_name))
    breakdowns = sorted(
        set(snapshot.rows.filter(view="raw").values_list("breakdown", flat=True)) - {"all"}
    )
    return BoardView(
        snapshot=snapshot,
        view=view,
        breakdown=breakdown,
        ranked=by["ranked"],
        provisional=by["provisional"],
        disconnected=by["disconnected"],
        retired=by["retired"],
        breakdowns=breakdowns,
    )


def sampling_state(*, models: list[ModelEntry]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each model's interval (NaN when not ranked) and vote count from the latest snapshot."""
    n = len(models)
    lower = np.full(n, np.nan)
    upper = np.full(n, np.nan)
    votes = np.zeros(n)
    snapshot = snapshot_latest()
    if snapshot is not None:
        rows = {r.model_name: r for r in snapshot.rows.filter(view="raw", breakdown="all")}
        for i, model in enumerate(models):
            row = rows.get(model.public_name)
            if row is not None:
                votes[i] = row.votes
                if row.lower is not None and row.upper is not None:
                    lower[i], upper[i] = row.lower, row.upper
    return lower, upper, votes
