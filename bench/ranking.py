"""Ranking math on a million votes: our aggregated/batched code beside a per-vote reference.

Not a test: it prints figures. One seeded synthetic log of 1,000,000 votes among 100 models
(10% ties, 4% "both bad", raters who like long answers) is ranked three ways:

1. aggregation + Bradley–Terry fit + sandwich intervals      (target ≤ 0.5 s)
2. Bradley–Terry fit + 1,000 bootstrap rounds                 (target ≤ 2 s)
3. style-controlled fit + 100 bootstrap rounds                (target ≤ 20 s)

Then the pieces on their own, with no reference: aggregating the votes (target ≤ 1 s), one
Bradley–Terry fit of the aggregated pairs (≤ 0.1 s) and one style-controlled fit of the first
200,000 votes (≤ 5 s); these were once timed by the tests, which now only check the results.

The reference is the straightforward way, written here: one row per vote, the per-vote
log-likelihood (gradients by np.bincount) minimised by scipy's L-BFGS, a sandwich summed over
the votes in dense blocks, and one such fit per bootstrap round (resampled votes, warm-started
from the full-data fit). The reference runs only a few rounds; its time for all rounds is
extrapolated linearly, and the output says so. Ours is timed `--repeat` times (median shown).

    uv run python bench/ranking.py [--votes 1000000] [--models 100] [--repeat 3]
    uv run python bench/ranking.py --cli [--ten-million] ...   (bench/rank_cli.py's figures:
        `manage.py rank` on a battle log file beside one plain reference fit of that file)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy.optimize import minimize
from scipy.stats import norm

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import verdict  # noqa: E402
from ranking.bradley_terry import BOTH_BAD, SCALE, TIE, A, B, counts_from_votes, fit  # noqa: E402
from ranking.intervals import bootstrap, sandwich  # noqa: E402
from ranking.style import STYLE_NAMES, bootstrap_style, fit_style, style_data  # noqa: E402

TARGETS = {
    "sandwich": 0.5,
    "bootstrap": 2.0,
    "style": 20.0,
    "aggregate": 1.0,
    "fit": 0.1,
    "style_fit": 5.0,
}
# Votes in the style fit timed on its own (the size the tests once timed).
STYLE_FIT_VOTES = 200_000


def synthetic(n: int, m: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, 0.8, m)
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    typical = rng.uniform(150, 900, m)
    style_a = np.column_stack(
        [rng.gamma(4.0, typical[a] / 4.0), rng.poisson(2, n), rng.poisson(4, n), rng.poisson(3, n)]
    )
    style_b = np.column_stack(
        [rng.gamma(4.0, typical[b] / 4.0), rng.poisson(2, n), rng.poisson(4, n), rng.poisson(3, n)]
    )
    length = (style_a[:, 0] - style_b[:, 0]) / (style_a[:, 0] + style_b[:, 0])
    p = 1.0 / (1.0 + np.exp(-(theta[a] - theta[b] + 1.2 * length)))
    outcome = np.where(rng.random(n) < p, A, B)
    u = rng.random(n)
    outcome[u < 0.10] = TIE
    outcome[(u >= 0.10) & (u < 0.14)] = BOTH_BAD
    return {"a": a, "b": b, "outcome": outcome, "style_a": style_a, "style_b": style_b}


# The reference: one row per vote ----------------------------------------------------------


class PerVote:
    """Per-vote logistic log-likelihood of BT (optionally with style covariates)."""

    def __init__(self, a, b, y, m, features=None, reg=1e-6):
        self.a, self.b, self.y, self.m, self.reg = a, b, y, m, reg
        self.f = np.zeros((a.size, 0)) if features is None else features

    def loss_grad(self, params: np.ndarray, w: np.ndarray) -> tuple[float, np.ndarray]:
        m = self.m
        d = params[self.a] - params[self.b] + self.f @ params[m:]
        loss = np.sum(w * (np.logaddexp(0.0, -d) + (1.0 - self.y) * d))
        r = w * (1.0 / (1.0 + np.exp(-d)) - self.y)
        grad = np.concatenate(
            [
                np.bincount(self.a, r, minlength=m) - np.bincount(self.b, r, minlength=m),
                self.f.T @ r,
            ]
        )
        return loss + 0.5 * self.reg * params @ params, grad + self.reg * params

    def fit(self, w: np.ndarray, x0: np.ndarray, *, tight: bool = False) -> np.ndarray:
        # scipy's default tolerances for the timed fits, as a straightforward version would use;
        # tight ones (untimed) only to check that both reach the same optimum.
        options = {"maxiter": 1000}
        if tight:
            options |= {"maxiter": 20_000, "ftol": 1e-15, "gtol": 1e-9}
        res = minimize(self.loss_grad, x0, args=(w,), jac=True, method="L-BFGS-B", options=options)
        x = res.x.copy()
        x[: self.m] -= x[: self.m].mean()
        return x

    def sandwich_se(self, params: np.ndarray, block: int = 50_000) -> np.ndarray:
        """Robust standard errors, summing dense x xᵀ over blocks of votes."""
        m = self.m
        bread = np.zeros((m, m))
        meat = np.zeros((m, m))
        d = params[self.a] - params[self.b]
        p = 1.0 / (1.0 + np.exp(-d))
        for start in range(0, self.a.size, block):
            sl = slice(start, start + block)
            rows = np.arange(self.a[sl].size)
            x = np.zeros((rows.size, m))
            x[rows, self.a[sl]] = 1.0
            x[rows, self.b[sl]] = -1.0
            bread += x.T @ (x * (p[sl] * (1 - p[sl]))[:, None])
            meat += x.T @ (x * ((self.y[sl] - p[sl]) ** 2)[:, None])
        pinv = np.linalg.pinv(bread, hermitian=True)
        return np.sqrt(np.diag(pinv @ meat @ pinv))


def timed(func: Callable[[], object], repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = func()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def line(label: str, ours: float, ref: float, target: float, note: str) -> None:
    print(
        f"{label:<38} ours {ours:7.3f} s   reference {ref:9.1f} s{note}   "
        f"ratio {ref / ours:8.0f}x   target ≤ {target:g} s: {verdict(ours <= target)}"
    )


def piece(label: str, ours: float, target: float) -> None:
    print(f"{label:<38} ours {ours:7.3f} s   target ≤ {target:g} s: {verdict(ours <= target)}")


def pieces(data: dict[str, np.ndarray], m: int, repeat: int) -> None:
    """The parts of (1)–(3) on their own: aggregation, one BT fit, one style fit."""
    a, b, outcome = data["a"], data["b"], data["outcome"]
    t_counts, counts = timed(lambda: counts_from_votes(a, b, outcome, n_models=m), repeat)
    t_fit, _ = timed(lambda: fit(counts), repeat)
    k = min(STYLE_FIT_VOTES, a.size)
    sd = style_data(a[:k], b[:k], outcome[:k], data["style_a"][:k], data["style_b"][:k], n_models=m)
    t_style, _ = timed(lambda: fit_style(sd), max(1, min(repeat, 2)))
    print()
    piece(f"aggregate {a.size:,} votes", t_counts, TARGETS["aggregate"])
    piece(f"BT fit, {m} models ({counts.a.size} pairs)", t_fit, TARGETS["fit"])
    piece(f"style fit, {k:,} votes", t_style, TARGETS["style_fit"])


def main() -> None:
    if "--cli" in sys.argv:
        from bench import rank_cli

        sys.argv.remove("--cli")
        rank_cli.main()
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--votes", type=int, default=1_000_000)
    parser.add_argument("--models", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ref-rounds", type=int, default=5, help="reference BT bootstrap rounds")
    parser.add_argument("--ref-style-rounds", type=int, default=3)
    args = parser.parse_args()
    n, m = args.votes, args.models

    data = synthetic(n, m)
    a, b, outcome = data["a"], data["b"], data["outcome"]
    y = np.select([outcome == A, outcome == B], [1.0, 0.0], 0.5)  # both bad counts as a tie
    print(f"{n:,} votes, {m} models, seed 0; {len(np.unique(a * m + b))} ordered pairs")

    # (1) aggregation + fit + sandwich
    def ours_sandwich():
        counts = counts_from_votes(a, b, outcome, n_models=m)
        return sandwich(counts, fit(counts))

    t_ours1, iv = timed(ours_sandwich, args.repeat)
    ref = PerVote(a, b, y, m)
    started = time.perf_counter()
    ref_theta = ref.fit(np.ones(n), np.zeros(m))
    ref_se = ref.sandwich_se(ref_theta)
    t_ref1 = time.perf_counter() - started
    z = norm.ppf(0.975)
    print()
    line("(1) aggregate + BT fit + sandwich", t_ours1, t_ref1, TARGETS["sandwich"], "")
    ref_theta = ref.fit(np.ones(n), ref_theta, tight=True)
    print(
        f"    agreement with a tight reference fit: max |Δscore| "
        f"{SCALE * np.abs(iv.theta - ref_theta).max():.4f} points, "
        f"max |Δ half-width| {SCALE * np.abs((iv.upper - iv.theta) - z * ref_se).max():.4f} points"
    )

    # (2) fit + 1,000 bootstrap rounds
    counts = counts_from_votes(a, b, outcome, n_models=m)
    t_ours2, boot = timed(lambda: bootstrap(counts, rounds=1000, seed=0), args.repeat)
    rng = np.random.default_rng(1)
    started = time.perf_counter()
    full = ref.fit(np.ones(n), np.zeros(m))
    for _ in range(args.ref_rounds):
        picks = np.bincount(rng.integers(0, n, n), minlength=n).astype(float)
        ref.fit(picks, full)
    t_ref2_part = time.perf_counter() - started
    per_round = t_ref2_part / (args.ref_rounds + 1)
    t_ref2 = per_round * 1001
    print()
    line(
        "(2) BT fit + 1,000 bootstrap rounds",
        t_ours2,
        t_ref2,
        TARGETS["bootstrap"],
        f" (1 fit + {args.ref_rounds} rounds took {t_ref2_part:.1f} s, "
        f"×1001/{args.ref_rounds + 1})",
    )
    half_boot = SCALE * (boot.upper - boot.lower) / 2
    half_sand = SCALE * (iv.upper - iv.lower) / 2
    print(
        f"    95% half-widths: bootstrap median {np.median(half_boot):.2f} points, "
        f"sandwich median {np.median(half_sand):.2f} points"
    )

    # (3) style fit + 100 bootstrap rounds
    def ours_style():
        sd = style_data(
            a, b, outcome, data["style_a"], data["style_b"], n_models=m, names=STYLE_NAMES
        )
        return bootstrap_style(sd, rounds=100, seed=0)

    t_ours3, style = timed(ours_style, max(1, min(args.repeat, 2)))
    sd = style_data(a, b, outcome, data["style_a"], data["style_b"], n_models=m, names=STYLE_NAMES)
    ref_style = PerVote(sd.a, sd.b, sd.y, m, features=sd.features)
    started = time.perf_counter()
    full = ref_style.fit(np.ones(n), np.zeros(m + len(STYLE_NAMES)))
    for _ in range(args.ref_style_rounds):
        picks = np.bincount(rng.integers(0, n, n), minlength=n).astype(float)
        ref_style.fit(picks, full)
    t_ref3_part = time.perf_counter() - started
    t_ref3 = t_ref3_part / (args.ref_style_rounds + 1) * 101
    print()
    line(
        "(3) style fit + 100 bootstrap rounds",
        t_ours3,
        t_ref3,
        TARGETS["style"],
        f" (1 fit + {args.ref_style_rounds} rounds took {t_ref3_part:.1f} s, "
        f"×101/{args.ref_style_rounds + 1})",
    )
    ours_theta, ours_coefs = fit_style(sd)
    full = ref_style.fit(np.ones(n), full, tight=True)
    print(
        f"    agreement with a tight reference fit: max |Δscore| "
        f"{SCALE * np.abs(ours_theta - full[:m]).max():.4f} points, "
        f"max |Δcoef| {np.abs(ours_coefs - full[m:]).max():.2e}"
    )
    coefs = ", ".join(
        f"{name} {c:+.3f} [{lo:+.3f}, {hi:+.3f}]"
        for name, c, lo, hi in zip(
            STYLE_NAMES, style.coefs, style.coef_lower, style.coef_upper, strict=True
        )
    )
    print(f"    style coefficients (95%): {coefs}")

    pieces(data, m, args.repeat)


if __name__ == "__main__":
    main()
