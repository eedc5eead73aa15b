"""Active sampling spends votes where intervals overlap and never starves a pair."""

from __future__ import annotations

import numpy as np

from ranking.sampling import draw_pair, overlap, pair_probabilities


def test_overlap_is_a_share_of_the_narrower_interval():
    lower = np.array([0.0, 5.0, 20.0, np.nan])
    upper = np.array([10.0, 15.0, 30.0, np.nan])
    share = overlap(lower, upper)
    assert share[0, 1] == share[1, 0] == 0.5
    assert share[0, 2] == 0.0
    assert share[3, 0] == 1.0  # an unranked model is the least known
    assert np.all(np.diag(share) == 0)


def test_sampler_spends_more_votes_where_intervals_overlap_and_starves_no_pair():
    # Models 0 and 1 are hard to tell apart; 2 is far below both. Everyone has many votes.
    lower = np.array([1100.0, 1095.0, 900.0])
    upper = np.array([1120.0, 1118.0, 920.0])
    probs = pair_probabilities(
        lower=lower, upper=upper, votes=np.array([5000, 5000, 5000]), floor=0.1
    )
    rng = np.random.default_rng(1)
    counts = np.zeros((3, 3))
    for _ in range(5000):
        i, j, p = draw_pair(probs, rng)
        counts[i, j] += 1
        assert p == probs[i, j]
    assert counts[0, 1] > 3 * counts[0, 2] and counts[0, 1] > 3 * counts[1, 2]
    assert counts[0, 2] > 0 and counts[1, 2] > 0  # the floor keeps every pair alive
    assert np.isclose(np.triu(probs, 1).sum(), 1.0)


def test_models_with_few_votes_get_extra_traffic():
    lower = np.array([1000.0, 1000.0, 1000.0])
    upper = np.array([1010.0, 1010.0, 1010.0])
    even = pair_probabilities(
        lower=lower, upper=upper, votes=np.array([900, 900, 900]), boost_votes=300
    )
    boosted = pair_probabilities(
        lower=lower, upper=upper, votes=np.array([900, 900, 10]), boost_votes=300
    )
    assert np.isclose(even[0, 1], even[0, 2])
    assert boosted[0, 2] > 1.5 * boosted[0, 1]


def test_pairs_that_may_not_meet_get_nothing():
    allowed = np.array([[False, False, True], [False, False, True], [True, True, False]])
    probs = pair_probabilities(
        lower=np.full(3, np.nan), upper=np.full(3, np.nan), votes=np.zeros(3), allowed=allowed
    )
    assert probs[0, 1] == 0 and probs[0, 2] > 0 and probs[1, 2] > 0
