"""Head-to-head tallies and predicted win rates, as plain numpy."""

from __future__ import annotations

import numpy as np
import pytest

from ranking.bradley_terry import BOTH_BAD, TIE, A, B
from ranking.pairwise import pair_tallies, predicted_win_rates, win_rates


def _votes(*rows: tuple[int, int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a, b, o = (np.array(col, dtype=np.int64) for col in zip(*rows, strict=True))
    return a, b, o


def test_wins_count_ties_as_half_and_both_sides_of_a_pair_add_up():
    # 0 beats 1 twice (once as side B), 1 beats 0 once, one tie, one both-bad.
    a, b, o = _votes((0, 1, A), (1, 0, B), (1, 0, A), (0, 1, TIE), (0, 1, BOTH_BAD), (0, 2, A))
    t = pair_tallies(a, b, o, 4)
    assert t.models.tolist() == [0, 1, 2]  # model 3 never played
    assert t.battles.tolist() == [[0, 5, 1], [5, 0, 0], [1, 0, 0]]
    assert t.wins[0, 1] == 2 + 0.5 + 0.5 and t.wins[1, 0] == 1 + 0.5 + 0.5
    assert (t.wins + t.wins.T == t.played).all()
    rates = win_rates(t.wins, t.played)
    assert rates[0, 1] == pytest.approx(3 / 5) and rates[1, 0] == pytest.approx(2 / 5)
    assert np.isnan(rates[1, 2])  # never met


def test_both_bad_decides_nothing_unless_it_counts_as_a_tie():
    a, b, o = _votes((0, 1, A), (0, 1, BOTH_BAD))
    t = pair_tallies(a, b, o, 2, both_bad="drop")
    assert t.battles[0, 1] == 2 and t.played[0, 1] == 1
    assert win_rates(t.wins, t.played)[0, 1] == 1.0


def test_predicted_win_rates_follow_the_score_scale():
    p = predicted_win_rates(np.array([1400.0, 1000.0, 1000.0]))
    assert p[0, 1] == pytest.approx(10 / 11)  # 400 points: ten to one
    assert p[1, 2] == pytest.approx(0.5)
    assert p[0, 1] + p[1, 0] == pytest.approx(1.0)
    assert np.isnan(np.diag(p)).all()
