"""Bradley–Terry strengths from pairwise votes: aggregation, penalised maximum likelihood, scale.

Pure numpy/scipy; nothing here knows about Django. Strengths are natural-log odds (θ): the model
says P(a beats b) = σ(θ_a − θ_b), and a tie counts as half a win for each side.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ranking.blas import blas_single

A = 0
B = 1
TIE = 2
BOTH_BAD = 3

# 400 / ln 10: one natural-log unit of strength in Elo-style points.
SCALE = 400.0 / np.log(10.0)
# The ridge penalty (reg/2)·‖θ‖² every fit takes unless told otherwise, plain or
# style-controlled, resampled or not: it holds a model that never lost at a finite strength.
REG = 1e-6

# Above this many possible ordered pairs the dense bincount over M² bins costs more memory than
# sorting the keys does.
_DENSE_KEYS_MAX = 4_000_000


@dataclass(frozen=True)
class PairCounts:
    """Votes aggregated per unordered pair (a < b); counts may be weighted, hence floats."""

    n_models: int
    a: np.ndarray
    b: np.ndarray
    wins_a: np.ndarray
    wins_b: np.ndarray
    ties: np.ndarray

    @property
    def n(self) -> np.ndarray:
        return self.wins_a + self.wins_b + self.ties

    @property
    def score_a(self) -> np.ndarray:
        """What a scored against b: a win is 1, a tie is 1/2."""
        return self.wins_a + 0.5 * self.ties

    @property
    def total(self) -> float:
        return float(self.n.sum())


def check_both_bad(both_bad: str) -> None:
    if both_bad not in ("tie", "drop"):
        raise ValueError(f"both_bad must be 'tie' or 'drop', not {both_bad!r}")


def check_weights(w: np.ndarray, n: int) -> None:
    if w.shape != (n,):
        raise ValueError("weights must have one entry per vote")
    if not np.isfinite(w).all() or (w < 0).any():
        raise ValueError("weights must be finite and non-negative")


def validate_votes(
    a_idx: np.ndarray, b_idx: np.ndarray, outcome: np.ndarray, n_models: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Votes as flat int64 arrays, after checking indices and outcome codes."""
    a = np.asarray(a_idx, dtype=np.int64).ravel()
    b = np.asarray(b_idx, dtype=np.int64).ravel()
    o = np.asarray(outcome, dtype=np.int64).ravel()
    if not (a.shape == b.shape == o.shape):
        raise ValueError("a_idx, b_idx and outcome must have the same length")
    if a.size:
        if min(a.min(), b.min()) < 0 or max(a.max(), b.max()) >= n_models:
            raise ValueError("model index out of range")
        if np.any(a == b):
            raise ValueError("a model cannot be compared with itself")
        if o.min() < A or o.max() > BOTH_BAD:
            raise ValueError("outcome must be one of A, B, TIE, BOTH_BAD (0..3)")
    return a, b, o


