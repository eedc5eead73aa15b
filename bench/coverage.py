"""Coverage of the style-controlled Bradley–Terry intervals: do the 95% intervals hold the truth?

Not a test: it prints a table. Each replication draws a fresh seeded data set of `--votes`
votes among `--models` models with known strengths θ (drawn per replication from N(0, 0.6²),
then centred, as the fit centres its θ) and known style coefficients β, fits the
style-controlled model of ranking/style.py and builds 95% intervals three ways:

1. sandwich          fit_style + sandwich_style (normal intervals, robust covariance)
2. bootstrap 100     bootstrap_style, 100 rounds (percentile intervals)
3. bootstrap 1000    bootstrap_style, `--big-rounds` rounds (left out with `--skip-big`), on
                     the first `--big-reps` replications only if that is given (it costs ten
                     times the rest), and then (1) and (2) are also shown on those alone

Coverage is the share of (replication × model) intervals that contain the true θ, and the
share of (replication × feature) intervals that contain the true β. The table also gives the
median interval width (θ in points, i.e. × 400/ln 10; β in points per standard deviation of
its feature) and the seconds per replication each method took, fit included.

How the truth is made to be exactly what the fit estimates:

* Style counts are drawn as in bench/ranking.py (lengths around a per-model typical length,
  so style is confounded with the model; Poisson headers, list items, bold). They go through
  ranking.style.style_features, the very normalisation and standardisation the fit applies, and
  outcomes are drawn from those standardised features F: d = θ_a − θ_b + F·β.
* The fit scores a tie as y = ½, so its estimand is the θ, β with P(a wins) + ½·P(tie) = σ(d).
  Ties drawn independently of d (tie with probability t, else a Bernoulli(σ(d)) win) break
  that: E[y] = (1 − t)·σ(d) + t/2, and the fit recovers θ and β shrunk by about t (about 10%,
  a bias of 2–3 standard errors at the default size). Here a vote is a tie with probability
  4·τ·σ(d)(1 − σ(d)) (τ at an even match, fewer between unequal models), and a win for a with
  probability σ(d) − ½·P(tie), so E[y | d] = σ(d) exactly. `--naive-ties` draws them the
  independent way instead, to show what that does to coverage.

Monte-Carlo error: the intervals of one replication share a data set, so they are not
independent. The ± figure is the conservative sqrt(p(1 − p)/n_eff) with n_eff = replications;
the between-replication standard error (the spread of each replication's coverage, / √reps)
is shown beside it. With 200 replications the conservative one is about 1.5 points at 95%, so
"lands in 94–96%" is a noisy verdict; "≈95%?" says whether 95% is within 2 of those errors.

    uv run python bench/coverage.py [--reps 200] [--votes 20000] [--models 10] [--seed 0]
        [--big-rounds 1000] [--big-reps N] [--skip-big] [--tie-rate 0.12] [--naive-ties]
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import verdict  # noqa: E402
from ranking.bradley_terry import SCALE, TIE, A, B  # noqa: E402
from ranking.style import (  # noqa: E402
    STYLE_NAMES,
    StyleData,
    StyleIntervals,
    bootstrap_style,
    fit_style,
    sandwich_style,
    style_data,
    style_features,
)

LEVEL = 0.95
THETA_SD = 0.6
BETA_TRUE = np.array([0.3, 0.1, 0.05, 0.1])  # length, headers, lists, bold (per SD)
SMALL_ROUNDS = 100
BAND = (0.94, 0.96)


@dataclass
class Truth:
    theta: np.ndarray
    beta: np.ndarray


@dataclass
class Tally:
    """What one interval method scored over the replications."""

    label: str
    theta_hit: list[np.ndarray] = field(default_factory=list)
    beta_hit: list[np.ndarray] = field(default_factory=list)
    theta_width: list[np.ndarray] = field(default_factory=list)
    beta_width: list[np.ndarray] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)

    def add(self, iv: StyleIntervals, truth: Truth, seconds: float) -> None:
        self.theta_hit.append((iv.lower <= truth.theta) & (truth.theta <= iv.upper))
        self.beta_hit.append((iv.coef_lower <= truth.beta) & (truth.beta <= iv.coef_upper))
        self.theta_width.append(SCALE * (iv.upper - iv.lower))
        self.beta_width.append(SCALE * (iv.coef_upper - iv.coef_lower))
        self.seconds.append(seconds)


def simulate(
    n: int, m: int, rng: np.random.Generator, *, tie_rate: float, naive_ties: bool
) -> tuple[StyleData, Truth, float]:
    """One data set with its truth, and the share of votes that came out tied."""
    theta = rng.normal(0.0, THETA_SD, m)
    theta -= theta.mean()
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    typical = rng.uniform(150, 900, m)

    def counts(idx: np.ndarray) -> np.ndarray:
        return np.column_stack(
            [
                rng.gamma(4.0, typical[idx] / 4.0),
                rng.poisson(2, n),
                rng.poisson(4, n),
                rng.poisson(3, n),
            ]
        )

    style_a, style_b = counts(a), counts(b)
    features = style_features(style_a, style_b, STYLE_NAMES)
    p = 1.0 / (1.0 + np.exp(-(theta[a] - theta[b] + features @ BETA_TRUE)))
    u = rng.random(n)
    if naive_ties:
        # Tie with a fixed probability, else a plain Bernoulli(σ(d)): E[y] ≠ σ(d).
        outcome = np.where(rng.random(n) < p, A, B)
        outcome[u < tie_rate] = TIE
    else:
        p_tie = 4.0 * tie_rate * p * (1.0 - p)
        p_a = p - 0.5 * p_tie
        outcome = np.select([u < p_a, u < p_a + p_tie], [A, TIE], B)
    data = style_data(a, b, outcome, style_a, style_b, n_models=m, names=STYLE_NAMES)
    return data, Truth(theta, BETA_TRUE.copy()), float(np.mean(outcome == TIE))


def sandwich_method(data: StyleData, seed: int) -> StyleIntervals:
    theta, coefs = fit_style(data)
    return sandwich_style(data, theta, coefs, level=LEVEL)


def bootstrap_method(rounds: int):
    def run(data: StyleData, seed: int) -> StyleIntervals:
        return bootstrap_style(data, rounds=rounds, seed=seed, level=LEVEL)

    return run


def coverage(hits: list[np.ndarray]) -> tuple[float, float, float]:
    """(coverage, conservative SE with n_eff = replications, between-replication SE)."""
    per_rep = np.array([h.mean() for h in hits])
    p = float(np.concatenate(hits).mean())
    conservative = float(np.sqrt(p * (1.0 - p) / len(hits)))
    between = float(per_rep.std(ddof=1) / np.sqrt(len(hits))) if len(hits) > 1 else float("nan")
    return p, conservative, between


def pct(x: float) -> str:
    return f"{100 * x:5.1f}%"


def report(tallies: list[Tally], errors: dict[str, np.ndarray], args, tie_share: float) -> None:
    reps = len(tallies[0].seconds)
    fewer = [t for t in tallies if len(t.seconds) < reps]
    m, k = args.models, BETA_TRUE.size
    print()
    print(
        f"{reps} replications × {args.votes:,} votes, {m} models, {k} style features; "
        f"seed {args.seed}; ties {pct(tie_share).strip()} of votes "
        f"({'naive: independent of the logit' if args.naive_ties else 'E[y | d] = σ(d)'})"
    )
    print(
        f"true θ ~ N(0, {THETA_SD}²) per replication, centred; "
        f"true β = ({', '.join(f'{x:g}' for x in BETA_TRUE)}) for ({', '.join(STYLE_NAMES)})"
    )
    print(
        f"intervals per replication: {m} θ, {k} β. ± = conservative MC SE, "
        "sqrt(p(1−p)/n_eff) with n_eff = the method's replications (column reps), not "
        "reps × intervals; [b] = between-replication SE"
    )
    print()
    head = (
        f"{'method':<16} {'reps':>5} {'θ coverage':>20} {'94–96%':>7} {'≈95%?':>6}   "
        f"{'β coverage':>20} {'94–96%':>7}   {'θ width':>8} {'β width':>8} {'s/rep':>7}"
    )
    print(head)
    print("-" * len(head))
    verdicts = []
    for t in tallies:
        p, se, between = coverage(t.theta_hit)
        pb, seb, betweenb = coverage(t.beta_hit)
        in_band = BAND[0] <= p <= BAND[1]
        in_band_b = BAND[0] <= pb <= BAND[1]
        near = abs(p - LEVEL) <= 2 * se
        verdicts.append((t.label, p, in_band, pb, in_band_b, np.mean(t.seconds)))
        print(
            f"{t.label:<16} {len(t.seconds):>5} {pct(p)} ±{pct(se)} [b {100 * between:.1f}] "
            f"{verdict(in_band):>7} {'yes' if near else 'NO':>6}   "
            f"{pct(pb)} ±{pct(seb)} [b {100 * betweenb:.1f}] {verdict(in_band_b):>7}   "
            f"{np.median(np.concatenate(t.theta_width)):8.1f} "
            f"{np.median(np.concatenate(t.beta_width)):8.1f} "
            f"{np.mean(t.seconds):7.3f}"
        )
    print()
    print(
        "widths: median full width of the 95% interval; θ in points (× 400/ln 10), "
        "β in points per SD of its feature. s/rep: mean seconds per replication, fit included."
    )
    th_err, be_err = SCALE * errors["theta"], SCALE * errors["beta"]
    z = 1.959963984540054
    print(
        f"point estimates: θ̂ − θ mean {th_err.mean():+.2f}, RMSE {np.sqrt((th_err**2).mean()):.2f} "
        f"points (a 95% interval of 2·1.96·RMSE = {2 * z * np.sqrt((th_err**2).mean()):.1f}); "
        f"β̂ − β mean {', '.join(f'{x:+.2f}' for x in be_err.mean(axis=0))} points/SD"
    )
    per_model = np.concatenate([h[None] for h in tallies[0].theta_hit]).mean(axis=0)
    print(
        f"{tallies[0].label} θ coverage by model, lowest to highest: "
        f"{' '.join(pct(x).strip() for x in np.sort(per_model))}"
    )
    for t in fewer:
        n = len(t.seconds)
        paired = ", ".join(
            f"{o.label} {pct(coverage(o.theta_hit[:n])[0]).strip()}" for o in tallies if o is not t
        )
        print(
            f"on the {n} replications {t.label} ran: θ coverage {t.label} "
            f"{pct(coverage(t.theta_hit)[0]).strip()}, {paired}"
        )
    print()
    for label, p, in_band, pb, in_band_b, sec in verdicts:
        print(
            f"{label}: θ coverage {pct(p).strip()} — "
            f"{'in' if in_band else 'NOT in'} 94–96%; β {pct(pb).strip()} — "
            f"{'in' if in_band_b else 'NOT in'} 94–96%; {sec:.3f} s per replication"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--votes", type=int, default=20_000)
    parser.add_argument("--models", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--big-rounds", type=int, default=1000, help="rounds of bootstrap (3)")
    parser.add_argument(
        "--big-reps", type=int, default=None, help="run bootstrap (3) on the first N reps only"
    )
    parser.add_argument("--skip-big", action="store_true", help="leave out bootstrap (3)")
    parser.add_argument("--tie-rate", type=float, default=0.12, help="tie probability at d = 0")
    parser.add_argument("--naive-ties", action="store_true", help="ties independent of the logit")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    args = parser.parse_args()
    if args.reps < 1 or args.models < 2 or args.votes < 1:
        parser.error("need --reps ≥ 1, --models ≥ 2, --votes ≥ 1")
    if not 0.0 <= args.tie_rate <= 0.5:
        parser.error("--tie-rate must be in [0, 0.5] (above, P(win) could go negative)")

    methods = [
        ("sandwich", sandwich_method),
        (f"bootstrap {SMALL_ROUNDS}", bootstrap_method(SMALL_ROUNDS)),
    ]
    big_label = f"bootstrap {args.big_rounds}"
    if not args.skip_big:
        methods.append((big_label, bootstrap_method(args.big_rounds)))
    tallies = [Tally(label) for label, _ in methods]

    seeds = np.random.SeedSequence(args.seed).spawn(args.reps)
    theta_err, beta_err, ties = [], [], []
    started = time.perf_counter()
    for r, seq in enumerate(seeds):
        data_seed, *boot_seeds = seq.generate_state(1 + len(methods))
        rng = np.random.default_rng(int(data_seed))
        data, truth, tie_share = simulate(
            args.votes, args.models, rng, tie_rate=args.tie_rate, naive_ties=args.naive_ties
        )
        ties.append(tie_share)
        for (label, method), tally, boot_seed in zip(methods, tallies, boot_seeds, strict=True):
            if label == big_label and args.big_reps is not None and r >= args.big_reps:
                continue
            t0 = time.perf_counter()
            iv = method(data, int(boot_seed))
            tally.add(iv, truth, time.perf_counter() - t0)
            if tally is tallies[0]:
                theta_err.append(iv.theta - truth.theta)
                beta_err.append(iv.coefs - truth.beta)
        done = r + 1
        if not args.quiet and (done % max(1, args.reps // 10) == 0 or done == args.reps):
            elapsed = time.perf_counter() - started
            print(
                f"  {done}/{args.reps} replications, {elapsed:.0f} s "
                f"(about {elapsed / done * (args.reps - done):.0f} s to go)",
                file=sys.stderr,
                flush=True,
            )
    errors = {"theta": np.concatenate(theta_err), "beta": np.array(beta_err)}
    report(tallies, errors, args, float(np.mean(ties)))
    print(f"\ntotal {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
