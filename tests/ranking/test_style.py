"""Style control recovers a known style effect and reduces to plain BT without style."""

from __future__ import annotations

import numpy as np
import pytest

from ranking.bradley_terry import BOTH_BAD, TIE, A, B, counts_from_votes, fit
from ranking.style import (
    STYLE_NAMES,
    StyleData,
    bootstrap_style,
    fit_style,
    sandwich_style,
    style_data,
    style_features,
)

TRUTH = np.array([0.6, 0.3, 0.0, -0.1, -0.8])
LENGTH_EFFECT = 0.4  # per standard deviation of the normalised length difference


def verbose_world(seed: int = 0, n: int = 20_000):
    """Raters who like long answers; model 3 writes the longest, model 0 the shortest."""
    rng = np.random.default_rng(seed)
    m = TRUTH.size
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    typical = np.array([200.0, 400.0, 400.0, 900.0, 300.0])

    def answers(idx: np.ndarray) -> np.ndarray:
        return np.column_stack(
            [
                rng.gamma(4.0, typical[idx] / 4.0),
                rng.poisson(1.0, idx.size),
                rng.poisson(3.0, idx.size),
                rng.poisson(2.0, idx.size),
            ]
        )

    style_a, style_b = answers(a), answers(b)
    features = style_features(style_a, style_b, STYLE_NAMES)
    beta = np.array([LENGTH_EFFECT, 0.0, 0.0, 0.0])
    p = 1.0 / (1.0 + np.exp(-(TRUTH[a] - TRUTH[b] + features @ beta)))
    outcome = np.where(rng.random(n) < p, A, B)
    return a, b, outcome, style_a, style_b, beta


def test_style_features_are_normalised_differences_then_standardised():
    style_a = np.array([[300.0, 0, 5, 1], [100, 0, 0, 1], [0, 0, 2, 1], [200, 0, 1, 1]])
    style_b = np.array([[100.0, 0, 5, 1], [100, 0, 2, 1], [0, 0, 0, 1], [600, 0, 3, 1]])
    features = style_features(style_a, style_b, STYLE_NAMES)
    raw_length = np.array([0.5, 0.0, 0.0, -0.5])  # (a − b)/(a + b), 0 when both are 0
    expected = (raw_length - raw_length.mean()) / raw_length.std()
    assert np.allclose(features[:, 0], expected)
    assert np.allclose(features.mean(axis=0), 0.0)
    assert (features[:, 1] == 0).all()  # all zero: constant, left at 0
    assert (features[:, 3] == 0).all()  # all equal: constant too
    assert np.allclose(features[:, 2].std(), 1.0)
    # The plain ratio, not FastChat's (a − b)/(a + b + 1): two lists against none is a whole
    # difference (1), not two thirds.
    raw_lists = np.array([0.0, -1.0, 1.0, -0.5])
    assert np.allclose(features[:, 2], (raw_lists - raw_lists.mean()) / raw_lists.std())
    with pytest.raises(ValueError):
        style_features(style_a, style_b, STYLE_NAMES[:3])


def test_style_coefficient_and_model_strengths_recover_the_truth():
    a, b, outcome, style_a, style_b, beta = verbose_world()
    data = style_data(a, b, outcome, style_a, style_b, n_models=5, names=STYLE_NAMES)
    theta, coefs = fit_style(data)
    assert coefs[0] == pytest.approx(LENGTH_EFFECT, abs=0.05)
    assert np.abs(coefs[1:]).max() < 0.05
    assert np.abs(theta - (TRUTH - TRUTH.mean())).max() < 0.1
    # Without style control the verbose model 3 is overrated, the terse model 0 underrated.
    plain = fit(counts_from_votes(a, b, outcome, n_models=5))
    truth = TRUTH - TRUTH.mean()
    assert plain[3] - truth[3] > 0.2 and abs(theta[3] - truth[3]) < 0.1
    assert truth[0] - plain[0] > 0.1


