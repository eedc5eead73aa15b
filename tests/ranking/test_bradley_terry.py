"""Bradley–Terry aggregation, fit, scale and graph components, checked against choix."""

from __future__ import annotations

import numpy as np
import pytest

from ranking.bradley_terry import (
    BOTH_BAD,
    SCALE,
    TIE,
    A,
    B,
    components,
    counts_from_votes,
    fit,
    gradient_hessian,
    to_scores,
)


def simulate(rng: np.random.Generator, strengths: np.ndarray, n: int, tie_rate: float = 0.1):
    m = strengths.size
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    p = 1.0 / (1.0 + np.exp(-(strengths[a] - strengths[b])))
    outcome = np.where(rng.random(n) < p, A, B)
    outcome[rng.random(n) < tie_rate] = TIE
    return a, b, outcome


def choix_fit(a, b, outcome, m: int, reg: float) -> np.ndarray:
    """choix on the same votes, made to optimise the same objective as ours.

    choix minimises alpha·‖θ‖² + Σ_wins −log σ(θ_w − θ_l), with no ties. Doubling every vote
    (a win becomes two wins, a tie one win each way) turns our objective Σ −[s log p +
    (n − s) log(1 − p)] + (reg/2)·‖θ‖² into exactly half of choix's with alpha = reg.
    """
    data: list[tuple[int, int]] = []
    for i, j, o in zip(a.tolist(), b.tolist(), outcome.tolist(), strict=True):
        if o == A:
            data += [(i, j), (i, j)]
        elif o == B:
            data += [(j, i), (j, i)]
        else:
            data += [(i, j), (j, i)]
    import choix  # here: its import takes a second and a half, paid only by those who use it

    theta = choix.opt_pairwise(m, data, alpha=reg, tol=1e-12)
    return theta - theta.mean()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_fit_agrees_with_choix_within_a_hundredth_of_a_point(seed):
    rng = np.random.default_rng(seed)
    strengths = rng.normal(0.0, 1.0, 6)
    a, b, outcome = simulate(rng, strengths, 600, tie_rate=0.15)
    counts = counts_from_votes(a, b, outcome, n_models=6)
    ours = fit(counts, reg=1e-6)
    theirs = choix_fit(a, b, outcome, 6, reg=1e-6)
    assert np.abs(to_scores(ours) - to_scores(theirs)).max() < 0.01
    assert abs(ours.mean()) < 1e-12


def test_fit_agrees_with_choix_when_a_model_never_lost():
    rng = np.random.default_rng(7)
    strengths = np.array([0.5, 0.0, -0.3, 0.2, 3.0])
    a, b, outcome = simulate(rng, strengths, 400)
    # Model 4 wins every battle it is in (ties included).
    outcome[a == 4] = A
    outcome[b == 4] = B
    counts = counts_from_votes(a, b, outcome, n_models=5)
    # A larger penalty keeps the unbeaten model's optimum well defined for both optimisers,
    # which each stop at their own tolerance on the otherwise nearly flat ridge.
    ours = fit(counts, reg=1e-3)
    theirs = choix_fit(a, b, outcome, 5, reg=1e-3)
    assert np.abs(to_scores(ours) - to_scores(theirs)).max() < 0.01
    assert ours.argmax() == 4 and np.isfinite(ours).all()
    # With the default, tiny penalty the strength is large but finite.
    unpenalised = fit(counts)
    assert np.isfinite(unpenalised).all() and unpenalised[4] > ours[4] > 3


def test_fit_of_a_hundred_models_reaches_the_optimum():
    # How long this takes is bench/ranking.py's to print, not a test's to assert.
    rng = np.random.default_rng(0)
    a, b, outcome = simulate(rng, rng.normal(size=100), 200_000)
    counts = counts_from_votes(a, b, outcome, n_models=100)
    assert counts.a.size == 4950
    theta = fit(counts)
    gradient, _ = gradient_hessian(counts, theta, 1e-6)
    assert np.abs(gradient).max() < 1e-6 and abs(theta.mean()) < 1e-12


