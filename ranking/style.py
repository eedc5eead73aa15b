"""Style control: Bradley–Terry with answer-style covariates (a contextual BT, i.e. a logistic
regression on ±1 model indicators plus style differences).

The model says P(a beats b) = σ(θ_a − θ_b + fᵀβ), where f are the normalised style differences of
the two answers (length, headers, list items, bold). β absorbs how much raters reward style, and
θ is what is left: the strength of the model with style held equal.

Nothing here builds the N×M design matrix: the gradient and Hessian blocks are scattered straight
from the votes with np.bincount, so a million votes cost a few passes over flat arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ranking.blas import blas_single
from ranking.bradley_terry import (
    BOTH_BAD,
    REG,
    TIE,
    A,
    B,
    check_both_bad,
    check_weights,
    validate_votes,
)
from ranking.numbers import LEVEL, two_sided_z
from ranking.progress import advance

STYLE_NAMES = ("length", "headers", "lists", "bold")


@dataclass(frozen=True)
class StyleData:
    a: np.ndarray
    b: np.ndarray
    y: np.ndarray
    features: np.ndarray
    names: tuple[str, ...]
    n_models: int


@dataclass
class StyleIntervals:
    theta: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    coefs: np.ndarray
    coef_lower: np.ndarray
    coef_upper: np.ndarray
    method: str

    @classmethod
    def of(
        cls, params: np.ndarray, lower: np.ndarray, upper: np.ndarray, *, m: int, method: str
    ) -> StyleIntervals:
        """Split one vector of parameters and their bounds: the m scores, then the coefficients."""
        return cls(params[:m], lower[:m], upper[:m], params[m:], lower[m:], upper[m:], method)


def style_ratios(style_a: np.ndarray, style_b: np.ndarray, names: tuple[str, ...] | list[str]):
    """Normalised style differences, one row per vote (N×K): (a − b)/(a + b), 0 where both are 0.

    (a − b)/(a + b), so a 600-vs-500-token gap counts like 60 vs 50 rather than like 200 vs
    100, and one header against none counts as fully as ten against none. FastChat's
    ``preprocess_for_style`` divides by a + b + 1 instead, which damps small counts (one header
    against none: 0.5) and so moves style-controlled scores by a few points on small logs; its
    lengths, in hundreds of tokens, come out the same to a fraction of a percent. We keep the
    plain ratio, scale-free for every feature (docs/leaderboard.md says so). Vote by vote, so
    every board of a recompute shares one computation (``standardised`` is per board).
    """
    sa = np.asarray(style_a, dtype=np.float64)
    sb = np.asarray(style_b, dtype=np.float64)
    if sa.ndim == 1:
        sa, sb = sa[:, None], sb[:, None]
    if sa.shape != sb.shape:
        raise ValueError("style_a and style_b must have the same shape")
    if sa.shape[1] != len(names):
        raise ValueError(f"{sa.shape[1]} style columns but {len(names)} names")
    total = sa + sb
    diff = sa - sb
    # In place: at a million votes the temporaries of the obvious expression cost more than
    # the arithmetic.
    empty = total == 0
    total[empty] = 1.0
    diff /= total
    diff[empty] = 0.0
    return diff


def standardised(ratios: np.ndarray) -> np.ndarray:
    """Columns centred and scaled to unit variance (in place), so that β is "per standard
    deviation" and comparable across features; a constant column stays at 0 instead of 0/0."""
    diff = ratios
    if diff.shape[0] == 0:
        return diff
    mean = diff.mean(axis=0)
    diff -= mean
    std = np.sqrt(np.einsum("ij,ij->j", diff, diff) / diff.shape[0])
    # Relative threshold: a column of equal values can show rounding noise instead of exact 0.
    constant = std <= 1e-12 * np.maximum(1.0, np.abs(mean))
    diff /= np.where(constant, 1.0, std)
    diff[:, constant] = 0.0
    return diff


