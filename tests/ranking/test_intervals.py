"""Interval coverage on simulated leaderboards, rank ranges, and the awkward edge cases."""

from __future__ import annotations

import numpy as np
import pytest

from ranking.bradley_terry import TIE, A, B, PairCounts, components, counts_from_votes, fit
from ranking.intervals import bootstrap, multinomial, rank_ranges, sandwich


def battles(rng: np.random.Generator, strengths: np.ndarray, n: int):
    m = strengths.size
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    return a, b, 1.0 / (1.0 + np.exp(-(strengths[a] - strengths[b])))


def ties_on_model(rng: np.random.Generator, strengths: np.ndarray, n: int, tie_rate: float):
    """Votes whose expected score (win 1, tie ½) is exactly the BT probability.

    Ties happen at `tie_rate`; the decisive votes are tilted so that 0.9·q + 0.05 = p. The
    ties-as-half-wins model is then right about the mean, and only the variance differs from
    a plain Bernoulli, which is what the intervals have to get right.
    """
    a, b, p = battles(rng, strengths, n)
    q = np.clip((p - tie_rate / 2) / (1 - tie_rate), 0.0, 1.0)
    outcome = np.where(rng.random(n) < q, A, B)
    outcome[rng.random(n) < tie_rate] = TIE
    return a, b, outcome


def coverage(method: str) -> float:
    """Share of (board, model) intervals covering the truth, over 200 boards of 5 models.

    1,000 checks, correlated within a board: the share wanders by about ±1% around its mean,
    so 92–98% is a few standard deviations either side of 95%.
    """
    rng = np.random.default_rng(2024)
    hits = total = 0
    for _ in range(200):
        truth = rng.normal(0.0, 0.5, 5)
        truth -= truth.mean()
        a, b, outcome = ties_on_model(rng, truth, 1000, tie_rate=0.2)
        counts = counts_from_votes(a, b, outcome, n_models=5)
        if method == "bootstrap":
            iv = bootstrap(counts, rounds=300, seed=int(rng.integers(1 << 30)))
        else:
            iv = sandwich(counts, fit(counts))
        hits += int(((iv.lower <= truth) & (truth <= iv.upper)).sum())
        total += truth.size
    return hits / total


@pytest.mark.parametrize("method", ["bootstrap", "sandwich"])
def test_95_percent_intervals_cover_the_true_strengths_about_95_percent_of_the_time(method):
    assert 0.92 <= coverage(method) <= 0.98


def four_models(seed: int):
    rng = np.random.default_rng(seed)
    truth = np.array([1.6, 1.0, 0.9, 0.5])
    a, b, p = battles(rng, truth, 1200)
    outcome = np.where(rng.random(a.size) < p, A, B)
    outcome[rng.random(a.size) < 0.1] = TIE
    return truth, counts_from_votes(a, b, outcome, n_models=4)


@pytest.mark.parametrize("method", ["bootstrap", "sandwich"])
def test_four_models_clear_leader_alone_on_top_and_close_pair_sharing_ranks(method):
    # One fixed draw of the scenario; the averaged version of the gap claim is the next test.
    truth, counts = four_models(seed=11)
    iv = (
        bootstrap(counts, rounds=1000, seed=0)
        if method == "bootstrap"
        else sandwich(counts, fit(counts))
    )
    best, worst = rank_ranges(iv.lower, iv.upper)
    assert (best[0], worst[0]) == (1, 1)
    assert best[1] == best[2] and worst[1] == worst[2] and best[1] < worst[1]
    assert iv.theta[0] - iv.theta[1] < truth[0] - truth[1]


def test_ties_pull_fitted_gaps_toward_even():
    gaps = []
    for seed in range(20):
        truth, counts = four_models(seed)
        theta = fit(counts)
        gaps.append(theta[0] - theta[1])
    # Ties land on the middle whatever the strengths: with 10% of them, about 0.9 of the gap.
    assert np.mean(gaps) < 0.95 * (truth[0] - truth[1])


def test_rank_ranges_on_hand_made_intervals():
    lower = np.array([5.0, 3.0, 2.5, 0.0, 3.0])
    upper = np.array([7.0, 4.5, 4.0, 1.0, 4.5])
    best, worst = rank_ranges(lower, upper)
    assert best.tolist() == [1, 2, 2, 5, 2]
    assert worst.tolist() == [1, 4, 4, 5, 4]
    # Touching intervals overlap: neither is surely better.
    best, worst = rank_ranges(np.array([1.0, 0.0]), np.array([2.0, 1.0]))
    assert best.tolist() == [1, 1] and worst.tolist() == [2, 2]


