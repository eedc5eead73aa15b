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

from ranking.battle_log import (
    BAD_PROBABILITY,
    DUPLICATE,
    NAMED,
    OUTCOME,
    WINNER,
    ReadReport,
    Record,
    weights_of,
)
from ranking.compute import VoteArrays
from ranking.progress import advance
from ranking.style import STYLE_NAMES
from ranking.tag_sets import SetCodes, row_tags, used_sets

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


_NO_META = _Meta()


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


def _column(values) -> np.ndarray:
    """Style counts as `battle_log._num` reads them (bools and other types never get here:
    they fail the typed decoding), as floats, a Python int of any size included."""
    n = len(values)
    # A column is most often all numbers or all dicts (FastChat's counts by kind): those are
    # read without a Python step per value; a mixed column (or a missing count) value by value.
    if None not in values:  # numpy would read None as NaN, not 0
        try:
            return np.fromiter(values, np.float64, n)
        except (TypeError, ValueError, OverflowError):
            pass
    try:
        return np.fromiter(map(sum, map(dict.values, values)), np.float64, n)
    except (TypeError, ValueError, OverflowError):
        pass
    return np.fromiter(
        (sum(v.values()) if type(v) is dict else (v or 0) for v in values), np.float64, n
    )


def _arena_style(rows: list) -> np.ndarray:
    metas = [r.conv_metadata for r in rows]
    if None in metas:
        metas = [_NO_META if m is None else m for m in metas]
    # _Meta's fields are side a's four counts, then side b's, in `STYLE_NAMES` order.
    columns = zip(*map(attrgetter(*_Meta.__struct_fields__), metas), strict=True)
    return np.column_stack([_column(c) for c in columns])