def style_features(
    style_a: np.ndarray, style_b: np.ndarray, names: tuple[str, ...] | list[str]
) -> np.ndarray:
    """Normalised (``style_ratios``), standardised (``standardised``) style differences."""
    return standardised(style_ratios(style_a, style_b, names))


def style_data(
    a_idx: np.ndarray,
    b_idx: np.ndarray,
    outcome: np.ndarray,
    style_a: np.ndarray,
    style_b: np.ndarray,
    *,
    n_models: int,
    names: tuple[str, ...] | list[str] = STYLE_NAMES,
    both_bad: str = "tie",
    ratios: np.ndarray | None = None,
) -> StyleData:
    """Votes as regression rows: y = 1 (a won), 0 (b won), ½ (tie; both bad too unless dropped).

    ``ratios``: these votes' ``style_ratios``, when already computed (``style_a``/``style_b``
    are then not read)."""
    check_both_bad(both_bad)
    a, b, o = validate_votes(a_idx, b_idx, outcome, n_models)
    if ratios is None:
        ratios = style_ratios(style_a, style_b, names)
    elif ratios.shape != (a.size, len(names)):
        raise ValueError("ratios must have one row per vote and one column per name")
    else:  # standardising works in place: never on the caller's array
        ratios = np.array(ratios, dtype=np.float64)
    if both_bad != "tie":
        keep = o != BOTH_BAD
        a, b, o, ratios = a[keep], b[keep], o[keep], ratios[keep]
    y = np.select([o == A, o == B, (o == TIE) | (o == BOTH_BAD)], [1.0, 0.0, 0.5])
    return StyleData(
        a=a,
        b=b,
        y=y,
        features=standardised(ratios),
        names=tuple(names),
        n_models=n_models,
    )