def test_counts_aggregate_unordered_pairs_with_ties_and_both_bad():
    a = np.array([0, 1, 0, 2, 2, 1, 0])
    b = np.array([1, 0, 1, 0, 1, 2, 2])
    outcome = np.array([A, A, TIE, B, BOTH_BAD, B, A])
    counts = counts_from_votes(a, b, outcome, n_models=3)
    got = {
        (int(i), int(j)): (wa, wb, t)
        for i, j, wa, wb, t in zip(
            counts.a, counts.b, counts.wins_a, counts.wins_b, counts.ties, strict=True
        )
    }
    # (1, 0) voted A is a win for 1, i.e. for the b side of the (0, 1) row.
    assert got == {(0, 1): (1, 1, 1), (0, 2): (2, 0, 0), (1, 2): (0, 1, 1)}

    dropped = counts_from_votes(a, b, outcome, n_models=3, both_bad="drop")
    assert dropped.ties.sum() == 1 and dropped.total == 6


def test_counts_take_weights_and_skip_pairs_without_weight():
    a = np.array([0, 0, 1, 2])
    b = np.array([1, 1, 2, 3])
    outcome = np.array([A, B, TIE, A])
    counts = counts_from_votes(a, b, outcome, n_models=4, weights=np.array([2.0, 0.5, 1.5, 0]))
    assert counts.a.tolist() == [0, 1] and counts.b.tolist() == [1, 2]
    assert counts.wins_a.tolist() == [2.0, 0.0]
    assert counts.wins_b.tolist() == [0.5, 0.0]
    assert counts.ties.tolist() == [0.0, 1.5]


def test_counts_reject_bad_votes():
    with pytest.raises(ValueError):
        counts_from_votes(np.array([0]), np.array([0]), np.array([A]), n_models=2)
    with pytest.raises(ValueError):
        counts_from_votes(np.array([0]), np.array([2]), np.array([A]), n_models=2)
    with pytest.raises(ValueError):
        counts_from_votes(np.array([0]), np.array([1]), np.array([7]), n_models=2)
    with pytest.raises(ValueError):
        counts_from_votes(np.array([0]), np.array([1]), np.array([A]), n_models=2, both_bad="x")
    with pytest.raises(ValueError):
        counts_from_votes(np.array([0]), np.array([1]), np.array([A]), n_models=2, weights=[-1.0])


def test_counts_of_a_million_votes_keep_every_vote():
    # How long this takes is bench/ranking.py's to print, not a test's to assert.
    rng = np.random.default_rng(0)
    a, b, outcome = simulate(rng, rng.normal(size=100), 1_000_000)
    counts = counts_from_votes(a, b, outcome, n_models=100)
    assert counts.total == 1_000_000


def test_scores_put_the_mean_model_at_1000_or_the_anchor_where_asked():
    theta = np.array([0.0, np.log(10.0), -np.log(10.0)])
    scores = to_scores(theta)
    assert scores.mean() == pytest.approx(1000.0)
    # A tenfold odds ratio is 400 points.
    assert scores[1] - scores[0] == pytest.approx(400.0)
    anchored = to_scores(theta, anchor=2, anchor_score=800.0)
    assert anchored[2] == pytest.approx(800.0)
    assert anchored[1] == pytest.approx(1600.0)
    assert SCALE == pytest.approx(400 / np.log(10))


def test_components_split_a_graph_never_compared_across():
    a = np.array([0, 1, 3, 5])
    b = np.array([1, 2, 4, 4])
    counts = counts_from_votes(a, b, np.array([A, TIE, B, A]), n_models=7)
    labels = components(counts)
    assert labels[0] == labels[1] == labels[2]
    assert labels[3] == labels[4] == labels[5]
    assert len({labels[0], labels[3], labels[6]}) == 3  # model 6 has no votes: on its own


def test_fit_without_votes_or_with_all_ties_is_flat_and_finite():
    empty = counts_from_votes(np.array([], int), np.array([], int), np.array([], int), n_models=3)
    assert fit(empty).tolist() == [0.0, 0.0, 0.0]
    a = np.array([0, 1, 2, 0])
    b = np.array([1, 2, 0, 2])
    flat = fit(counts_from_votes(a, b, np.full(4, TIE), n_models=3))
    assert np.allclose(flat, 0.0, atol=1e-9)