def test_bootstrap_style_intervals_contain_the_truth():
    a, b, outcome, style_a, style_b, beta = verbose_world(seed=1)
    data = style_data(a, b, outcome, style_a, style_b, n_models=5, names=STYLE_NAMES)
    iv = bootstrap_style(data, rounds=100, seed=0)
    assert iv.coef_lower[0] < LENGTH_EFFECT < iv.coef_upper[0]
    assert (iv.coef_lower < iv.coefs).all() and (iv.coefs < iv.coef_upper).all()
    assert (iv.lower < iv.theta).all() and (iv.theta < iv.upper).all()
    again = bootstrap_style(data, rounds=100, seed=0)
    assert np.array_equal(iv.lower, again.lower) and np.array_equal(iv.coef_upper, again.coef_upper)
    # The robust covariance tells the same story at a fraction of the cost.
    sw = sandwich_style(data, iv.theta, iv.coefs)
    width_ratio = (sw.upper - sw.lower) / (iv.upper - iv.lower)
    assert np.all((width_ratio > 0.75) & (width_ratio < 1.33))
    assert sw.coef_lower[0] < LENGTH_EFFECT < sw.coef_upper[0]


def test_bootstrap_style_intervals_cover_the_truth_across_simulated_worlds():
    # 40 worlds × 9 quantities (5 strengths, 4 coefficients). Percentile intervals from 100
    # rounds cover a little under 95% (about 93–94% here); any one world misses some quantity
    # about a third of the time, so only the share is a fair test.
    hits = total = 0
    for seed in range(40):
        a, b, outcome, style_a, style_b, beta = verbose_world(seed=seed, n=3_000)
        data = style_data(a, b, outcome, style_a, style_b, n_models=5, names=STYLE_NAMES)
        iv = bootstrap_style(data, rounds=100, seed=seed)
        truth = np.concatenate([TRUTH - TRUTH.mean(), beta])
        lower = np.concatenate([iv.lower, iv.coef_lower])
        upper = np.concatenate([iv.upper, iv.coef_upper])
        hits += int(((lower <= truth) & (truth <= upper)).sum())
        total += truth.size
    assert 0.88 <= hits / total <= 0.99


def test_style_fit_equals_plain_fit_when_features_are_zero():
    rng = np.random.default_rng(3)
    m, n = 6, 3_000
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    outcome = rng.choice([A, B, TIE, BOTH_BAD], size=n, p=[0.45, 0.35, 0.1, 0.1])
    zeros = np.zeros((n, 4))
    data = style_data(a, b, outcome, zeros, zeros, n_models=m, names=STYLE_NAMES)
    assert (data.features == 0).all()
    theta, coefs = fit_style(data)
    assert np.allclose(theta, fit(counts_from_votes(a, b, outcome, n_models=m)), atol=1e-8)
    assert np.allclose(coefs, 0.0)

    weights = rng.uniform(0.2, 3.0, n)
    theta_w, _ = fit_style(data, weights=weights)
    plain_w = fit(counts_from_votes(a, b, outcome, n_models=m, weights=weights))
    assert np.allclose(theta_w, plain_w, atol=1e-8)

    dropped = style_data(a, b, outcome, zeros, zeros, n_models=m, both_bad="drop")
    theta_d, _ = fit_style(dropped)
    plain_d = fit(counts_from_votes(a, b, outcome, n_models=m, both_bad="drop"))
    assert dropped.y.size == int((outcome != BOTH_BAD).sum())
    assert np.allclose(theta_d, plain_d, atol=1e-8)


def test_style_fit_never_builds_a_votes_by_models_matrix():
    # 200,000 votes × 100 models would be 160 MB dense; the scatter-built fit stays small (and
    # quick, which bench/ranking.py prints).
    import tracemalloc

    rng = np.random.default_rng(0)
    m, n = 100, 200_000
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    data = StyleData(
        a=a,
        b=b,
        y=rng.integers(0, 3, n) / 2.0,
        features=rng.normal(size=(n, 4)),
        names=STYLE_NAMES,
        n_models=m,
    )
    tracemalloc.start()
    fit_style(data)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 60e6
