"""Leaderboards from vote arrays: who is ranked, on which scale, with which intervals.

Pure orchestration of the ranking math; the Django side loads the votes into `VoteArrays` and
stores the `Board`s. The same arrays and settings always give the same numbers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from ranking.blas import blas_single
from ranking.bradley_terry import BOTH_BAD, SCALE, TIE, A, B, components, counts_from_votes, fit
from ranking.intervals import bootstrap, rank_ranges, sandwich
from ranking.numbers import LEVEL
from ranking.pairwise import pair_tallies
from ranking.progress import advance, expect
from ranking.style import (
    STYLE_NAMES,
    bootstrap_style,
    fit_style,
    sandwich_style,
    style_data,
    style_ratios,
)
from ranking.tag_sets import tag_masks

RANKED = "ranked"
PROVISIONAL = "provisional"
DISCONNECTED = "disconnected"


@dataclass
class VoteArrays:
    model_names: list[str]
    a: np.ndarray
    b: np.ndarray
    outcome: np.ndarray
    style_a: np.ndarray
    style_b: np.ndarray
    category: np.ndarray
    language: np.ndarray
    weights: np.ndarray | None = None
    # When set, ``category`` and ``language`` hold integer codes into these lists of labels
    # (the readers' form: a few bytes a vote); otherwise they hold the labels themselves.
    labels: dict[str, list[str]] | None = None
    # Each vote's tag set as a code into ``tag_sets`` (``tag_sets.tag_codes``); None: not read.
    tags: np.ndarray | None = None
    tag_sets: list[frozenset[str]] = field(default_factory=list)

    # Derived per-vote arrays, computed once and shared by every board of these votes.
    _derived: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def style_ratios(self) -> np.ndarray:
        """Every vote's normalised style differences (``style.style_ratios``), once."""
        if "ratios" not in self._derived:
            self._derived["ratios"] = style_ratios(self.style_a, self.style_b, STYLE_NAMES)
        return self._derived["ratios"]

    def coded(self, name: str) -> tuple[np.ndarray, list[str]]:
        """The codes of field ``name`` (category or language) and the label of each code."""
        values = getattr(self, name)
        if self.labels is not None and name in self.labels:
            return np.asarray(values), self.labels[name]
        labels = [str(v) if v is not None else "" for v in np.asarray(values, dtype=object)]
        found, codes = np.unique(np.array(labels, dtype=object), return_inverse=True)
        return codes.reshape(-1), [str(v) for v in found]


@dataclass
class RankingConfig:
    """Everything that shapes the numbers; stored with each snapshot, seed included."""

    method: str = "bootstrap"
    rounds: int = 1000
    # Style boards: the sandwich covers the truth 95% of the time in simulation where 100
    # percentile bootstrap rounds cover 93.5% (docs/leaderboard.md, bench/coverage.py), and
    # costs one fit instead of 101.
    style_method: str = "sandwich"
    # Raw boards of one category or language: intervals from their pair counts alone (one fit,
    # no resampling); "bootstrap" resamples each as the overall board is.
    breakdown_method: str = "sandwich"
    style_rounds: int = 100
    seed: int = 0
    both_bad: str = "tie"
    min_votes: int = 300
    anchor: str | None = None
    anchor_score: float = 1000.0
    level: float = LEVEL
    reweight: bool = False

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclass
class Row:
    model: str
    score: float
    lower: float
    upper: float
    rank_best: int
    rank_worst: int
    votes: int
    wins: int
    losses: int
    ties: int
    both_bad: int
    both_bad_rate: float
    section: str


@dataclass
class Board:
    view: str
    breakdown: str
    rows: list[Row]
    votes: int
    style_coefs: dict[str, tuple[float, float, float]] | None = None
    note: str = ""


@dataclass
class _Tally:
    votes: np.ndarray
    wins: np.ndarray
    losses: np.ndarray
    ties: np.ndarray
    both_bad: np.ndarray


