"""The length audit of preference pairs (pure numpy: no Django, no database).

A pair's length is its answer's output tokens over every turn (the vote log's
``output_tokens``, the same length the style-controlled fit reads). Pairs whose two answers are
equally long say nothing about length: they are counted apart and left out of the shares.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DECILES = 10


@dataclass(frozen=True)
class Decile:
    low: float  # relative length difference (longer − shorter) / (longer + shorter)
    high: float
    pairs: int
    longer_won: float  # share of these pairs whose chosen answer is the longer one


@dataclass(frozen=True)
class LengthAudit:
    pairs: int
    equal_length: int
    chosen_longer: int
    chosen_longer_share: float | None
    deciles: tuple[Decile, ...]

    @property
    def unequal(self) -> int:
        return self.pairs - self.equal_length


def length_audit(chosen: np.ndarray, rejected: np.ndarray) -> LengthAudit:
    """How often the chosen answer is the longer one, overall and by decile of the relative
    length difference (a gap of 600 vs 500 tokens counts as 60 vs 50, as in style control)."""
    chosen = np.asarray(chosen, dtype=np.float64)
    rejected = np.asarray(rejected, dtype=np.float64)
    differ = chosen != rejected
    longer = chosen[differ] > rejected[differ]
    n = int(differ.sum())
    hi = np.maximum(chosen[differ], rejected[differ])
    lo = np.minimum(chosen[differ], rejected[differ])
    total = hi + lo
    gap = np.divide(hi - lo, total, out=np.zeros_like(total), where=total > 0)
    return LengthAudit(
        pairs=int(chosen.size),
        equal_length=int(chosen.size - n),
        chosen_longer=int(longer.sum()),
        chosen_longer_share=float(longer.mean()) if n else None,
        deciles=_deciles(gap, longer),
    )


def _deciles(gap: np.ndarray, longer: np.ndarray) -> tuple[Decile, ...]:
    if gap.size < DECILES:
        return ()
    order = np.argsort(gap, kind="stable")
    out = []
    # Equal-count bins by rank, so ties in the gap cannot leave a bin empty.
    for part in np.array_split(order, DECILES):
        out.append(
            Decile(
                low=float(gap[part].min()),
                high=float(gap[part].max()),
                pairs=int(part.size),
                longer_won=float(longer[part].mean()),
            )
        )
    return tuple(out)


def balance_length(chosen: np.ndarray, rejected: np.ndarray, *, seed: int) -> np.ndarray:
    """Indices (ascending) of a subset whose chosen-longer share is one half: every pair of the
    rarer kind and as many of the commoner kind drawn at random (``seed``), plus every
    equal-length pair. Only drops pairs; never duplicates or edits one."""
    chosen = np.asarray(chosen, dtype=np.float64)
    rejected = np.asarray(rejected, dtype=np.float64)
    longer = np.flatnonzero(chosen > rejected)
    shorter = np.flatnonzero(chosen < rejected)
    equal = np.flatnonzero(chosen == rejected)
    keep = min(longer.size, shorter.size)
    rng = np.random.default_rng(seed)
    if longer.size > keep:
        longer = rng.choice(longer, size=keep, replace=False)
    if shorter.size > keep:
        shorter = rng.choice(shorter, size=keep, replace=False)
    return np.sort(np.concatenate([longer, shorter, equal]).astype(np.int64))


@dataclass(frozen=True)
class RankGap:
    model: str
    raw_rank: int
    style_rank: int

    @property
    def places(self) -> int:
        return self.style_rank - self.raw_rank


def rank_gaps(
    raw: dict[str, float], style: dict[str, float], *, more_than: int
) -> tuple[RankGap, ...]:
    """Models (ranked in both views) whose raw rank beats their style-controlled rank by more
    than ``more_than`` places: a model that wins on length or markdown more than on content.
    Ranks are places by score, 1 the best, among the models both views rank."""
    names = sorted(set(raw) & set(style))

    def places(scores: dict[str, float]) -> dict[str, int]:
        ordered = sorted(names, key=lambda n: (-scores[n], n))
        return {name: i + 1 for i, name in enumerate(ordered)}

    raw_rank, style_rank = places(raw), places(style)
    gaps = [RankGap(n, raw_rank[n], style_rank[n]) for n in names]
    return tuple(sorted((g for g in gaps if g.places > more_than), key=lambda g: -g.places))
