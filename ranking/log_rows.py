"""A battle log's rows as msgspec decodes them, and the vote arrays built from them a block at
a time (`log_reader` reads the file).

The typed rows declare only what the fit uses, so msgspec skips everything else without
building it. A value of an unexpected type fails the block's decoding, and `log_reader` then
reads that block with the exact reader: the checks here need only mirror `battle_log`'s for
values of the declared types.
"""

from __future__ import annotations

from itertools import compress, repeat
from operator import attrgetter

import msgspec
import numpy as np

from ranking.battle_log import DUPLICATE, NAMED, OUTCOME, WINNER, ReadReport, Record, weights_of
from ranking.compute import VoteArrays
from ranking.progress import advance
from ranking.style import STYLE_NAMES

Num = int | float | dict[str, int | float] | None


class _Tag(msgspec.Struct, gc=False):
    sampled: bool | None = None


class _Row(msgspec.Struct, gc=False):
    model_a: str | None = None
    model_b: str | None = None
    anony: bool | None = None
    dedup_tag: _Tag | None = None
    simulated: bool | None = None


class _Arena(_Row):
    winner: str | None = None
    category: str | None = None
    language: str | None = None


class _Meta(msgspec.Struct, gc=False):
    sum_assistant_a_tokens: Num = None
    header_count_a: Num = None
    list_count_a: Num = None
    bold_count_a: Num = None
    sum_assistant_b_tokens: Num = None
    header_count_b: Num = None
    list_count_b: Num = None
    bold_count_b: Num = None


class _ArenaStyle(_Arena):
    conv_metadata: _Meta | None = None


class _Jsonl(_Row):
    choice: str | None = None
    category: str | None = msgspec.field(default=None, name="prompt_category")
    language: str | None = msgspec.field(default=None, name="prompt_language")
    sampling_probability: float | None = None


class _Counts(msgspec.Struct, gc=False):
    headers: Num = None
    list_items: Num = None
    bold: Num = None


class _Side(msgspec.Struct, gc=False):
    output_tokens: Num = None
    style: _Counts | None = None


class _JsonlStyle(_Jsonl):
    side_a: _Side | None = None
    side_b: _Side | None = None


def _n(value: Num) -> float:
    """A style count as `battle_log._num` reads it (bools and other types never get here)."""
    if value is None:
        return 0.0
    if type(value) is dict:
        return float(sum(value.values()))
    return float(value)


def _arena_style(rows: list) -> list[list[float]]:
    metas = [r.conv_metadata for r in rows]
    # _Meta's fields are side a's four counts, then side b's, in `STYLE_NAMES` order.
    return [
        [_n(getattr(m, f)) if m is not None else 0.0 for m in metas]
        for f in _Meta.__struct_fields__
    ]


def _jsonl_style(rows: list) -> list[list[float]]:
    out = []
    for side in ("side_a", "side_b"):
        sides = [getattr(r, side) for r in rows]
        out.append([_n(s.output_tokens) if s is not None else 0.0 for s in sides])
        counts = [s.style if s is not None else None for s in sides]
        for key in ("headers", "list_items", "bold"):
            out.append([_n(getattr(c, key)) if c is not None else 0.0 for c in counts])
    return out


def _bad_names(a: str | None, b: str | None) -> bool:
    return not a or not b or a == b


def _marked_duplicate(tag: _Tag | None) -> bool:
    return tag is not None and tag.sampled is False


class _Codes(dict):
    """Text → a dense code, a new one for each text not seen before, in order of appearance."""

    def __init__(self, *, blank: int | None = None) -> None:
        super().__init__()
        self.labels: list[str] = []
        if blank is None:  # "" (and a missing value) is a label of its own, code 0
            self[None] = self[""]
        else:
            self[None] = self[""] = blank

    def __missing__(self, key: str) -> int:
        code = self[key] = len(self.labels)
        self.labels.append(key)
        return code


