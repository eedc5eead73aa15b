"""Reads of published leaderboard snapshots: the public board and the sampling state.

Nothing here reads the vote log, so battles may ask it which pair to draw next.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.db.models import CharField, QuerySet, Subquery, Value
from django.db.models.fields.json import KeyTransform
from django.db.models.functions import Cast, Concat

from ranking.models import LeaderboardRow, LeaderboardSnapshot
from ranking.numbers import none_if_nan
from ranking.pairwise import predicted_win_rates, win_rates

# The orders the exports list a snapshot's rows in: board by board (view, then breakdown), best
# rank first; the JSON export also puts the higher score first among rows of one rank.
ROWS_BY_RANK = ("view", "breakdown", "rank_best")
ROWS_BY_RANK_THEN_SCORE = (*ROWS_BY_RANK, "-score")


def snapshot_latest() -> LeaderboardSnapshot | None:
    """The published snapshot, without its head-to-head tallies (``pairs_of`` reads one
    board's): the tallies of every board are large."""
    return (
        LeaderboardSnapshot.objects.defer("pairs", "model_stats")
        .order_by("-computed_at", "-pk")
        .first()
    )


def snapshot_latest_key() -> Subquery:
    """An expression for a query's select list: the published snapshot's id and content hash
    (NULL before the first), so a start reads in a statement it makes anyway whether the
    sampling weights it has cached are still the published ones. The hash too: an id alone may
    come again where a rolled-back insert gives its id back (SQLite)."""
    key = Concat(Cast("pk", CharField()), Value(":"), "content_hash", output_field=CharField())
    latest = LeaderboardSnapshot.objects.order_by("-computed_at", "-pk").annotate(key=key)
    return Subquery(latest.values("key")[:1])


def pairs_of(*, snapshot: LeaderboardSnapshot, breakdown: str) -> dict | None:
    """One board's head-to-head tallies (``pairwise.PairTallies.as_dict``), or None."""
    return (
        LeaderboardSnapshot.objects.filter(pk=snapshot.pk)
        .annotate(board=KeyTransform(breakdown, "pairs"))
        .values_list("board", flat=True)
        .first()
    )


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


def sampling_state(
    *, names: list[str], key: str | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each named model's interval (NaN when not ranked) and vote count from the snapshot of
    ``key`` (a value of ``snapshot_latest_key``; None: no snapshot yet), in the order given."""
    n = len(names)
    lower = np.full(n, np.nan)
    upper = np.full(n, np.nan)
    votes = np.zeros(n)
    if key:
        snapshot_id = int(key.split(":", 1)[0])
        board = LeaderboardRow.objects.filter(snapshot_id=snapshot_id, view="raw", breakdown="all")
        rows = {r.model_name: r for r in board}
        for i, name in enumerate(names):
            row = rows.get(name)
            if row is not None:
                votes[i] = row.votes
                if row.lower is not None and row.upper is not None:
                    lower[i], upper[i] = row.lower, row.upper
    return lower, upper, votes


@dataclass(frozen=True)
class HeadToHead:
    """Of the named models (in the order asked, those that played): battles between each pair,
    the row model's win rate against the column model, and its predicted win rate."""

    names: list[str]
    battles: np.ndarray
    rates: np.ndarray
    predicted: np.ndarray


def head_to_head(
    *, snapshot: LeaderboardSnapshot, breakdown: str, scores: dict[str, float]
) -> HeadToHead | None:
    """``scores``: the models to show, with the scores their predicted rates come from."""
    pairs = pairs_of(snapshot=snapshot, breakdown=breakdown)
    if not pairs:
        return None
    index = {name: i for i, name in enumerate(pairs["models"])}
    names = [n for n in scores if n in index]
    pick = np.ix_([index[n] for n in names], [index[n] for n in names])
    wins, played = np.array(pairs["wins"], float), np.array(pairs["played"], float)
    return HeadToHead(
        names=names,
        battles=np.array(pairs["battles"], float)[pick],
        rates=win_rates(wins[pick], played[pick]),
        predicted=predicted_win_rates(np.array([scores[n] for n in names], float)),
    )


@dataclass(frozen=True)
class Opponent:
    name: str
    battles: int
    wins: float
    rate: float | None
    predicted: float | None


@dataclass(frozen=True)
class ModelProfile:
    name: str
    rows: list[tuple[str, LeaderboardRow | None, LeaderboardRow | None]]  # breakdown, raw, style
    opponents: list[Opponent]
    history: list[tuple[str, float, float, float]]  # date, score, lower, upper; oldest first
    answers: int
    truncated: int


HISTORY_SNAPSHOTS = 60


def model_profile(*, snapshot: LeaderboardSnapshot, name: str) -> ModelProfile | None:
    """One model's page: its place on every board of ``snapshot``, how it fared against each
    opponent, and its overall raw score across the latest snapshots. None if it has no row."""
    rows = list(snapshot.rows.filter(model_name=name))
    if not rows:
        return None
    by = {(r.view, r.breakdown): r for r in rows}
    breakdowns = sorted({r.breakdown for r in rows}, key=lambda b: (b != "all", b))
    raw = {r.model_name: r.score for r in snapshot.rows.filter(view="raw", breakdown="all")}
    opponents = []
    pairs = pairs_of(snapshot=snapshot, breakdown="all") or {"models": []}
    if name in pairs["models"]:
        i = pairs["models"].index(name)
        rates = win_rates(np.array(pairs["wins"], float), np.array(pairs["played"], float))[i]
        scores = np.array([raw.get(m, np.nan) for m in pairs["models"]], float)
        predicted = predicted_win_rates(scores)[i]  # NaN where either is unranked
        for j, other in enumerate(pairs["models"]):
            if j != i and pairs["battles"][i][j]:
                opponents.append(
                    Opponent(
                        name=other,
                        battles=pairs["battles"][i][j],
                        wins=pairs["wins"][i][j],
                        rate=none_if_nan(float(rates[j])),
                        predicted=none_if_nan(float(predicted[j])),
                    )
                )
        opponents.sort(key=lambda o: (-o.battles, o.name))
    past = (
        LeaderboardRow.objects.filter(
            model_name=name, view="raw", breakdown="all", score__isnull=False
        )
        .select_related("snapshot")
        .order_by("-snapshot__computed_at", "-snapshot_id")[:HISTORY_SNAPSHOTS]
    )
    history = [
        (f"{r.snapshot.computed_at:%Y-%m-%d %H:%M}", r.score, r.lower, r.upper)
        for r in reversed(list(past))
    ]
    stats = snapshot.model_stats.get(name, {})  # deferred: read here, once
    return ModelProfile(
        name=name,
        rows=[(b, by.get(("raw", b)), by.get(("style", b))) for b in breakdowns],
        opponents=opponents,
        history=history,
        answers=stats.get("answers", 0),
        truncated=stats.get("truncated", 0),
    )