def _jsonl_style(rows: list) -> np.ndarray:
    columns = []
    for side in ("side_a", "side_b"):
        sides = [getattr(r, side) for r in rows]
        columns.append(_column([None if s is None else s.output_tokens for s in sides]))
        counts = [None if s is None else s.style for s in sides]
        for key in ("headers", "list_items", "bold"):
            columns.append(_column([None if c is None else getattr(c, key) for c in counts]))
    return np.column_stack(columns)


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

    def __init__(self, *, fmt: str, style: bool, filters: dict, tags: bool = False) -> None:
        self.fmt = fmt
        self.style = style
        self.filters = filters
        self.tags = tags  # read each row's tag set (`tag_sets.row_tags`)
        self.models = _Codes(blank=-1)
        self.category = _Codes()
        self.language = _Codes()
        self.tag_sets = SetCodes()
        self.parts: dict[str, list[np.ndarray]] = {
            k: [] for k in ("a", "b", "outcome", "category", "language", "p", "style", "tags")
        }

    def add(self, a, b, outcome, category, language, p=None, style=None, tags=None) -> None:
        """Columns of kept battles, names and labels as texts, tags as sets."""
        self.add_codes(
            self.codes(self.models, a),
            self.codes(self.models, b),
            outcome,
            self.codes(self.category, category),
            self.codes(self.language, language),
            p,
            style,
            None if tags is None else self.codes(self.tag_sets, tags),
        )

    @staticmethod
    def codes(known: _Codes, texts) -> np.ndarray:
        return np.fromiter(map(known.__getitem__, texts), np.int32, len(texts))

    def add_codes(self, a, b, outcome, category, language, p=None, style=None, tags=None) -> None:
        """Columns of kept battles, names and labels as codes. A text may have a code and no
        kept battle (its battles were rejected): `arrays` leaves such texts out."""
        self.parts["a"].append(a)
        self.parts["b"].append(b)
        self.parts["outcome"].append(np.asarray(outcome, dtype=np.int8))
        self.parts["category"].append(category)
        self.parts["language"].append(language)
        if p is not None:
            self.parts["p"].append(np.asarray(p, dtype=np.float64))
        if style is not None:
            self.parts["style"].append(np.asarray(style, dtype=np.float64).reshape(-1, 8))
        if tags is not None:
            self.parts["tags"].append(tags)

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
        a, b = self.codes(self.models, a), self.codes(self.models, b)  # -1: no name
        why = np.zeros(n, dtype=np.int8)  # 0 keep, then the first reason that applies
        p = None
        if self.fmt == "jsonl":
            p = np.array([r.sampling_probability or np.nan for r in rows], dtype=np.float64)
            why[(p <= 0) | (p > 1)] = 6  # NaN (none recorded) compares false: kept
        why[(a < 0) | (b < 0) | (a == b)] = 5
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
            rows = list(compress(rows, keep.tolist()))
            kept = len(rows)
        report.read += kept
        advance(kept)
        if not kept:
            return
        style = None
        if self.style:
            style = (_arena_style if self.fmt == "arena" else _jsonl_style)(rows)
        category = self.codes(self.category, category)
        language = self.codes(self.language, language)
        if kept < n:
            a, b, outcome, category, language = (
                x[keep] for x in (a, b, outcome, category, language)
            )
            p = None if p is None else p[keep]
        tags = None
        if self.tags:
            sets = [row_tags(r.category_tag, r.tags, r.is_code) for r in rows]
            tags = self.codes(self.tag_sets, sets)
        self.add_codes(a, b, outcome, category, language, p, style, tags)

    def _reason(self, why: int, said: object) -> str:
        if why == 6:
            return BAD_PROBABILITY
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
            [r.tags for r in records] if self.tags else None,
        )

    def arrays(self) -> VoteArrays:
        def joined(name: str, dtype) -> np.ndarray:
            parts = self.parts.pop(name)
            return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)

        a, b = joined("a", np.int64), joined("b", np.int64)
        n = len(a)
        # Models that took kept votes, in sorted order, as `arrays_from_records` has them.
        used = np.zeros(len(self.models.labels), dtype=bool)
        used[a] = used[b] = True
        names = [self.models.labels[i] for i in np.flatnonzero(used)]
        order = np.argsort(np.array(names, dtype=object)) if names else np.zeros(0, np.int64)
        rank = np.full(len(used), -1, dtype=np.int64)
        rank[np.flatnonzero(used)[order]] = np.arange(len(names))
        a, b = rank[a], rank[b]
        labels, codes = {}, {}
        for field in ("category", "language"):  # only values kept votes have
            values = joined(field, np.int64)
            known = getattr(self, field).labels
            kept = np.bincount(values, minlength=len(known)) > 0
            renumber = np.cumsum(kept) - 1
            codes[field] = renumber[values].astype(np.int32)
            labels[field] = [v for v, k in zip(known, kept.tolist(), strict=True) if k]
        if self.style:
            style = joined("style", np.float64).reshape(n, 8)
            style_a, style_b = style[:, :4], style[:, 4:]
        else:  # no memory: every row reads the same zeros
            style_a = style_b = np.broadcast_to(np.zeros(len(STYLE_NAMES)), (n, len(STYLE_NAMES)))
        p = joined("p", np.float64)
        tags, tag_sets = None, []
        if self.tags:
            tags, tag_sets = used_sets(joined("tags", np.int32), self.tag_sets.sets)
        return VoteArrays(
            model_names=[names[i] for i in order],
            a=a,
            b=b,
            outcome=joined("outcome", np.int64),
            style_a=style_a,
            style_b=style_b,
            category=codes["category"],
            language=codes["language"],
            weights=weights_of(p) if len(p) else None,
            labels=labels,
            tags=tags,
            tag_sets=tag_sets,
        )


_CODES = {"arena": {k: OUTCOME[v] for k, v in WINNER.items()}, "jsonl": OUTCOME}
TYPES = {("arena", False): _Arena, ("arena", True): _ArenaStyle}
TYPES |= {("jsonl", False): _Jsonl, ("jsonl", True): _JsonlStyle}
# The same rows with their tags, only when asked: a row's category_tag is a dict of dicts,
# which msgspec otherwise skips without building. Another type in these fields fails the
# block's typed decoding; the exact reader then reads them as `tag_sets.row_tags` does.
_TAG_FIELDS = [
    ("category_tag", dict | None, None),
    ("tags", list | None, None),
    ("is_code", bool | None, None),
]
TAGGED = {
    key: msgspec.defstruct(f"{row.__name__}Tags", _TAG_FIELDS, bases=(row,), gc=False)
    for key, row in TYPES.items()
}
