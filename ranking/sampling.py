"""Active sampling of battle pairs: votes go where they tell the leaderboard the most.

A pair's weight is how much the two models' intervals overlap (a vote between clearly separated
models teaches little) plus a floor, so every pair keeps getting votes; models with few votes
are boosted until their interval narrows. Pure numpy: the caller supplies intervals and counts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np


def overlap(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Pairwise overlap of intervals as a share of the narrower one, in [0, 1].

    A model with no interval yet (NaN) overlaps everything fully: it is the least known.
    """
    lo = np.maximum.outer(lower, lower)
    hi = np.minimum.outer(upper, upper)
    width = upper - lower
    narrower = np.minimum.outer(width, width)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.clip((hi - lo) / np.where(narrower > 0, narrower, 1.0), 0.0, 1.0)
    unknown = np.isnan(lower) | np.isnan(upper)
    share = np.where(unknown[:, None] | unknown[None, :], 1.0, np.nan_to_num(share))
    np.fill_diagonal(share, 0.0)
    return share


def pair_probabilities(
    *,
    lower: np.ndarray,
    upper: np.ndarray,
    votes: np.ndarray,
    allowed: np.ndarray | None = None,
    floor: float = 0.2,
    boost_votes: int = 300,
    boost: float = 1.0,
) -> np.ndarray:
    """A symmetric matrix of probabilities over unordered pairs (upper triangle sums to 1).

    ``allowed``: a boolean matrix of pairs that may meet at all (e.g. not the same underlying
    model); everything else gets zero.
    """
    n = len(lower)
    weights = overlap(np.asarray(lower, float), np.asarray(upper, float)) + floor
    shortfall = np.clip(1.0 - np.asarray(votes, float) / max(boost_votes, 1), 0.0, 1.0)
    factor = 1.0 + boost * shortfall
    weights = weights * np.outer(factor, factor)
    np.fill_diagonal(weights, 0.0)
    if allowed is not None:
        weights = np.where(allowed, weights, 0.0)
    total = np.triu(weights, 1).sum()
    if n < 2 or total <= 0:
        return np.zeros((n, n))
    return weights / total


def draw_probabilities(
    *,
    ids: Sequence[object],
    lower: np.ndarray,
    upper: np.ndarray,
    votes: np.ndarray,
    conf: Mapping[str, float],
) -> np.ndarray:
    """``pair_probabilities`` of the models a start may draw: two of the same underlying id
    (``ids``) never meet; ``conf`` is the SAMPLING settings (floor, boost_votes, boost)."""
    same = np.array(ids, dtype=object)
    return pair_probabilities(
        lower=lower,
        upper=upper,
        votes=votes,
        allowed=same[:, None] != same[None, :],
        floor=conf["floor"],
        boost_votes=int(conf["boost_votes"]),
        boost=conf["boost"],
    )


def model_weights(probs: np.ndarray) -> np.ndarray:
    """Each model's chance of being in the next battle, halved so they sum to 1: its row of a
    ``pair_probabilities`` matrix (every pair counts for both of its models)."""
    return probs.sum(axis=1) / 2.0


def draw_pair(probs: np.ndarray, rng: np.random.Generator) -> tuple[int, int, float]:
    """One unordered pair (i < j) and the probability it had."""
    i_idx, j_idx = np.triu_indices(len(probs), 1)
    p = probs[i_idx, j_idx]
    k = int(rng.choice(len(p), p=p / p.sum()))
    return int(i_idx[k]), int(j_idx[k]), float(p[k])
