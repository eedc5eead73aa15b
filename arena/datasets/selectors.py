"""Reads for the datasets room: the counted votes to export, why the others were left out,
their tags, and the latest style-controlled fit. Which votes count is integrity's
``counted_votes``, never a definition of this room's own."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import numpy as np
from django.db.models import QuerySet

from arena.battles.selectors import votes_for_export
from arena.integrity.selectors import counted_votes
from arena.records.models import Vote
from arena.tagging.selectors import vote_tags
from ranking.models import LeaderboardRow, LeaderboardSnapshot
from ranking.selectors import votes_excluded
from ranking.snapshots import snapshot_latest


def votes_to_release(
    *, include_simulated: bool, since: datetime | None = None, until: datetime | None = None
) -> QuerySet[Vote]:
    """Counted votes, oldest first, each with its turns and both answers loaded."""
    counted = counted_votes(include_simulated=include_simulated).values("pk")
    votes = votes_for_export(since=since).filter(pk__in=counted)
    return votes if until is None else votes.filter(created_at__lt=until)


def votes_left_out(
    *, include_simulated: bool, since: datetime | None = None, until: datetime | None = None
) -> dict[str, int]:
    """Votes in the window that do not count, per reason (the first that applies, in the
    leaderboard's order), zero counts omitted."""
    votes = Vote.objects.all()
    if since is not None:
        votes = votes.filter(created_at__gte=since)
    if until is not None:
        votes = votes.filter(created_at__lt=until)
    return votes_excluded(votes=votes, include_simulated=include_simulated)


def tags_of(votes: list[Vote]) -> dict[int, frozenset[str]]:
    """vote id -> its category tags: the tagger's newest, else the curated prompt's category."""
    tagged = vote_tags(vote_ids=[v.pk for v in votes])
    return {
        v.pk: tagged.get(v.pk, frozenset({v.prompt_category} if v.prompt_category else ()))
        for v in votes
    }


def decisive_lengths(*, include_simulated: bool) -> tuple[np.ndarray, np.ndarray]:
    """(chosen, rejected) output tokens of every counted vote with a winner, for the page's
    audit: two JSON numbers per vote, never the texts."""
    rows = (
        counted_votes(include_simulated=include_simulated)
        .filter(choice__in=(Vote.Choice.A, Vote.Choice.B))
        .order_by()
        .values_list("choice", "side_a__output_tokens", "side_b__output_tokens")
    )
    data = np.array(
        [(c == Vote.Choice.A, a or 0, b or 0) for c, a, b in rows.iterator(chunk_size=5000)],
        dtype=np.float64,
    ).reshape(-1, 3)
    a_won = data[:, 0] == 1
    return np.where(a_won, data[:, 1], data[:, 2]), np.where(a_won, data[:, 2], data[:, 1])


@dataclass(frozen=True)
class StyleFit:
    snapshot_id: int
    computed_at: datetime
    includes_simulated: bool
    # feature -> (coefficient, lower, upper) of the overall style-controlled board
    coefs: dict[str, tuple[float, float, float]]
    raw: dict[str, float]  # ranked model -> score
    style: dict[str, float]


def style_fit_latest() -> StyleFit | None:
    """The latest snapshot's overall style coefficients and both views' ranked scores."""
    snapshot: LeaderboardSnapshot | None = snapshot_latest()
    if snapshot is None:
        return None
    rows = LeaderboardRow.objects.filter(
        snapshot=snapshot, breakdown="all", section=LeaderboardRow.Section.RANKED
    ).values_list("view", "model_name", "score")
    scores: dict[str, dict[str, float]] = {"raw": {}, "style": {}}
    for view, name, score in rows:
        if view in scores and score is not None:
            scores[view][name] = score
    coefs = {k: tuple(v) for k, v in (snapshot.style_coefs or {}).get("all", {}).items()}
    return StyleFit(
        snapshot_id=snapshot.pk,
        computed_at=snapshot.computed_at,
        includes_simulated=snapshot.includes_simulated,
        coefs=coefs,  # type: ignore[arg-type]
        raw=scores["raw"],
        style=scores["style"],
    )