def counts_from_votes(
    a_idx: np.ndarray,
    b_idx: np.ndarray,
    outcome: np.ndarray,
    *,
    n_models: int,
    weights: np.ndarray | None = None,
    both_bad: str = "tie",
) -> PairCounts:
    """Aggregate votes into one row per unordered pair that has any (weight of) votes."""
    check_both_bad(both_bad)
    a, b, o = validate_votes(a_idx, b_idx, outcome, n_models)
    w = np.ones(a.size) if weights is None else np.asarray(weights, dtype=np.float64).ravel()
    check_weights(w, a.size)
    if both_bad == "drop":
        keep = o != BOTH_BAD
        a, b, o, w = a[keep], b[keep], o[keep], w[keep]

    lo = np.minimum(a, b)
    hi = np.maximum(a, b)
    swapped = a > b
    # After putting the lower index first, a vote for "A" is a win for whichever side A was.
    lo_won = np.where(swapped, o == B, o == A)
    hi_won = np.where(swapped, o == A, o == B)
    tied = (o == TIE) | (o == BOTH_BAD)

    key = lo * n_models + hi
    if n_models * n_models <= _DENSE_KEYS_MAX:
        size = n_models * n_models
        wa = np.bincount(key, w * lo_won, minlength=size)
        wb = np.bincount(key, w * hi_won, minlength=size)
        tt = np.bincount(key, w * tied, minlength=size)
        keys = np.flatnonzero((wa + wb + tt) > 0)
        wa, wb, tt = wa[keys], wb[keys], tt[keys]
    else:
        keys, inv = np.unique(key, return_inverse=True)
        wa = np.bincount(inv, w * lo_won, minlength=keys.size)
        wb = np.bincount(inv, w * hi_won, minlength=keys.size)
        tt = np.bincount(inv, w * tied, minlength=keys.size)
        nz = (wa + wb + tt) > 0
        keys, wa, wb, tt = keys[nz], wa[nz], wb[nz], tt[nz]
    return PairCounts(
        n_models=n_models,
        a=(keys // n_models).astype(np.int64),
        b=(keys % n_models).astype(np.int64),
        wins_a=wa,
        wins_b=wb,
        ties=tt,
    )


def softplus(x: np.ndarray) -> np.ndarray:
    """log(1 + eˣ) without overflow."""
    return np.logaddexp(0.0, x)


def objective(counts: PairCounts, theta: np.ndarray, reg: float) -> float:
    """Negative log-likelihood (ties as half wins) plus (reg/2)·‖θ‖²."""
    d = theta[counts.a] - theta[counts.b]
    n, s = counts.n, counts.score_a
    # s·(−log σ(d)) + (n − s)·(−log σ(−d)), using softplus(d) = softplus(−d) + d.
    nll = np.sum(n * softplus(-d) + (n - s) * d)
    return float(nll + 0.5 * reg * theta @ theta)


def gradient_hessian(
    counts: PairCounts, theta: np.ndarray, reg: float
) -> tuple[np.ndarray, np.ndarray]:
    """Gradient and Hessian of `objective`, scattered from the pairs."""
    m = counts.n_models
    a, b, n = counts.a, counts.b, counts.n
    p = sigmoid(theta[a] - theta[b])
    r = n * p - counts.score_a
    g = np.bincount(a, r, minlength=m) - np.bincount(b, r, minlength=m) + reg * theta
    w = n * p * (1.0 - p)
    h = np.zeros(m * m)
    # Each unordered pair occupies its own (a, b) cell, so plain assignment is a scatter-add.
    h[a * m + b] = -w
    h[b * m + a] = -w
    h = h.reshape(m, m)
    h[np.diag_indices(m)] = np.bincount(a, w, minlength=m) + np.bincount(b, w, minlength=m) + reg
    return g, h


def sigmoid(x: np.ndarray) -> np.ndarray:
    """σ(x), cheaper than scipy.special.expit on large arrays; exp overflow gives the limit."""
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


def newton_direction(h: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Solve H·Δ = −g for gradients orthogonal to the all-ones direction.

    Without the penalty, H is singular along 1 (only differences of strengths matter). Adding
    11ᵀ/M leaves the solution unchanged on the complement of 1, where g lives, and makes the
    system regular there, so a tiny penalty does not make it ill-conditioned.
    """
    m = h.shape[-1]
    try:
        return -np.linalg.solve(h + 1.0 / m, g[..., None])[..., 0]
    except np.linalg.LinAlgError:
        # Disconnected graph without penalty: several null directions; take the minimum-norm step.
        return -np.linalg.lstsq(h, g, rcond=None)[0]


@blas_single
def fit(
    counts: PairCounts,
    *,
    reg: float = REG,
    theta0: np.ndarray | None = None,
    max_iter: int = 200,
    tol: float = 1e-10,
) -> np.ndarray:
    """Penalised maximum-likelihood Bradley–Terry strengths, centred to mean 0.

    Newton's method with a backtracking (Armijo) line search: the objective is convex, so this
    converges from anywhere, including when a model never lost and its strength runs off towards
    the point where only the penalty holds it.
    """
    m = counts.n_models
    if m < 2 or counts.a.size == 0:
        return np.zeros(m)
    theta = np.zeros(m) if theta0 is None else np.array(theta0, dtype=np.float64)
    theta -= theta.mean()
    f = objective(counts, theta, reg)
    for _ in range(max_iter):
        g, h = gradient_hessian(counts, theta, reg)
        step = newton_direction(h, g)
        step -= step.mean()
        slope = float(g @ step)
        if slope >= 0:  # numerically at the optimum
            break
        t = 1.0
        # A very large first step only happens far from the optimum (separated data); capping
        # it avoids exp overflow in the trial and lets the next Newton step aim again.
        biggest = np.abs(step).max()
        if biggest > 10.0:
            t = 10.0 / biggest
        while True:
            trial = theta + t * step
            f_trial = objective(counts, trial, reg)
            if f_trial <= f + 1e-4 * t * slope or t < 1e-12:
                break
            t *= 0.5
        theta, f = trial, f_trial
        if t * biggest < tol or -slope < tol * tol:
            break
    return theta - theta.mean()


def to_scores(
    theta: np.ndarray, *, anchor: int | None = None, anchor_score: float = 1000.0
) -> np.ndarray:
    """Elo-style points 400·log10(e^θ): mean model at 1000, or model `anchor` at `anchor_score`."""
    points = SCALE * np.asarray(theta, dtype=np.float64)
    if anchor is None:
        return points - points.mean() + 1000.0
    return points - points[anchor] + anchor_score


def components(counts: PairCounts) -> np.ndarray:
    """Connected-component label per model of the graph of pairs that have votes.

    Models with no votes are components of their own. Strengths in different components are on
    unrelated scales (only the penalty ties them together), so they must not be ranked together.
    """
    # Here, not at the top: scipy.sparse costs every process that imports this module a second.
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    m = counts.n_models
    has = counts.n > 0
    graph = coo_matrix(
        (np.ones(int(has.sum())), (counts.a[has], counts.b[has])), shape=(m, m)
    ).tocsr()
    _, labels = connected_components(graph, directed=False)
    return labels