class _Problem:
    """The penalised, weighted log-likelihood and its derivatives for one StyleData."""

    # The line-searched Newton fit: at most FIT_STEPS steps, done once a full step is below
    # STEP_TOL. The chord refit of a resample: at most REFIT_STEPS, done below REFIT_TOL.
    FIT_STEPS = 100
    STEP_TOL = 1e-6
    REFIT_STEPS = 30
    REFIT_TOL = 1e-7

    def __init__(self, data: StyleData, reg: float) -> None:
        self.m = data.n_models
        self.k = data.features.shape[1]
        self.a = data.a
        self.b = data.b
        self.y = data.y
        # Feature-major, so each feature is one contiguous run for bincount and dot products.
        self.ft = np.ascontiguousarray(data.features.T)
        self.pair = data.a * self.m + data.b
        self.reg = reg
        self._vf = np.empty_like(self.ft)

    def linear(self, params: np.ndarray) -> np.ndarray:
        theta, beta = params[: self.m], params[self.m :]
        d = theta.take(self.a)
        d -= theta.take(self.b)
        if self.k:
            d += beta @ self.ft
        return d

    def objective(self, params: np.ndarray, w: np.ndarray) -> tuple[float, np.ndarray]:
        """Objective and σ(d) at params (the latter feeds the derivatives)."""
        d = self.linear(params)
        with np.errstate(over="ignore"):
            e = np.exp(-d)
            # −log σ(d) = log(1 + e^−d); where e^−d overflows it is −d to double precision.
            nlp = np.log1p(e)
        big = ~np.isfinite(e)
        if big.any():
            nlp[big] = -d[big]
        # y·(−log σ(d)) + (1 − y)·(−log σ(−d)), with −log σ(−d) = −log σ(d) + d.
        d *= 1.0 - self.y
        d += nlp
        f = float(w @ d) + 0.5 * self.reg * float(params @ params)
        e += 1.0
        np.reciprocal(e, out=e)
        return f, e

    def probs(self, params: np.ndarray) -> np.ndarray:
        """σ(d) alone, for iterations that never look at the objective."""
        e = self.linear(params)
        np.negative(e, out=e)
        with np.errstate(over="ignore"):
            np.exp(e, out=e)
        e += 1.0
        return np.reciprocal(e, out=e)

    def gradient(self, params: np.ndarray, p: np.ndarray, w: np.ndarray) -> np.ndarray:
        m = self.m
        r = p - self.y
        r *= w
        g = np.empty(m + self.k)
        g[:m] = np.bincount(self.a, r, minlength=m) - np.bincount(self.b, r, minlength=m)
        if self.k:
            g[m:] = self.ft @ r
        g += self.reg * params
        return g

    def hessian(self, p: np.ndarray, w: np.ndarray) -> np.ndarray:
        v = 1.0 - p
        v *= p
        v *= w
        h = self.outer(v)
        h[np.diag_indices(self.m + self.k)] += self.reg
        return h

    def outer(self, v: np.ndarray) -> np.ndarray:
        """Σ_votes v·x xᵀ with x = (e_a − e_b, f), scattered block by block."""
        m, k, a, b = self.m, self.k, self.a, self.b
        h = np.zeros((m + k, m + k))
        s = np.bincount(self.pair, v, minlength=m * m).reshape(m, m)
        h[:m, :m] = -(s + s.T)
        h[np.arange(m), np.arange(m)] = s.sum(axis=0) + s.sum(axis=1)
        if k:
            vf = np.multiply(self.ft, v, out=self._vf)
            for j in range(k):
                col = np.bincount(a, vf[j], minlength=m) - np.bincount(b, vf[j], minlength=m)
                h[:m, m + j] = col
                h[m + j, :m] = col
                for i in range(j + 1):
                    h[m + i, m + j] = h[m + j, m + i] = vf[j] @ self.ft[i]
        return h

    def solver(self, h: np.ndarray) -> np.ndarray:
        """Inverse of H for gradients with θ-part orthogonal to 1.

        The θ block is singular along 1 without the penalty; such gradients have no component
        there when θ is centred, so adding 11ᵀ/M to the block changes nothing but the
        conditioning.
        """
        m = self.m
        hh = h.copy()
        hh[:m, :m] += 1.0 / m
        try:
            return np.linalg.inv(hh)
        except np.linalg.LinAlgError:
            return np.linalg.pinv(h, hermitian=True)

    def step(self, h_inv: np.ndarray, g: np.ndarray) -> np.ndarray:
        step = -(h_inv @ g)
        step[: self.m] -= step[: self.m].mean()
        return step

    def fit(self, w: np.ndarray, params0: np.ndarray) -> np.ndarray:
        """Newton with Armijo backtracking; stops once a full step is tiny.

        A Newton step below `STEP_TOL` is in the quadratic regime, so applying it leaves an
        error of order step², and no further evaluation (a full pass over the votes) is needed.
        """
        params = params0.copy()
        params[: self.m] -= params[: self.m].mean()
        f, p = self.objective(params, w)
        for _ in range(self.FIT_STEPS):
            g = self.gradient(params, p, w)
            step = self.step(self.solver(self.hessian(p, w)), g)
            biggest = float(np.abs(step).max())
            slope = float(g @ step)
            if biggest < self.STEP_TOL or slope >= 0:
                if slope < 0:
                    params = params + step
                break
            # Far from the optimum (separated data) a huge step would only overflow exp.
            t = min(1.0, 10.0 / biggest)
            while True:
                trial = params + t * step
                f_trial, p_trial = self.objective(trial, w)
                if f_trial <= f + 1e-4 * t * slope or t < 1e-10:
                    break
                t *= 0.5
            params, f, p = trial, f_trial, p_trial
        params[: self.m] -= params[: self.m].mean()
        return params

    def refit(self, w: np.ndarray, params0: np.ndarray, h_inv: np.ndarray) -> np.ndarray:
        """Refit a resample close to params0 with a chord iteration, the Hessian held fixed.

        For a bootstrap resample the full data's Hessian is within a percent or so of the
        resample's own, so the iteration contracts by about that factor per step, and a step
        needs only the gradient (a third of the work of a Newton step). Should it not settle
        (a small or lopsided resample), the line-searched Newton fit takes over.
        """
        params = params0.copy()
        last = np.inf
        for _ in range(self.REFIT_STEPS):
            step = self.step(h_inv, self.gradient(params, self.probs(params), w))
            biggest = float(np.abs(step).max())
            if not biggest < min(last, 1.0):
                break
            params += step
            if biggest < self.REFIT_TOL:
                params[: self.m] -= params[: self.m].mean()
                return params
            last = biggest
        return self.fit(w, params0)


