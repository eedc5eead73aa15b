"""The judge-against-humans figures, as pure math on arrays."""

from __future__ import annotations

import numpy as np

from ranking import calibration as calc

M = calc.MISSING


def test_a_verdict_is_read_from_side_a_whichever_order_it_was_asked_in():
    assert calc.from_side_a("A>>B", a_first=True) == 2
    assert calc.from_side_a("A>>B", a_first=False) == -2  # B was shown first and lost... to A
    assert calc.from_side_a("B>A", a_first=False) == 1
    assert calc.from_side_a(None, a_first=True) == M


def test_both_orders_are_summed_and_a_missing_one_leaves_the_other():
    first = np.array([2, 1, 1, M, M, -1])
    second = np.array([-1, -1, 0, 1, M, -2])
    assert calc.combined(first, second).tolist() == [1, 0, 1, 1, M, -1]


def test_agreement_counts_decisive_battles_and_three_way_counts_every_judged_one():
    human = np.array([1, 1, -1, 0, -1, 1])
    judge = np.array([1, -1, -1, 0, 0, M])
    found = calc.agreement(human, judge, rounds=50)
    assert found["decisive"].n == 3 and found["decisive"].value == 2 / 3
    assert found["three_way"].n == 5 and found["three_way"].value == 3 / 5
    assert found["decisive"].lower <= found["decisive"].value <= found["decisive"].upper


def test_position_flips_are_the_share_of_pairs_whose_orders_disagree():
    first = np.array([1, 2, -1, 0, 1, M])
    second = np.array([1, -1, -1, 1, 0, 1])
    found = calc.position_flips(first, second, rounds=50)
    assert (found.n, found.value) == (5, 3 / 5)


def test_a_known_flip_rate_lies_inside_its_bootstrap_interval():
    rng = np.random.default_rng(3)
    n, rate = 400, 0.25
    first = rng.choice([1, -1], n)
    second = np.where(rng.random(n) < rate, -first, first)
    found = calc.position_flips(first, second, rounds=300)
    assert found.lower < rate < found.upper
    assert found.upper - found.lower < 0.12


def test_self_preference_is_the_judges_win_rate_for_its_family_minus_the_humans():
    own = np.array([1, -1, 0, 1])  # A is the judge's family, then B, then neither
    human = np.array([-1, 1, 1, 0])  # raters: own family lost, lost, -, tie
    judge = np.array([1, 1, -1, 1])  # the judge: own family won, lost, -, won
    found = calc.self_preference(own, human, judge, rounds=50)
    assert found.n == 3
    assert found.value == (1 + 0 + 1) / 3 - (0 + 0 + 0.5) / 3


def test_nothing_to_measure_gives_no_figure_rather_than_a_made_up_one():
    found = calc.self_preference(np.zeros(3, int), np.ones(3, int), np.ones(3, int), rounds=5)
    assert found.n == 0 and found.as_dict()["value"] is None


def test_rank_agreement_over_the_models_both_boards_rank():
    judge = {"a": 1300.0, "b": 1200.0, "c": 1100.0, "d": 1000.0, "judge-only": 5.0}
    human = {"a": 1250.0, "b": 1100.0, "c": 1150.0, "d": 900.0}
    found = calc.rank_agreement(judge, human)
    assert found["models"] == ["a", "b", "c", "d"]
    assert found["spearman"] == 0.8 and round(found["kendall"], 4) == 0.6667
    assert calc.rank_agreement({"a": 1.0, "b": 2.0}, human)["spearman"] is None


def test_separability_is_the_share_of_pairs_whose_intervals_do_not_overlap():
    assert calc.separability([(0, 1), (2, 3), (2.5, 4)]) == 2 / 3
    assert calc.separability([(0, 1)]) is None
