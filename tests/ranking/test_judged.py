"""Judge verdicts against a baseline: read as Arena-Hard-Auto does, fitted with the human
leaderboard's own code, and the judge's position bias measured."""

from __future__ import annotations

import numpy as np

from ranking.compute import RankingConfig, compute_board
from ranking.judged import Verdict, parse_verdict, position_bias, vote_arrays, win_rates


def test_a_verdict_is_the_last_level_the_judge_gave_and_none_is_missing():
    assert parse_verdict("B is clearer. [[B>>A]]") == "B>>A"
    assert parse_verdict("First [[A>B]], on reflection [[ A = B ]]") == "A=B"
    assert parse_verdict("I prefer A.") is None
    assert parse_verdict("[[A>>>B]]") is None


def simulated(strengths: list[float], *, prompts: int, bias: float, seed: int):
    """A judge whose verdicts come from known strengths (the baseline is the last model, at
    0) plus a pull towards whatever it sees first."""
    rng = np.random.default_rng(seed)
    base = len(strengths)
    verdicts, pairs = [], []
    for _ in range(prompts):
        for model, strength in enumerate(strengths):
            pair = []
            for model_first in (True, False):
                pull = bias if model_first else -bias
                p_model = 1 / (1 + np.exp(-(strength + pull)))
                u = rng.random()
                strong = rng.random() < 0.3
                if abs(u - 0.5) < 0.05:
                    level = "A=B"
                elif u < p_model:  # the model wins
                    level = (
                        ("A>>B" if strong else "A>B")
                        if model_first
                        else ("B>>A" if strong else "B>A")
                    )
                else:
                    level = (
                        ("B>>A" if strong else "B>A")
                        if model_first
                        else ("A>>B" if strong else "A>B")
                    )
                pair.append(Verdict(model, base, model_first, level))
            verdicts += pair
            pairs.append(tuple(pair))
    return verdicts, pairs


def test_the_judge_leaderboard_recovers_the_true_order_with_the_human_boards_code():
    strengths = [1.5, 0.9, 0.3, -0.3, -0.9, -1.5]
    names = [f"m{i}" for i in range(len(strengths))] + ["baseline"]
    verdicts, _ = simulated(strengths, prompts=150, bias=0.4, seed=1)
    votes = vote_arrays(verdicts, names)
    board = compute_board(votes, RankingConfig(rounds=100, min_votes=50, seed=0))
    ranked = [r.model for r in sorted(board.rows, key=lambda r: -r.score) if r.model != "baseline"]
    assert ranked == names[:-1]
    assert all(r.lower <= r.score <= r.upper for r in board.rows)
    rates = win_rates(verdicts, len(names))
    assert list(np.argsort(-rates[:-1])) == list(range(len(strengths)))


def test_a_strong_verdict_counts_three_games_and_a_missing_one_none():
    votes = vote_arrays(
        [Verdict(0, 1, True, "A>>B"), Verdict(0, 1, False, "A>B"), Verdict(0, 1, True, None)],
        ["m", "baseline"],
    )
    assert len(votes.a) == 4  # three wins for the model, then one loss (shown second)
    assert list(votes.outcome) == [0, 0, 0, 1] and set(votes.a) == {0}


def test_position_bias_is_the_share_of_pairs_that_flip_when_the_order_is_swapped():
    def pair(first: str, second: str):
        return Verdict(0, 1, True, first), Verdict(0, 1, False, second)

    steady = [pair("A>B", "B>A")] * 7  # the model wins both ways
    flipping = [pair("A>B", "A>B")] * 3  # whoever is first wins
    rate, n = position_bias(steady + flipping + [(Verdict(0, 1, True, None),) * 2])
    assert (rate, n) == (0.3, 10)
    # A judge right on content (the better answer wins) that, in a share q of pairs, picks
    # whatever it saw first in the swapped call. That changes the verdict only where the model
    # was the better one (half the pairs): the measured rate finds q / 2.
    rng = np.random.default_rng(3)
    q, pairs = 0.2, []
    for _ in range(2000):
        model_better = rng.random() < 0.5
        first = "A>B" if model_better else "B>A"  # the model shown first
        honest = "B>A" if model_better else "A>B"  # the model shown second
        pairs.append(pair(first, "A>B" if rng.random() < q else honest))
    measured, n = position_bias(pairs)
    expected = q / 2
    assert abs(measured - expected) < 3 * np.sqrt(expected * (1 - expected) / n)
