"""Battle logs into arrays: the rules for reading one battle (`record_from_arena`,
`record_from_jsonl`, `public_filter`) and the arrays built from many, for the database and for
files alike, so both rank the same. `log_reader` streams a file through these rules.

Models are indexed by name, in sorted order, and only models that took votes are included: the
same votes give the same arrays whichever way they arrived.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from ranking.compute import VoteArrays
from ranking.style import STYLE_NAMES
from ranking.tag_sets import row_tags, tag_codes, used_sets

OUTCOME = {"a": 0, "b": 1, "tie": 2, "both_bad": 3}
# Where a vote's side_a/side_b holds each style number, in `STYLE_NAMES` order: a key, or a key
# inside a key joined by "__" (as Django spells a path into JSON).
STYLE_KEYS = ("output_tokens", "style__headers", "style__list_items", "style__bold")
WINNER = {"model_a": "a", "model_b": "b", "tie": "tie", "tie (bothbad)": "both_bad"}


@dataclass(frozen=True)
class Record:
    model_a: str
    model_b: str
    choice: str  # a | b | tie | both_bad
    style_a: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)
    style_b: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)
    category: str = ""
    language: str = ""
    sampling_probability: float | None = None
    tags: frozenset[str] | None = None  # None: not tagged (`tag_sets.row_tags`)


def arrays_from_records(records: Iterable[Record]) -> VoteArrays:
    rows = list(records)
    names = sorted({r.model_a for r in rows} | {r.model_b for r in rows})
    index = {name: i for i, name in enumerate(names)}
    n = len(rows)
    probs = np.array(
        [r.sampling_probability if r.sampling_probability else np.nan for r in rows], float
    )
    tags, tag_sets = used_sets(*tag_codes((r.tags for r in rows), n))
    return VoteArrays(
        model_names=names,
        a=np.fromiter((index[r.model_a] for r in rows), dtype=np.int64, count=n),
        b=np.fromiter((index[r.model_b] for r in rows), dtype=np.int64, count=n),
        outcome=np.fromiter((OUTCOME[r.choice] for r in rows), dtype=np.int64, count=n),
        style_a=np.array([r.style_a for r in rows], dtype=float).reshape(n, len(STYLE_NAMES)),
        style_b=np.array([r.style_b for r in rows], dtype=float).reshape(n, len(STYLE_NAMES)),
        category=np.array([r.category for r in rows], dtype=object),
        language=np.array([r.language for r in rows], dtype=object),
        weights=weights_of(probs),
        tags=tags,
        tag_sets=tag_sets,
    )


def arrays_from_columns(
    *,
    model_a: np.ndarray,
    model_b: np.ndarray,
    model_names: dict[int, str],
    outcome: np.ndarray,
    style_a: np.ndarray,
    style_b: np.ndarray,
    category: np.ndarray,
    language: np.ndarray,
    probabilities: np.ndarray,
    labels: dict[str, list[str]] | None = None,
) -> VoteArrays:
    """The arrays `arrays_from_records` builds, from whole columns instead of one record a vote.

    ``model_a``/``model_b`` are keys (e.g. primary keys) named by ``model_names``; outcomes are
    already codes; ``probabilities`` has NaN where a vote has no (or a zero) probability.
    """
    keys = np.unique(np.concatenate([model_a, model_b]).astype(np.int64))
    key_names = [model_names[k] for k in keys.tolist()]
    order = sorted(range(len(keys)), key=key_names.__getitem__)
    rank = np.empty(len(keys), dtype=np.int64)
    rank[order] = np.arange(len(keys))
    n = len(model_a)
    return VoteArrays(
        model_names=[key_names[i] for i in order],
        a=rank[np.searchsorted(keys, model_a)].astype(np.int64, copy=False),
        b=rank[np.searchsorted(keys, model_b)].astype(np.int64, copy=False),
        outcome=np.asarray(outcome, dtype=np.int64),
        style_a=np.ascontiguousarray(style_a, dtype=float).reshape(n, len(STYLE_NAMES)),
        style_b=np.ascontiguousarray(style_b, dtype=float).reshape(n, len(STYLE_NAMES)),
        category=np.asarray(category, dtype=object if labels is None else np.int32),
        language=np.asarray(language, dtype=object if labels is None else np.int32),
        weights=weights_of(np.asarray(probabilities, dtype=float)),
        labels=labels,
    )


def weights_of(probs: np.ndarray) -> np.ndarray | None:
    """Inverse-probability weights (mean 1) from sampling probabilities, NaN where unknown;
    None when no vote has one."""
    if not len(probs) or np.isnan(probs).all():
        return None
    # Inverse-probability weights with mean 1; a vote without a known probability weighs as much
    # as the average one.
    inv = 1.0 / probs
    inv = np.where(np.isnan(inv), np.nanmean(inv), inv)
    return inv / inv.mean()


def _num(value: object) -> float:
    if isinstance(value, dict):  # FastChat keeps counts per kind: {"h1": 2, "h2": 1} or total
        return float(sum(v for v in value.values() if isinstance(v, int | float)))
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return float(value)


def _at(side: dict, key: str) -> object:
    """The value at one of `STYLE_KEYS` in ``side``; a missing or empty outer key reads as {}."""
    *outer, last = key.split("__")
    for part in outer:
        side = side.get(part) or {}
        if not isinstance(side, dict):
            return None
    return side.get(last)


def side_style(side: dict) -> tuple[float, float, float, float]:
    """One answer's style numbers, in `STYLE_NAMES` order, from a vote's ``side_a``/``side_b``."""
    return tuple(_num(_at(side, key)) for key in STYLE_KEYS)  # type: ignore[return-value]


def tags_of(row: dict) -> frozenset[str]:
    """A log row's tags, from whichever of ``category_tag``, ``tags`` and ``is_code`` it has."""
    return row_tags(row.get("category_tag"), row.get("tags"), row.get("is_code"))