def _tally(a: np.ndarray, b: np.ndarray, o: np.ndarray, m: int) -> _Tally:
    def per_model(idx: np.ndarray) -> np.ndarray:
        return np.bincount(idx, minlength=m).astype(np.int64)

    return _Tally(
        votes=per_model(a) + per_model(b),
        wins=per_model(a[o == A]) + per_model(b[o == B]),
        losses=per_model(b[o == A]) + per_model(a[o == B]),
        ties=per_model(a[o == TIE]) + per_model(b[o == TIE]),
        both_bad=per_model(a[o == BOTH_BAD]) + per_model(b[o == BOTH_BAD]),
    )


def _main_component(labels: np.ndarray, weight: np.ndarray) -> int:
    """The component to rank: most models, then most votes, then lowest label (deterministic)."""
    best, key = -1, (-1, -1.0, 0)
    for label in np.unique(labels):
        members = labels == label
        candidate = (int(members.sum()), float(weight[members].sum()), -int(label))
        if candidate > key:
            best, key = int(label), candidate
    return best


@blas_single
def compute_board(
    votes: VoteArrays,
    config: RankingConfig,
    *,
    view: str = "raw",
    mask: np.ndarray | None = None,
    breakdown: str = "all",
) -> Board:
    """One leaderboard over the votes selected by `mask` (all votes when None).

    Models with at least `min_votes` votes in the subset are fitted on the votes among
    themselves and ranked by rank range; the others are listed as provisional with their raw
    counts and no score. If those votes do not connect all fitted models, only the largest
    connected group is ranked: strengths of groups never compared share no scale, so the rest
    are listed as disconnected rather than placed on an invented one.
    """
    if view not in ("raw", "style"):
        raise ValueError(f"view must be 'raw' or 'style', not {view!r}")
    for method in (config.method, config.style_method, config.breakdown_method):
        if method not in ("bootstrap", "sandwich"):
            raise ValueError(f"method must be 'bootstrap' or 'sandwich', not {method!r}")
    names = list(votes.model_names)
    m = len(names)
    sel = np.ones(len(votes.a), dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    a = np.asarray(votes.a, dtype=np.int64)[sel]
    b = np.asarray(votes.b, dtype=np.int64)[sel]
    o = np.asarray(votes.outcome, dtype=np.int64)[sel]
    tally = _tally(a, b, o, m)
    notes: list[str] = []

    eligible = tally.votes >= config.min_votes
    fitted = eligible[a] & eligible[b]
    if config.both_bad == "drop":
        fitted &= o != BOTH_BAD
    index = np.full(m, -1, dtype=np.int64)
    pool = np.flatnonzero(eligible)
    index[pool] = np.arange(pool.size)
    counts = counts_from_votes(
        index[a[fitted]], index[b[fitted]], o[fitted], n_models=pool.size, both_bad="tie"
    )
    labels = components(counts)
    ranked = np.zeros(m, dtype=bool)
    disconnected = np.zeros(m, dtype=bool)
    if pool.size:
        main = _main_component(labels, tally.votes[pool])
        if (labels == main).sum() >= 2:
            ranked[pool[labels == main]] = True
            disconnected[pool[labels != main]] = True
        else:
            notes.append("no two models with enough votes were compared: nothing is ranked yet")
    if disconnected.any():
        listed = ", ".join(names[i] for i in np.flatnonzero(disconnected))
        notes.append(
            f"these models were never compared with the rest: separate scales, not ranked: {listed}"
        )

    theta = lower = upper = np.zeros(0)
    style_coefs = None
    members = np.flatnonzero(ranked)
    if members.size:
        index = np.full(m, -1, dtype=np.int64)
        index[members] = np.arange(members.size)
        use = fitted & ranked[a] & ranked[b]
        weights = None
        if config.reweight and votes.weights is not None:
            weights = np.asarray(votes.weights, dtype=np.float64)[sel][use]
            weights = weights / weights.mean()
        fitted_tally = _tally(a[use], b[use], o[use], m)
        draws = fitted_tally.ties + (fitted_tally.both_bad if config.both_bad == "tie" else 0)
        lopsided = ranked & (draws == 0) & ((fitted_tally.losses == 0) | (fitted_tally.wins == 0))
        if lopsided.any():
            listed = ", ".join(names[i] for i in np.flatnonzero(lopsided))
            notes.append(
                "never lost (or never won) against the ranked models, so the penalty, not the "
                f"votes, sets how far out the score is: {listed}"
            )
        args = (index[a[use]], index[b[use]], o[use], members.size, weights)
        if view == "raw":
            theta, lower, upper = _raw(*args, config, method=raw_method(config, breakdown))
        else:
            ratios = votes.style_ratios()[sel][use]
            theta, lower, upper, style_coefs = _style(*args, ratios, config)

    anchor = None
    if config.anchor is not None:
        if config.anchor in names and ranked[names.index(config.anchor)]:
            anchor = int(np.flatnonzero(members == names.index(config.anchor))[0])
        else:
            notes.append(f"anchor {config.anchor} is not ranked here: the mean model is at 1000")
    if anchor is None:
        offset = 1000.0 - SCALE * float(theta.mean()) if theta.size else 1000.0
    else:
        offset = config.anchor_score - SCALE * float(theta[anchor])
    best, worst = rank_ranges(lower, upper)

    rows: list[Row] = []
    nan = float("nan")
    for i in range(m):
        if tally.votes[i] == 0:
            continue  # not part of this board at all
        if ranked[i]:
            k = int(np.flatnonzero(members == i)[0])
            score, lo, hi = (offset + SCALE * float(x[k]) for x in (theta, lower, upper))
            rb, rw, section = int(best[k]), int(worst[k]), RANKED
        else:
            score = lo = hi = nan
            rb = rw = 0
            section = DISCONNECTED if disconnected[i] else PROVISIONAL
        rows.append(
            Row(
                model=names[i],
                score=score,
                lower=lo,
                upper=hi,
                rank_best=rb,
                rank_worst=rw,
                votes=int(tally.votes[i]),
                wins=int(tally.wins[i]),
                losses=int(tally.losses[i]),
                ties=int(tally.ties[i]),
                both_bad=int(tally.both_bad[i]),
                both_bad_rate=float(tally.both_bad[i] / tally.votes[i]),
                section=section,
            )
        )
    order = {RANKED: 0, PROVISIONAL: 1, DISCONNECTED: 2}
    rows.sort(
        key=lambda r: (order[r.section], -r.score if r.section == RANKED else -r.votes, r.model)
    )
    return Board(
        view=view,
        breakdown=breakdown,
        rows=rows,
        votes=int(sel.sum()),
        style_coefs=style_coefs,
        note="; ".join(notes),
    )


def raw_method(config: RankingConfig, breakdown: str) -> str:
    """The interval method of a raw board: the overall board's, or the breakdowns'."""
    return config.method if breakdown == "all" else config.breakdown_method


def _raw(
    a: np.ndarray,
    b: np.ndarray,
    o: np.ndarray,
    n_models: int,
    weights: np.ndarray | None,
    config: RankingConfig,
    *,
    method: str,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    counts = counts_from_votes(a, b, o, n_models=n_models, weights=weights, both_bad="tie")
    if method == "sandwich":
        theta = fit(counts)
        squared = None
        if weights is not None:
            # The meat of a weighted fit sums squared weights; same pairs, since all w > 0.
            squared = counts_from_votes(
                a, b, o, n_models=n_models, weights=weights**2, both_bad="tie"
            )
        res = sandwich(counts, theta, level=config.level, meat_counts=squared)
    else:
        if weights is not None:
            # Resample as many unit votes as the weighted votes are worth (Kish's effective
            # sample size), keeping the weighted proportions; the fit does not depend on the
            # overall scale of the counts.
            n_eff = weights.sum() ** 2 / (weights**2).sum()
            factor = n_eff / weights.sum()
            counts = dataclasses.replace(
                counts,
                wins_a=counts.wins_a * factor,
                wins_b=counts.wins_b * factor,
                ties=counts.ties * factor,
            )
        res = bootstrap(counts, rounds=config.rounds, seed=config.seed, level=config.level)
    return res.theta, res.lower, res.upper


def _style(
    a: np.ndarray,
    b: np.ndarray,
    o: np.ndarray,
    n_models: int,
    weights: np.ndarray | None,
    ratios: np.ndarray,
    config: RankingConfig,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, tuple[float, float, float]]]:
    data = style_data(a, b, o, None, None, n_models=n_models, names=STYLE_NAMES, ratios=ratios)
    if config.style_method == "sandwich":
        theta, coefs = fit_style(data, weights=weights)
        res = sandwich_style(data, theta, coefs, level=config.level, weights=weights)
    else:
        res = bootstrap_style(
            data,
            rounds=config.style_rounds,
            seed=config.seed,
            level=config.level,
            weights=weights,
        )
    coefs = {
        name: (float(c), float(lo), float(hi))
        for name, c, lo, hi in zip(
            data.names, res.coefs, res.coef_lower, res.coef_upper, strict=True
        )
    }
    return res.theta, res.lower, res.upper, coefs


def pairs_all(
    votes: VoteArrays, config: RankingConfig, *, by: Sequence[str] = ("category", "language")
) -> dict[str, dict]:
    """Head-to-head tallies (``pairwise.PairTallies.as_dict``) over all votes and per value of
    each breakdown field, keyed as the boards are."""

    def tallies(mask: np.ndarray | None) -> dict:
        a, b, o = (
            (votes.a, votes.b, votes.outcome)
            if mask is None
            else (votes.a[mask], votes.b[mask], votes.outcome[mask])
        )
        t = pair_tallies(a, b, o, len(votes.model_names), both_bad=config.both_bad)
        return t.as_dict(votes.model_names)

    return {key: tallies(mask) for key, mask in breakdown_masks(votes, by)}


# Values that make no board: a language the detector could not tell is not a language.
NO_BOARD = {"language": {"und"}}


def breakdown_masks(
    votes: VoteArrays, by: Sequence[str]
) -> Iterator[tuple[str, np.ndarray | None]]:
    """("all", None), then ("<field>:<value>", its votes' mask) per value of each field. A
    category board holds the votes of that curated category and those tagged with it (a
    curated category is a tag of its own; a vote can be on several category boards)."""
    yield "all", None
    for name in by:
        codes, labels = votes.coded(name)
        skip = NO_BOARD.get(name, set())
        masks = {v: codes == code for code, v in enumerate(labels) if v and v not in skip}
        if name == "category" and votes.tags is not None:
            for tag, mask in tag_masks(np.asarray(votes.tags), votes.tag_sets).items():
                masks[tag] = masks[tag] | mask if tag in masks else mask
        for label in sorted(masks):  # sorted: boards come out in a stable order
            yield f"{name}:{label}", masks[label]


def compute_all(
    votes: VoteArrays,
    config: RankingConfig,
    *,
    by: Sequence[str] = ("category", "language"),
    style_breakdowns: bool = True,
) -> list[Board]:
    """Raw and style boards over all votes, then per value of each breakdown field."""
    jobs = [
        (view, key, mask)
        for key, mask in breakdown_masks(votes, by)
        for view in (("raw", "style") if mask is None or style_breakdowns else ("raw",))
    ]
    return boards_compute(votes, config, jobs)


def boards_compute(
    votes: VoteArrays, config: RankingConfig, jobs: Sequence[tuple[str, str, np.ndarray | None]]
) -> list[Board]:
    """One board per (view, breakdown, mask) job, telling ``progress`` of each bootstrap round
    (or each board, for sandwich intervals)."""

    def rounds(view: str, key: str) -> int:
        if view == "raw":
            return config.rounds if raw_method(config, key) == "bootstrap" else 0
        return config.style_rounds if config.style_method == "bootstrap" else 0

    expect(sum(rounds(view, key) or 1 for view, key, _ in jobs))
    boards = []
    for view, key, mask in jobs:
        boards.append(compute_board(votes, config, view=view, mask=mask, breakdown=key))
        if not rounds(view, key):
            advance()
    return boards