def test_bootstrap_is_deterministic_for_a_seed():
    _, counts = four_models(seed=3)
    one = bootstrap(counts, rounds=300, seed=5)
    two = bootstrap(counts, rounds=300, seed=5)
    other = bootstrap(counts, rounds=300, seed=6)
    assert np.array_equal(one.lower, two.lower) and np.array_equal(one.upper, two.upper)
    assert not np.array_equal(one.lower, other.lower)
    assert (one.lower < one.theta).all() and (one.theta < one.upper).all()


def test_multinomial_draws_keep_the_total_and_the_moments():
    rng = np.random.default_rng(0)
    probs = np.array([0.5, 0.3, 0.15, 0.05, 0.0])
    draws = multinomial(rng, 40, probs, 20_000)
    assert (draws.sum(axis=1) == 40).all() and (draws[:, 4] == 0).all()
    assert np.allclose(draws.mean(axis=0), 40 * probs, atol=0.1)
    expected_cov = 40 * (np.diag(probs) - np.outer(probs, probs))
    assert np.allclose(np.cov(draws.T), expected_cov, atol=0.25)


def test_a_model_without_votes_changes_nothing_for_the_others():
    _, counts = four_models(seed=1)
    wider = PairCounts(5, counts.a, counts.b, counts.wins_a, counts.wins_b, counts.ties)
    for method in ("bootstrap", "sandwich"):
        if method == "bootstrap":
            small, big = bootstrap(counts, rounds=200), bootstrap(wider, rounds=200)
        else:
            small, big = sandwich(counts, fit(counts)), sandwich(wider, fit(wider))
        assert np.isfinite(big.lower).all() and np.isfinite(big.upper).all()
        assert np.allclose(big.theta[:4], small.theta, atol=1e-7)
        assert np.allclose(big.lower[:4], small.lower, atol=1e-6)
        assert np.allclose(big.upper[:4], small.upper, atol=1e-6)
    assert len(set(components(wider).tolist())) == 2


def test_disconnected_graph_gives_finite_intervals_within_each_part():
    rng = np.random.default_rng(4)
    a1, b1, p1 = battles(rng, np.array([0.5, 0.0, -0.5]), 600)
    a2, b2, p2 = battles(rng, np.array([1.0, -1.0]), 300)
    a = np.concatenate([a1, a2 + 3])
    b = np.concatenate([b1, b2 + 3])
    p = np.concatenate([p1, p2])
    outcome = np.where(rng.random(a.size) < p, A, B)
    counts = counts_from_votes(a, b, outcome, n_models=5)
    assert len(set(components(counts).tolist())) == 2
    for iv in (bootstrap(counts, rounds=200), sandwich(counts, fit(counts))):
        assert np.isfinite(iv.lower).all() and np.isfinite(iv.upper).all()
        assert (iv.lower <= iv.theta + 1e-9).all() and (iv.theta <= iv.upper + 1e-9).all()
        assert iv.theta[3] > iv.theta[4]


def test_a_single_vote_gives_finite_numbers():
    counts = counts_from_votes(np.array([0]), np.array([1]), np.array([A]), n_models=2)
    for iv in (bootstrap(counts, rounds=50), sandwich(counts, fit(counts))):
        assert np.isfinite(iv.theta).all()
        assert np.isfinite(iv.lower).all() and np.isfinite(iv.upper).all()
        assert iv.theta[0] > iv.theta[1]


def test_all_ties_give_equal_finite_scores():
    a = np.array([0, 1, 2, 0, 3, 1] * 20)
    b = np.array([1, 2, 3, 3, 0, 3] * 20)
    counts = counts_from_votes(a, b, np.full(a.size, TIE), n_models=4)
    for iv in (bootstrap(counts, rounds=100), sandwich(counts, fit(counts))):
        assert np.allclose(iv.theta, 0.0, atol=1e-9)
        assert np.isfinite(iv.lower).all() and np.isfinite(iv.upper).all()
        best, worst = rank_ranges(iv.lower, iv.upper)
        assert best.tolist() == [1, 1, 1, 1] and worst.tolist() == [4, 4, 4, 4]
