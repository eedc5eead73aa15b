"""Reads of published leaderboard snapshots: the public board and the sampling state.

Nothing here reads the vote log, so battles may ask it which pair to draw next.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.db.models import QuerySet

from ranking.models import LeaderboardRow, LeaderboardSnapshot

# The orders the exports list a snapshot's rows in: board by board (view, then breakdown), best
# rank first; the JSON export also puts the higher score first among rows of one rank.
ROWS_BY_RANK = ("view", "breakdown", "rank_best")
ROWS_BY_RANK_THEN_SCORE = (*ROWS_BY_RANK, "-score")


def snapshot_latest() -> LeaderboardSnapshot | None:
    return LeaderboardSnapshot.objects.order_by("-computed_at", "-pk").first()


def snapshot_get(*, snapshot_id: int) -> LeaderboardSnapshot | None:
    """The snapshot with this id, or None when there is none."""
    return LeaderboardSnapshot.objects.filter(pk=snapshot_id).first()


def snapshot_rows(
    *, snapshot: LeaderboardSnapshot, order: tuple[str, ...] = ROWS_BY_RANK
) -> QuerySet[LeaderboardRow]:
    """Every row of every board of ``snapshot``, in ``order``."""
    return snapshot.rows.all().order_by(*order)


def rows_overall(*, rows: QuerySet[LeaderboardRow]) -> QuerySet[LeaderboardRow]:
    """Of ``rows``, those of the boards over all votes (no category or language breakdown)."""
    return rows.filter(breakdown="all")


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


def sampling_state(*, names: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each named model's interval (NaN when not ranked) and vote count from the latest
    snapshot, in the order given."""
    n = len(names)
    lower = np.full(n, np.nan)
    upper = np.full(n, np.nan)
    votes = np.zeros(n)
    snapshot = snapshot_latest()
    if snapshot is not None:
        rows = {r.model_name: r for r in snapshot.rows.filter(view="raw", breakdown="all")}
        for i, name in enumerate(names):
            row = rows.get(name)
            if row is not None:
                votes[i] = row.votes
                if row.lower is not None and row.upper is not None:
                    lower[i], upper[i] = row.lower, row.upper
    return lower, upper, votes