def record_from_arena(row: dict) -> Record:
    """A row of FastChat's public battle log (our ``export_votes --format arena`` too)."""
    said = row.get("winner")
    winner = WINNER.get(said) if isinstance(said, str) else None
    if winner is None:
        raise ValueError(f"unknown winner {row.get('winner')!r}")
    a, b = row.get("model_a"), row.get("model_b")
    if not isinstance(a, str) or not isinstance(b, str) or not a or not b or a == b:
        raise ValueError("model_a and model_b must be two different model names")
    meta = row.get("conv_metadata") or {}
    if not isinstance(meta, dict):  # as though absent, as when style is not read at all
        meta = {}
    style_a = (
        _num(meta.get("sum_assistant_a_tokens")),
        _num(meta.get("header_count_a")),
        _num(meta.get("list_count_a")),
        _num(meta.get("bold_count_a")),
    )
    style_b = (
        _num(meta.get("sum_assistant_b_tokens")),
        _num(meta.get("header_count_b")),
        _num(meta.get("list_count_b")),
        _num(meta.get("bold_count_b")),
    )
    return Record(
        a,
        b,
        winner,
        style_a,
        style_b,
        str(row.get("category") or ""),
        str(row.get("language") or ""),
        tags=tags_of(row),
    )


BAD_PROBABILITY = "sampling_probability must be a number in (0, 1], or null"


def probability_ok(p: object) -> bool:
    """A recorded sampling probability: none (null or 0: unknown), or a number in (0, 1]."""
    if p is None or (p == 0 and not isinstance(p, bool)):
        return True
    return isinstance(p, int | float) and not isinstance(p, bool) and 0 < p <= 1


def _side(row: dict, key: str) -> dict:
    side = row.get(key)
    return side if isinstance(side, dict) else {}


def record_from_jsonl(row: dict) -> Record:
    """A line of ``export_votes --format jsonl``."""
    choice = row.get("choice")
    if not isinstance(choice, str) or choice not in OUTCOME:
        raise ValueError(f"unknown choice {choice!r}")
    a, b = row.get("model_a"), row.get("model_b")
    if not isinstance(a, str) or not isinstance(b, str) or not a or not b or a == b:
        raise ValueError("model_a and model_b must be two different model names")
    p = row.get("sampling_probability")
    if not probability_ok(p):
        raise ValueError(BAD_PROBABILITY)
    return Record(
        a,
        b,
        choice,
        side_style(_side(row, "side_a")),
        side_style(_side(row, "side_b")),
        str(row.get("prompt_category") or ""),
        str(row.get("prompt_language") or ""),
        row.get("sampling_probability"),
        tags_of(row),
    )


# Rows the public arena's own analysis leaves out (FastChat's elo_analysis), and so do we unless
# asked to keep them: battles where the rater saw the names, and rows its dedup marked.
NAMED = "not anonymous (anony: false)"
DUPLICATE = "a duplicate (dedup_tag.sampled: false)"


@dataclass
class ReadReport:
    read: int = 0
    rejected: list[tuple[int, str]] = field(default_factory=list)
    skipped_simulated: int = 0

    def reasons(self) -> dict[str, int]:
        """Rejected rows per reason, most common first."""
        counts: dict[str, int] = {}
        for _, why in self.rejected:
            counts[why] = counts.get(why, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def public_filter(row: dict, *, keep_named: bool, keep_duplicates: bool) -> str:
    """Why the public pipeline would leave this row out, or "" to keep it."""
    if not keep_named and row.get("anony") is False:
        return NAMED
    tag = row.get("dedup_tag")
    if not keep_duplicates and isinstance(tag, dict) and tag.get("sampled") is False:
        return DUPLICATE
    return ""
