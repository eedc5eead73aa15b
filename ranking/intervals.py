"""Uncertainty of Bradley–Terry strengths: bootstrap and sandwich intervals, rank ranges.

All intervals are on the θ (natural-log) scale; `bradley_terry.to_scores` maps them to points.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ranking.blas import blas_single
from ranking.bradley_terry import REG, PairCounts, fit, gradient_hessian, sigmoid
from ranking.numbers import LEVEL, two_sided_z
from ranking.progress import advance

if TYPE_CHECKING:
    from scipy.sparse import csr_matrix

# Rounds per batch: enough that numpy's per-call overhead vanishes, few enough that a chunk's
# arrays stay at tens of megabytes (fewer still for very many pairs, see `bootstrap`).
_CHUNK = 250


def _cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


# The chunks run on this many threads; numpy releases the GIL in the sampling and the array
# arithmetic, and every chunk has its own seeded generator, so the result does not depend on it.
_THREADS = max(1, min(2, _cores()))


@dataclass
class Intervals:
    theta: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    method: str


def _incidence(counts: PairCounts) -> csr_matrix:
    """P×M matrix with +1 at (pair, a) and −1 at (pair, b): d = X·θ and ∇ = Xᵀ·r."""
    p = counts.a.size
    rows = np.repeat(np.arange(p), 2)
    cols = np.column_stack([counts.a, counts.b]).ravel()
    vals = np.tile([1.0, -1.0], p)
    from scipy.sparse import csr_matrix  # here: see bradley_terry.components

    return csr_matrix((vals, (rows, cols)), shape=(p, counts.n_models))


def _fit_rounds(
    counts: PairCounts,
    n: np.ndarray,
    s: np.ndarray,
    theta_hat: np.ndarray,
    h_inv: np.ndarray,
    x: csr_matrix,
    reg: float,
    *,
    max_iter: int = 60,
    tol: float = 1e-8,
) -> np.ndarray:
    """Refit many resampled data sets at once (rows of n, s), warm-started at the full-data fit.

    A chord (simplified Newton) iteration: every round reuses the full data's inverse Hessian.
    A resample is close to the data it came from, so that Hessian is close to each round's own
    and the iteration contracts fast, while each step costs a couple of matrix products instead
    of building and factorising a Hessian per round. Rounds that do not settle (a model that
    never lost in that resample, whose strength drifts off to where only the penalty holds it)
    are refitted one by one with the line-searched Newton fit.
    """
    rounds = n.shape[0]
    theta = np.tile(theta_hat, (rounds, 1))
    failed = np.zeros(rounds, dtype=bool)
    active = np.arange(rounds)
    xt = x.T.tocsr()
    for _ in range(max_iter):
        everyone = active.size == rounds
        th = theta if everyone else theta[active]
        n_act = n if everyone else n[active]
        s_act = s if everyone else s[active]
        d = (x @ th.T).T
        r = n_act * sigmoid(d) - s_act
        g = (xt @ r.T).T + reg * th
        step = -g @ h_inv
        biggest = np.abs(step).max(axis=1)
        # Steps this large mean the round is far from the full-data fit; leave it to the
        # fallback instead of risking overflow.
        ok = np.isfinite(biggest) & (biggest < 5.0)
        theta[active[ok]] = th[ok] + step[ok]
        failed[active[~ok]] = True
        active = active[ok & (biggest >= tol)]
        if active.size == 0:
            break
    failed[active] = True
    for i in np.flatnonzero(failed):
        one = PairCounts(
            n_models=counts.n_models,
            a=counts.a,
            b=counts.b,
            wins_a=s[i],  # only n and the score enter the likelihood
            wins_b=n[i] - s[i],
            ties=np.zeros_like(s[i]),
        )
        theta[i] = fit(one, reg=reg, theta0=theta_hat)
    return theta - theta.mean(axis=1, keepdims=True)


def multinomial(rng: np.random.Generator, n: int, probs: np.ndarray, size: int) -> np.ndarray:
    """`size` exact Multinomial(n, probs) draws, 1.5–2× faster than `rng.multinomial`.

    Draw independent Poisson(n·p) counts, then fix each row's total: given its total n', a
    Poisson row is Multinomial(n', p), so adding Multinomial(n − n', p) more balls, or removing
    a uniformly chosen n' − n of its balls, leaves exactly Multinomial(n, p). The fix-up touches
    only about √n balls per row; the Poisson draws are the cost, and they are cheaper per cell
    than the chain of conditional binomials numpy's multinomial uses.
    """
    probs = np.asarray(probs, dtype=np.float64)
    cells = probs.size
    draws = rng.poisson(n * probs, size=(size, cells))
    diff = n - draws.sum(axis=1)
    short = np.clip(diff, 0, None)
    if short.any():
        cdf = np.cumsum(probs)
        cdf /= cdf[-1]
        rows = np.repeat(np.arange(size), short)
        extra = np.searchsorted(cdf, rng.random(rows.size), side="right")
        np.add.at(draws, (rows, extra), 1)
    over = np.flatnonzero(diff < 0)
    if over.size:
        # Balls are numbered across the rows concerned at once, so one search finds them all.
        cum = np.cumsum(draws[over].reshape(-1))
        row_start = cum[::cells] - draws[over, 0]
        balls = np.concatenate(
            [
                row_start[k] + rng.choice(n - diff[i], size=-diff[i], replace=False)
                for k, i in enumerate(over)
            ]
        )
        which = np.searchsorted(cum, balls, side="right")
        np.subtract.at(draws, (over[which // cells], which % cells), 1)
    return draws


@blas_single
def bootstrap(
    counts: PairCounts,
    *,
    rounds: int = 1000,
    seed: int = 0,
    level: float = LEVEL,
    reg: float = REG,
) -> Intervals:
    """Percentile intervals from multinomial resampling of the (pair, outcome) cells.

    Each round redistributes the N votes over the cells with probabilities count/N, i.e. the
    ordinary bootstrap of independent votes, done on aggregated counts. Weighted counts are
    resampled as round(total weight) unit votes, which is what inverse-probability weights
    normalised to mean 1 call for.
    """
    theta_hat = fit(counts, reg=reg)
    m = counts.n_models
    total = counts.total
    if m < 2 or counts.a.size == 0 or total <= 0 or rounds < 1:
        return Intervals(theta_hat, theta_hat.copy(), theta_hat.copy(), "bootstrap")

    n_votes = int(round(total))
    if n_votes < 1:
        return Intervals(theta_hat, theta_hat.copy(), theta_hat.copy(), "bootstrap")
    n_pairs = counts.a.size
    cells = np.concatenate([counts.wins_a, counts.wins_b, counts.ties])
    probs = cells / cells.sum()

    _, h = gradient_hessian(counts, theta_hat, reg)
    # Gradients are orthogonal to the all-ones direction, see bradley_terry.newton_direction.
    h_inv = np.linalg.inv(h + 1.0 / m)
    x = _incidence(counts)

    # Chunks depend on the data alone, never on the thread count, and so do the draws.
    chunk = max(1, min(_CHUNK, (64 << 20) // (8 * 3 * n_pairs)))
    bounds = list(range(0, rounds, chunk)) + [rounds]
    seeds = np.random.SeedSequence(seed).spawn(len(bounds) - 1)

    def one_chunk(i: int) -> np.ndarray:
        rng = np.random.default_rng(seeds[i])
        draws = multinomial(rng, n_votes, probs, bounds[i + 1] - bounds[i]).astype(np.float64)
        wa = draws[:, :n_pairs]
        wb = draws[:, n_pairs : 2 * n_pairs]
        tt = draws[:, 2 * n_pairs :]
        return _fit_rounds(counts, wa + wb + tt, wa + 0.5 * tt, theta_hat, h_inv, x, reg)

    parts = []
    with ThreadPoolExecutor(_THREADS) if _THREADS > 1 and len(bounds) > 2 else _Inline() as pool:
        for i, part in enumerate(pool.map(one_chunk, range(len(bounds) - 1))):
            parts.append(part)
            advance(bounds[i + 1] - bounds[i])  # here, in the caller's thread
    thetas = np.concatenate(parts)

    alpha = (1.0 - level) / 2.0
    lower, upper = np.quantile(thetas, [alpha, 1.0 - alpha], axis=0)
    return Intervals(theta_hat, lower, upper, "bootstrap")


class _Inline:
    """``ThreadPoolExecutor``'s ``map`` without threads, for one chunk or one thread."""

    def __enter__(self) -> _Inline:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def map(self, fn, items):
        return map(fn, items)


