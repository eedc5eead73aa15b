"""Boards from vote arrays: sections, breakdowns, counts, determinism and reweighting."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ranking.bradley_terry import BOTH_BAD, TIE, A, B
from ranking.compute import RankingConfig, VoteArrays, compute_all, compute_board

FAST = {"rounds": 100, "style_rounds": 20, "min_votes": 300}


def simulate(
    strengths: dict[str, float],
    n: int,
    *,
    seed: int = 0,
    pairs: list[tuple[str, str]] | None = None,
    names: list[str] | None = None,
) -> VoteArrays:
    """Votes among the given models (or only the given pairs), with categories and languages."""
    rng = np.random.default_rng(seed)
    names = names or sorted(strengths)
    index = {name: i for i, name in enumerate(names)}
    theta = np.array([strengths.get(name, 0.0) for name in names])
    if pairs is None:
        voted = [index[name] for name in strengths]
        a = rng.choice(voted, n)
        b = rng.choice(voted, n)
        while (same := a == b).any():
            b[same] = rng.choice(voted, int(same.sum()))
    else:
        chosen = rng.integers(0, len(pairs), n)
        a = np.array([index[pairs[k][0]] for k in chosen])
        b = np.array([index[pairs[k][1]] for k in chosen])
    p = 1.0 / (1.0 + np.exp(-(theta[a] - theta[b])))
    outcome = np.where(rng.random(n) < p, A, B)
    u = rng.random(n)
    outcome[u < 0.1] = TIE
    outcome[(u >= 0.1) & (u < 0.15)] = BOTH_BAD
    style = rng.poisson([400, 2, 4, 3], size=(2, n, 4)).astype(float)
    return VoteArrays(
        model_names=names,
        a=a,
        b=b,
        outcome=outcome,
        style_a=style[0],
        style_b=style[1],
        category=rng.choice(np.array(["code", "chat"], dtype=object), n),
        language=rng.choice(np.array(["en", "de", ""], dtype=object), n, p=[0.6, 0.3, 0.1]),
        weights=None,
    )


STRENGTHS = {"Alpha": 1.0, "Beta": 0.3, "Gamma": 0.0, "Delta": -0.7}


def by_model(board):
    return {row.model: row for row in board.rows}


def test_ranked_models_get_scores_intervals_and_rank_ranges():
    votes = simulate(STRENGTHS, 4000)
    board = compute_board(votes, RankingConfig(**FAST))
    rows = by_model(board)
    assert [r.model for r in board.rows] == ["Alpha", "Beta", "Gamma", "Delta"]
    assert all(r.section == "ranked" for r in board.rows)
    assert rows["Alpha"].rank_best == 1 and rows["Delta"].rank_worst == 4
    for r in board.rows:
        assert r.lower < r.score < r.upper
        assert 1 <= r.rank_best <= r.rank_worst <= 4
    assert np.mean([r.score for r in board.rows]) == pytest.approx(1000.0)
    assert board.votes == 4000 and board.view == "raw" and board.breakdown == "all"
    assert board.style_coefs is None and board.note == ""


def test_models_below_min_votes_are_provisional_without_a_score():
    votes = simulate({**STRENGTHS, "Newbie": 3.0}, 4000)
    # Newbie is strong but has only a few votes: keep just 40 of its battles.
    newbie = votes.model_names.index("Newbie")
    involved = np.flatnonzero((votes.a == newbie) | (votes.b == newbie))
    keep = np.ones(votes.a.size, dtype=bool)
    keep[involved[40:]] = False
    votes = VoteArrays(
        votes.model_names,
        votes.a[keep],
        votes.b[keep],
        votes.outcome[keep],
        votes.style_a[keep],
        votes.style_b[keep],
        votes.category[keep],
        votes.language[keep],
    )
    for view in ("raw", "style"):
        board = compute_board(votes, RankingConfig(**FAST), view=view)
        rows = by_model(board)
        assert board.rows[-1].model == "Newbie"  # never at the top
        new = rows["Newbie"]
        assert new.section == "provisional" and new.votes == 40
        assert math.isnan(new.score) and math.isnan(new.lower) and math.isnan(new.upper)
        assert new.wins + new.losses + new.ties + new.both_bad == 40
        ranked = [r for r in board.rows if r.section == "ranked"]
        assert len(ranked) == 4 and max(r.rank_worst for r in ranked) <= 4


def test_models_without_votes_are_left_off_the_board():
    votes = simulate(STRENGTHS, 2000, names=sorted([*STRENGTHS, "Retired"]))
    board = compute_board(votes, RankingConfig(**FAST))
    assert "Retired" not in by_model(board)
    assert len(board.rows) == 4


def test_disconnected_models_are_listed_apart_with_a_note():
    strengths = {**STRENGTHS, "Island1": 2.0, "Island2": 1.5}
    pairs = [
        ("Alpha", "Beta"),
        ("Beta", "Gamma"),
        ("Gamma", "Delta"),
        ("Alpha", "Delta"),
        ("Island1", "Island2"),
    ]
    votes = simulate(strengths, 5000, pairs=pairs)
    board = compute_board(votes, RankingConfig(**FAST))
    rows = by_model(board)
    assert {rows[m].section for m in ("Island1", "Island2")} == {"disconnected"}
    assert all(math.isnan(rows[m].score) for m in ("Island1", "Island2"))
    assert {rows[m].section for m in STRENGTHS} == {"ranked"}
    assert [r.section for r in board.rows[-2:]] == ["disconnected", "disconnected"]
    assert "never compared" in board.note and "Island1" in board.note
    assert max(r.rank_worst for r in board.rows if r.section == "ranked") == 4


def test_breakdowns_have_their_own_counts():
    votes = simulate(STRENGTHS, 6000)
    boards = compute_all(votes, RankingConfig(**FAST))
    keys = [(b.view, b.breakdown) for b in boards]
    assert keys == [
        ("raw", "all"),
        ("style", "all"),
        ("raw", "category:chat"),
        ("style", "category:chat"),
        ("raw", "category:code"),
        ("style", "category:code"),
        ("raw", "language:de"),
        ("style", "language:de"),
        ("raw", "language:en"),
        ("style", "language:en"),
    ]  # no board for the empty language
    for board in boards:
        field, _, value = board.breakdown.partition(":")
        mask = np.ones(6000, bool) if field == "all" else getattr(votes, field) == value
        assert board.votes == int(mask.sum())
        alpha = votes.model_names.index("Alpha")
        in_alpha = mask & ((votes.a == alpha) | (votes.b == alpha))
        assert by_model(board)["Alpha"].votes == int(in_alpha.sum())
        if board.view == "style":
            assert set(board.style_coefs) == {"length", "headers", "lists", "bold"}
            for coef, lower, upper in board.style_coefs.values():
                assert lower < coef < upper


def test_counts_and_both_bad_rate_per_model():
    names = ["M0", "M1", "M2"]
    a = np.array([0, 0, 1, 2, 0, 1, 2, 0] * 50)
    b = np.array([1, 2, 2, 0, 1, 0, 1, 2] * 50)
    outcome = np.array([A, B, TIE, BOTH_BAD, A, A, BOTH_BAD, TIE] * 50)
    n = a.size
    votes = VoteArrays(
        names,
        a,
        b,
        outcome,
        np.ones((n, 4)),
        np.ones((n, 4)),
        np.full(n, "x", dtype=object),
        np.full(n, "en", dtype=object),
    )
    rows = by_model(compute_board(votes, RankingConfig(**FAST)))
    m0 = rows["M0"]
    # M0 in: (0,1) A win, (0,2) B loss, (2,0) both bad, (0,1) A win, (1,0) A loss, (0,2) tie.
    assert (m0.votes, m0.wins, m0.losses, m0.ties, m0.both_bad) == (300, 100, 100, 50, 50)
    assert m0.both_bad_rate == pytest.approx(50 / 300)
    m2 = rows["M2"]
    assert (m2.votes, m2.both_bad, m2.both_bad_rate) == (250, 100, pytest.approx(0.4))


def test_same_votes_and_seed_give_identical_boards():
    votes = simulate({**STRENGTHS, "Newbie": 0.0}, 3000, seed=5)
    config = RankingConfig(**FAST, seed=3)
    first = compute_all(votes, config)
    second = compute_all(votes, config)
    assert repr(first) == repr(second)
    other = compute_all(votes, RankingConfig(**FAST, seed=4))
    assert repr(other) != repr(first)


def test_reweighting_changes_results_only_when_weights_differ():
    votes = simulate(STRENGTHS, 4000, seed=2)
    rng = np.random.default_rng(9)
    # Downweight the votes that Alpha won: the reweighted board must think less of Alpha.
    alpha = votes.model_names.index("Alpha")
    alpha_won = ((votes.a == alpha) & (votes.outcome == A)) | (
        (votes.b == alpha) & (votes.outcome == B)
    )
    weights = np.where(alpha_won, 0.5, 1.0) * rng.uniform(0.9, 1.1, votes.a.size)
    weights /= weights.mean()
    for method in ("bootstrap", "sandwich"):
        plain = RankingConfig(**FAST, method=method)
        reweighted = RankingConfig(**FAST, method=method, reweight=True)
        votes.weights = weights
        base = by_model(compute_board(votes, plain))
        moved = by_model(compute_board(votes, reweighted))
        assert moved["Alpha"].score < base["Alpha"].score - 20
        assert moved["Alpha"].votes == base["Alpha"].votes  # counts stay raw
        votes.weights = np.ones(votes.a.size)
        same = by_model(compute_board(votes, reweighted))
        assert same["Alpha"].score == pytest.approx(base["Alpha"].score, abs=1e-6)
        style_moved = by_model(compute_board(votes, reweighted, view="style"))
        votes.weights = weights
        style_reweighted = by_model(compute_board(votes, reweighted, view="style"))
        assert style_reweighted["Alpha"].score < style_moved["Alpha"].score - 20


def test_anchor_model_sits_at_the_anchor_score():
    votes = simulate(STRENGTHS, 3000)
    board = compute_board(votes, RankingConfig(**FAST, anchor="Gamma", anchor_score=1200.0))
    gamma = by_model(board)["Gamma"]
    assert gamma.score == pytest.approx(1200.0)
    assert gamma.lower < 1200.0 < gamma.upper
    missing = compute_board(votes, RankingConfig(**FAST, anchor="Nobody"))
    assert "anchor" in missing.note
    assert np.mean([r.score for r in missing.rows]) == pytest.approx(1000.0)


def test_sandwich_and_bootstrap_boards_agree_roughly():
    votes = simulate(STRENGTHS, 6000, seed=7)
    boot = by_model(compute_board(votes, RankingConfig(**{**FAST, "rounds": 400})))
    sand = by_model(compute_board(votes, RankingConfig(**FAST, method="sandwich")))
    for name in STRENGTHS:
        assert boot[name].score == pytest.approx(sand[name].score, abs=1e-6)
        width_b = boot[name].upper - boot[name].lower
        width_s = sand[name].upper - sand[name].lower
        assert 0.75 < width_s / width_b < 1.33
    style = compute_board(votes, RankingConfig(**FAST, method="sandwich"), view="style")
    assert all(r.lower < r.score < r.upper for r in style.rows)


def test_dropping_both_bad_votes_changes_the_fit_not_the_counts():
    votes = simulate(STRENGTHS, 4000, seed=1)
    tie = by_model(compute_board(votes, RankingConfig(**FAST, method="sandwich")))
    drop = by_model(compute_board(votes, RankingConfig(**FAST, method="sandwich", both_bad="drop")))
    assert tie["Alpha"].votes == drop["Alpha"].votes
    assert tie["Alpha"].score != drop["Alpha"].score
    # "Both bad" counted as ties pulls the scores together.
    assert drop["Alpha"].score - drop["Delta"].score > tie["Alpha"].score - tie["Delta"].score


def test_a_model_that_never_lost_is_ranked_with_a_warning():
    votes = simulate(STRENGTHS, 3000, seed=4)
    alpha = votes.model_names.index("Alpha")
    votes.outcome[votes.a == alpha] = A
    votes.outcome[votes.b == alpha] = B
    board = compute_board(votes, RankingConfig(**FAST))
    top = board.rows[0]
    assert top.model == "Alpha" and top.losses == 0 and math.isfinite(top.score)
    assert "never lost" in board.note and "Alpha" in board.note


def test_settings_round_trip_as_a_dict():
    config = RankingConfig(method="sandwich", anchor="Alpha", reweight=True)
    assert RankingConfig(**config.as_dict()) == config
    assert config.as_dict()["min_votes"] == 300