@blas_single
def fit_style(
    data: StyleData,
    *,
    reg: float = REG,
    weights: np.ndarray | None = None,
    theta0: np.ndarray | None = None,
    coef0: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(θ centred, β): penalised ML of the style-controlled BT model, optionally weighted per vote.

    The penalty (reg/2)·‖(θ, β)‖² matches `bradley_terry.fit`, so with all-zero features the θ
    are those of the plain fit.
    """
    problem = _Problem(data, reg)
    w = _weights(data, weights)
    params0 = np.zeros(problem.m + problem.k)
    if theta0 is not None:
        params0[: problem.m] = theta0
    if coef0 is not None:
        params0[problem.m :] = coef0
    params = problem.fit(w, params0)
    return params[: problem.m], params[problem.m :]


def _weights(data: StyleData, weights: np.ndarray | None) -> np.ndarray:
    if weights is None:
        return np.ones(data.a.size)
    w = np.asarray(weights, dtype=np.float64).ravel()
    check_weights(w, data.a.size)
    return w


@blas_single
def bootstrap_style(
    data: StyleData,
    *,
    rounds: int = 100,
    seed: int = 0,
    level: float = LEVEL,
    reg: float = REG,
    weights: np.ndarray | None = None,
) -> StyleIntervals:
    """Percentile intervals from resampling votes: each round weights every vote by how many
    times a Multinomial(N, 1/N) draw picked it (the ordinary bootstrap), times its own weight,
    and refits warm-started from the full-data fit.
    """
    problem = _Problem(data, reg)
    w = _weights(data, weights)
    m, k = problem.m, problem.k
    full = problem.fit(w, np.zeros(m + k))
    n = data.a.size
    if n == 0 or rounds < 1:
        return StyleIntervals.of(full, full.copy(), full.copy(), m=m, method="bootstrap")
    rng = np.random.default_rng(seed)
    h_inv = problem.solver(problem.hessian(problem.probs(full), w))
    samples = np.empty((rounds, m + k))
    for i in range(rounds):
        picks = np.bincount(rng.integers(0, n, size=n), minlength=n)
        samples[i] = problem.refit(w * picks, full, h_inv)
        advance()
    alpha = (1.0 - level) / 2.0
    lower, upper = np.quantile(samples, [alpha, 1.0 - alpha], axis=0)
    return StyleIntervals.of(full, lower, upper, m=m, method="bootstrap")


@blas_single
def sandwich_style(
    data: StyleData,
    theta: np.ndarray,
    coefs: np.ndarray,
    *,
    level: float = LEVEL,
    weights: np.ndarray | None = None,
) -> StyleIntervals:
    """Normal intervals from the robust covariance H⁺ M H⁺ of the style-controlled fit.

    Bread Σ w p(1−p) x xᵀ, meat Σ w² (y − p)² x xᵀ (so per-vote weights are accounted for as
    in any weighted M-estimator), on the centred parametrisation via the pseudo-inverse.
    """
    problem = _Problem(data, 0.0)
    w = _weights(data, weights)
    m = problem.m
    params = np.concatenate([np.asarray(theta, dtype=np.float64), np.asarray(coefs, float)])
    p = problem.probs(params)
    bread = problem.outer(w * p * (1.0 - p))
    meat = problem.outer(w * w * (data.y - p) ** 2)
    bread_pinv = np.linalg.pinv(bread, hermitian=True)
    cov = bread_pinv @ meat @ bread_pinv
    se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    z = two_sided_z(level)
    lower, upper = params - z * se, params + z * se
    return StyleIntervals.of(params, lower, upper, m=m, method="sandwich")