@blas_single
def sandwich(
    counts: PairCounts,
    theta: np.ndarray,
    *,
    level: float = LEVEL,
    reg: float = REG,
    meat_counts: PairCounts | None = None,
) -> Intervals:
    """Normal intervals θ ± z·se from the robust (Huber–White) covariance H⁻¹ M H⁻¹.

    The bread is the Fisher information Σ n p(1−p) x xᵀ; the meat is the observed spread of the
    per-vote scores Σ_cells n (y − p)² x xᵀ with y ∈ {1, 0, ½}. With ties scored as half wins the
    Bernoulli variance p(1−p) overstates the real spread, so the meat is what keeps the intervals
    honest. Both are Laplacians (null along 1); the pseudo-inverse gives the covariance of the
    centred (sum-zero) strengths. `reg` is accepted for symmetry with `bootstrap`; the penalty is
    far too small to matter for the covariance and is left out of it.

    For counts aggregated with per-vote weights w, the meat must sum w² rather than w: pass the
    same votes aggregated with weights w² as `meat_counts` (same pairs, in the same order).
    """
    del reg
    m = counts.n_models
    theta = np.asarray(theta, dtype=np.float64)
    if m < 2 or counts.a.size == 0:
        return Intervals(theta, theta.copy(), theta.copy(), "sandwich")
    a, b = counts.a, counts.b
    p = sigmoid(theta[a] - theta[b])
    bread = _laplacian(m, a, b, counts.n * p * (1.0 - p))
    mc = counts if meat_counts is None else meat_counts
    if not (np.array_equal(mc.a, a) and np.array_equal(mc.b, b)):
        raise ValueError("meat_counts must have the same pairs as counts")
    meat = _laplacian(
        m, a, b, mc.wins_a * (1.0 - p) ** 2 + mc.wins_b * p**2 + mc.ties * (0.5 - p) ** 2
    )
    bread_pinv = np.linalg.pinv(bread, hermitian=True)
    cov = bread_pinv @ meat @ bread_pinv
    se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    z = two_sided_z(level)
    return Intervals(theta, theta - z * se, theta + z * se, "sandwich")


def _laplacian(m: int, a: np.ndarray, b: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Σ_pairs w (e_a − e_b)(e_a − e_b)ᵀ."""
    out = np.zeros(m * m)
    out[a * m + b] = -w
    out[b * m + a] = -w
    out = out.reshape(m, m)
    out[np.diag_indices(m)] = np.bincount(a, w, minlength=m) + np.bincount(b, w, minlength=m)
    return out


def rank_ranges(lower: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(best, worst) rank each model could take given the intervals.

    best = 1 + how many models are surely better (their lower bound above this upper bound);
    worst = n − how many are surely worse (their upper bound below this lower bound).
    """
    lower = np.asarray(lower, dtype=np.float64)
    upper = np.asarray(upper, dtype=np.float64)
    n = lower.size
    sorted_lower = np.sort(lower)
    sorted_upper = np.sort(upper)
    surely_better = n - np.searchsorted(sorted_lower, upper, side="right")
    surely_worse = np.searchsorted(sorted_upper, lower, side="left")
    return (1 + surely_better).astype(np.int64), (n - surely_worse).astype(np.int64)
