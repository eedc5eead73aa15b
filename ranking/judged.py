"""A judge's verdicts against a baseline, as Arena-Hard-Auto reads them, turned into the same
vote arrays the human leaderboard is fitted on, and the checks of the judge itself. Pure
numpy, no ORM: the evaluation runs (issue 12) feed it.

A verdict compares one model's answer with the baseline's answer to the same prompt, shown in
one order; every pair is asked in both orders. Five levels: A≫B, A>B, A=B, B>A, B≫A, where A is
whichever answer was shown first. A strong verdict counts as three games, as Arena-Hard does.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ranking.bradley_terry import TIE, A, B
from ranking.compute import VoteArrays

# level -> (outcome for the answer shown first, games it counts as)
LEVELS: dict[str, tuple[int, int]] = {
    "A>>B": (A, 3),
    "A>B": (A, 1),
    "A=B": (TIE, 1),
    "B>A": (B, 1),
    "B>>A": (B, 3),
}
_VERDICT = re.compile(r"\[\[\s*(A\s*>>\s*B|A\s*>\s*B|A\s*=\s*B|B\s*>\s*A|B\s*>>\s*A)\s*\]\]")


def parse_verdict(reply: str) -> str | None:
    """The level in a judge's reply ("... [[A>B]]"), the last one given; None when there is
    none (a missing verdict is recorded as missing, never guessed)."""
    found = _VERDICT.findall(reply or "")
    return re.sub(r"\s", "", found[-1]) if found else None


@dataclass(frozen=True)
class Verdict:
    model: int  # index into the model names; the baseline has its own index
    baseline: int
    model_first: bool  # the model's answer was shown as A
    level: str | None  # None: missing
    category: int = 0


def _for_model(verdict: Verdict) -> tuple[int, int] | None:
    """(outcome for the model, games) from the model's side, whichever order it was shown in."""
    if verdict.level is None:
        return None
    outcome, games = LEVELS[verdict.level]
    if not verdict.model_first and outcome != TIE:
        outcome = B if outcome == A else A
    return outcome, games


def vote_arrays(
    verdicts: Sequence[Verdict], model_names: list[str], *, style: np.ndarray | None = None
) -> VoteArrays:
    """The verdicts as votes, a = the model, b = the baseline, one row per game (a strong
    verdict is three); missing verdicts are left out. ``style``: per verdict, the (model,
    baseline) style features, shape (len(verdicts), 2, K), for the style-controlled view."""
    rows, style_rows = [], []
    for i, verdict in enumerate(verdicts):
        found = _for_model(verdict)
        if found is None:
            continue
        outcome, games = found
        rows += [(verdict.model, verdict.baseline, outcome, verdict.category)] * games
        if style is not None:
            style_rows += [style[i]] * games
    data = np.array(rows, dtype=np.int64).reshape(-1, 4)
    k = style.shape[2] if style is not None else 1
    features = np.array(style_rows, dtype=np.float64).reshape(-1, 2, k)
    if style is None:
        features = np.zeros((len(data), 2, k))
    return VoteArrays(
        model_names=list(model_names),
        a=data[:, 0],
        b=data[:, 1],
        outcome=data[:, 2],
        style_a=features[:, 0, :],
        style_b=features[:, 1, :],
        category=data[:, 3],
        language=np.zeros(len(data), dtype=np.int64),
    )


def _sign(verdict: Verdict) -> int | None:
    found = _for_model(verdict)
    if found is None:
        return None
    return {A: 1, B: -1, TIE: 0}[found[0]]


def position_bias(pairs: Sequence[tuple[Verdict, Verdict]]) -> tuple[float, int]:
    """The share of pairs (one prompt and model, asked in both orders) whose two verdicts,
    read from the model's side, disagree in direction: a flip when the order is swapped. And
    how many pairs had both verdicts."""
    both = [(_sign(x), _sign(y)) for x, y in pairs]
    both = [(x, y) for x, y in both if x is not None and y is not None]
    if not both:
        return 0.0, 0
    flips = sum(1 for x, y in both if x != y)
    return flips / len(both), len(both)


def win_rates(verdicts: Sequence[Verdict], n_models: int) -> np.ndarray:
    """Per model, its share of games won against the baseline (a tie counts half); NaN for a
    model with none."""
    won = np.zeros(n_models)
    games = np.zeros(n_models)
    for verdict in verdicts:
        found = _for_model(verdict)
        if found is None:
            continue
        outcome, count = found
        games[verdict.model] += count
        won[verdict.model] += count * {A: 1.0, TIE: 0.5, B: 0.0}[outcome]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(games > 0, won / np.maximum(games, 1), np.nan)


# A judge board row whose interval cannot be read as a ranking: too few games (as the human
# leaderboard lists its low-vote models apart), or an interval wider than this many points (at
# 400 points the odds change tenfold: such a row could be first or last).
MIN_GAMES = 20
MAX_WIDTH = 400.0


def interval_doubt(games: int, lower: float | None, upper: float | None) -> str:
    """Why a row's interval means nothing ("" when it can be read)."""
    if games < MIN_GAMES:
        return f"too few games ({games}, under {MIN_GAMES}) to rank"
    if lower is None or upper is None or not np.isfinite([lower, upper]).all():
        return "no interval could be fitted"
    if upper - lower > MAX_WIDTH:
        return (
            f"interval {upper - lower:,.0f} points wide (over {MAX_WIDTH:,.0f}): cannot be ranked"
        )
    return ""


def style_tracks_models(
    a: np.ndarray, b: np.ndarray, ratios: np.ndarray, n_models: int, *, share: float = 0.9
) -> bool:
    """Whether the games' style differences are (almost) told by which models played: each
    style feature that varies at all has at least ``share`` of its variance explained by the
    two models' identities (R² of a least-squares fit on them), or none varies. Then a
    style-controlled fit cannot tell a model's strength from its style, and its scores and
    intervals (often thousands of points wide) mean nothing."""
    ratios = np.asarray(ratios, dtype=float).reshape(len(a), -1)
    if len(a) == 0:
        return False
    design = np.zeros((len(a), n_models))
    design[np.arange(len(a)), a] += 1.0
    design[np.arange(len(a)), b] -= 1.0
    design = np.column_stack([design, np.ones(len(a))])
    varying = 0
    for column in ratios.T:
        spread = float(((column - column.mean()) ** 2).sum())
        if spread <= 1e-12:
            continue
        varying += 1
        fitted, *_ = np.linalg.lstsq(design, column, rcond=None)
        left = float(((column - design @ fitted) ** 2).sum())
        if 1.0 - left / spread < share:
            return False
    return True
