"""How far an LLM judge can be trusted, measured against the human votes on the same battles.
Pure numpy/scipy, no ORM: the evaluation room loads the verdicts and votes into arrays.

Signs read from side A of a battle: +1 A better, -1 B better, 0 a tie. A human "tie" and "both
bad" are both 0 (neither side is preferred). A judge is asked in both orders; its two verdicts
(a strong one weighing twice a plain one) are summed from A's side, and the sign of the sum is
its verdict on the battle. Every figure comes with a bootstrap 95% interval over battles.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ranking.bradley_terry import TIE, A
from ranking.judged import LEVELS

# A verdict level (the answer shown first is A) as a signed strength: a strong verdict (three
# games in ranking.judged) weighs twice a plain one.
STRENGTH = {
    level: (0 if outcome == TIE else 1 if outcome == A else -1) * (2 if games == 3 else 1)
    for level, (outcome, games) in LEVELS.items()
}
HUMAN = {"a": 1, "b": -1, "tie": 0, "both_bad": 0}
MISSING = -9  # no verdict in that order


@dataclass(frozen=True)
class Estimate:
    value: float  # NaN when nothing could be measured
    lower: float
    upper: float
    n: int  # battles (or pairs) it rests on

    def as_dict(self) -> dict:
        def clean(x: float) -> float | None:
            return None if np.isnan(x) else round(float(x), 4)

        return {"value": clean(self.value), "lower": clean(self.lower),
                "upper": clean(self.upper), "n": self.n}  # fmt: skip


NOTHING = Estimate(float("nan"), float("nan"), float("nan"), 0)


def from_side_a(level: str | None, a_first: bool) -> int:
    """A verdict's signed strength from side A's point of view; MISSING without a verdict."""
    if not level:
        return MISSING
    strength = STRENGTH[level]
    return strength if a_first else -strength


def combined(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """The judge's verdict on each battle from both orders (MISSING where neither gave one)."""
    both = np.stack([first, second])
    given = both != MISSING
    total = np.where(given, both, 0).sum(axis=0)
    return np.where(given.any(axis=0), np.sign(total), MISSING)


def bootstrap(
    statistic: Callable[[np.ndarray], float], n: int, *, rounds: int, seed: int
) -> Estimate:
    """``statistic`` of the rows picked by an index array: on all n rows, and the 2.5th and
    97.5th percentiles over ``rounds`` resamplings of them with replacement."""
    if n == 0:
        return NOTHING
    value = statistic(np.arange(n))
    rng = np.random.default_rng(seed)
    draws = np.array([statistic(rng.integers(0, n, n)) for _ in range(rounds)])
    draws = draws[~np.isnan(draws)]
    if not len(draws):
        return Estimate(value, float("nan"), float("nan"), n)
    lower, upper = np.percentile(draws, [2.5, 97.5])
    return Estimate(float(value), float(lower), float(upper), n)


def _share(hits: np.ndarray) -> Callable[[np.ndarray], float]:
    return lambda idx: float(hits[idx].mean()) if len(idx) else float("nan")


def agreement(
    human: np.ndarray, judge: np.ndarray, *, rounds: int = 500, seed: int = 0
) -> dict[str, Estimate]:
    """``decisive``: on battles where the human and the judge both preferred a side, the share
    where they preferred the same one (MT-Bench's agreement without ties). ``three_way``: on
    every battle with a judge verdict, the share where both said the same of A, B or neither."""
    given = judge != MISSING
    decisive = given & (human != 0) & (judge != 0)
    return {
        "decisive": bootstrap(
            _share((human == judge)[decisive]), int(decisive.sum()), rounds=rounds, seed=seed
        ),
        "three_way": bootstrap(
            _share((human == judge)[given]), int(given.sum()), rounds=rounds, seed=seed + 1
        ),
    }


def position_flips(
    first: np.ndarray, second: np.ndarray, *, rounds: int = 500, seed: int = 0
) -> Estimate:
    """The share of battles asked in both orders whose two verdicts, read from the same side,
    point different ways (one a tie and the other not counts): the order swayed the judge."""
    both = (first != MISSING) & (second != MISSING)
    flips = (np.sign(first) != np.sign(second))[both]
    return bootstrap(_share(flips), int(both.sum()), rounds=rounds, seed=seed)


def self_preference(
    own_side: np.ndarray, human: np.ndarray, judge: np.ndarray, *, rounds: int = 500, seed: int = 0
) -> Estimate:
    """On battles where exactly one side is of the judge's own family (``own_side`` +1: A,
    -1: B, 0: neither), the judge's win rate for that side minus the humans' (a tie a half):
    above 0, the judge favours its own family more than people do."""
    use = (own_side != 0) & (judge != MISSING)
    own, h, j = own_side[use], human[use], judge[use]
    judge_win = (1 + own * j) / 2  # 1 own side won, 0.5 tie, 0 lost
    human_win = (1 + own * h) / 2

    def gap(idx: np.ndarray) -> float:
        return float(judge_win[idx].mean() - human_win[idx].mean()) if len(idx) else float("nan")

    return bootstrap(gap, int(use.sum()), rounds=rounds, seed=seed)


def rank_agreement(judge: dict[str, float], human: dict[str, float]) -> dict:
    """Spearman's and Kendall's rank correlations between two boards' scores over the models
    both rank (None below three models)."""
    common = sorted(set(judge) & set(human))
    if len(common) < 3:
        return {"models": common, "spearman": None, "kendall": None}
    from scipy import stats  # only here: it costs any process that imports it seconds

    x = [judge[m] for m in common]
    y = [human[m] for m in common]
    spearman = stats.spearmanr(x, y).statistic
    kendall = stats.kendalltau(x, y).statistic
    return {
        "models": common,
        "spearman": None if np.isnan(spearman) else round(float(spearman), 4),
        "kendall": None if np.isnan(kendall) else round(float(kendall), 4),
    }


def separability(intervals: Sequence[tuple[float, float]]) -> float | None:
    """Arena-Hard's separability: the share of model pairs whose intervals do not overlap."""
    pairs = [(x, y) for i, x in enumerate(intervals) for y in intervals[i + 1 :]]
    if not pairs:
        return None
    apart = sum(1 for (lo1, hi1), (lo2, hi2) in pairs if hi1 < lo2 or hi2 < lo1)
    return apart / len(pairs)