class Columns:
    """The arrays being built, a block at a time."""

    def __init__(self, *, fmt: str, style: bool, filters: dict) -> None:
        self.fmt = fmt
        self.style = style
        self.filters = filters
        self.models = _Codes(blank=-1)
        self.category = _Codes()
        self.language = _Codes()
        self.parts: dict[str, list[np.ndarray]] = {
            k: [] for k in ("a", "b", "outcome", "category", "language", "p", "style")
        }

    def add(self, a, b, outcome, category, language, p=None, style=None) -> None:
        n = len(a)

        def codes(known: _Codes, texts) -> np.ndarray:
            return np.fromiter(map(known.__getitem__, texts), np.int32, n)

        self.parts["a"].append(codes(self.models, a))
        self.parts["b"].append(codes(self.models, b))
        self.parts["outcome"].append(np.asarray(outcome, dtype=np.int8))
        self.parts["category"].append(codes(self.category, category))
        self.parts["language"].append(codes(self.language, language))
        if p is not None:
            self.parts["p"].append(np.asarray(p, dtype=np.float64))
        if style is not None:
            self.parts["style"].append(np.asarray(style, dtype=np.float64).reshape(-1, 8))

    def rows(self, rows: list, numbers: np.ndarray, report: ReadReport) -> None:
        """Typed rows (msgspec structs) checked and filtered as `battle_log` checks a row."""
        n = len(rows)
        if n == 0:
            return
        said_field = "winner" if self.fmt == "arena" else "choice"
        fields = ("model_a", "model_b", said_field, "category", "language")
        fields += ("anony", "dedup_tag", "simulated")
        a, b, said, category, language, anony, tags, simulated = zip(
            *map(attrgetter(*fields), rows), strict=True
        )
        outcome = np.fromiter(map(_CODES[self.fmt].get, said, repeat(-1)), np.int8, n)
        why = np.zeros(n, dtype=np.int8)  # 0 keep, then the first reason that applies
        why[np.fromiter(map(_bad_names, a, b), bool, n)] = 5
        why[outcome < 0] = 4
        filters = self.filters
        if not filters["keep_duplicates"]:
            why[np.fromiter(map(_marked_duplicate, tags), bool, n)] = 3
        if not filters["keep_named"] and False in anony:
            why[np.fromiter((x is False for x in anony), bool, n)] = 2
        if not filters["include_simulated"] and True in simulated:
            why[np.fromiter((x is True for x in simulated), bool, n)] = 1
        keep = why == 0
        kept = n
        if not keep.all():
            for i in np.flatnonzero(~keep).tolist():
                if why[i] == 1:
                    report.skipped_simulated += 1
                else:
                    report.rejected.append((int(numbers[i]), self._reason(int(why[i]), said[i])))
            mask = keep.tolist()
            rows = list(compress(rows, mask))
            a, b, category, language = (list(compress(x, mask)) for x in (a, b, category, language))
            kept = len(rows)
        report.read += kept
        advance(kept)
        if not kept:
            return
        style = None
        if self.style:
            style = np.array((_arena_style if self.fmt == "arena" else _jsonl_style)(rows)).T
        p = None
        if self.fmt == "jsonl":
            p = [r.sampling_probability or np.nan for r in rows]
        self.add(a, b, outcome[keep], category, language, p, style)

    def _reason(self, why: int, said: object) -> str:
        if why == 2:
            return NAMED
        if why == 3:
            return DUPLICATE
        if why == 4:
            word = "winner" if self.fmt == "arena" else "choice"
            return f"unknown {word} {said!r}"
        return "model_a and model_b must be two different model names"

    def records(self, records: list[Record]) -> None:
        if not records:
            return
        self.add(
            [r.model_a for r in records],
            [r.model_b for r in records],
            [OUTCOME[r.choice] for r in records],
            [r.category for r in records],
            [r.language for r in records],
            [r.sampling_probability or np.nan for r in records] if self.fmt == "jsonl" else None,
            [(*r.style_a, *r.style_b) for r in records] if self.style else None,
        )

    def arrays(self) -> VoteArrays:
        def joined(name: str, dtype) -> np.ndarray:
            parts = self.parts.pop(name)
            return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)

        names = self.models.labels
        # Models in sorted order, as `battle_log.arrays_from_records` has them.
        order = np.argsort(np.array(names, dtype=object)) if names else np.zeros(0, np.int64)
        rank = np.empty(len(names), dtype=np.int64)
        rank[order] = np.arange(len(names))
        a, b = rank[joined("a", np.int64)], rank[joined("b", np.int64)]
        n = len(a)
        if self.style:
            style = joined("style", np.float64).reshape(n, 8)
            style_a, style_b = style[:, :4], style[:, 4:]
        else:  # no memory: every row reads the same zeros
            style_a = style_b = np.broadcast_to(np.zeros(len(STYLE_NAMES)), (n, len(STYLE_NAMES)))
        p = joined("p", np.float64)
        return VoteArrays(
            model_names=[names[i] for i in order],
            a=a,
            b=b,
            outcome=joined("outcome", np.int64),
            style_a=style_a,
            style_b=style_b,
            category=joined("category", np.int32),
            language=joined("language", np.int32),
            weights=weights_of(p) if len(p) else None,
            labels={"category": self.category.labels, "language": self.language.labels},
        )


_CODES = {"arena": {k: OUTCOME[v] for k, v in WINNER.items()}, "jsonl": OUTCOME}
TYPES = {("arena", False): _Arena, ("arena", True): _ArenaStyle}
TYPES |= {("jsonl", False): _Jsonl, ("jsonl", True): _JsonlStyle}
