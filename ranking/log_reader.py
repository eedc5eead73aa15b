"""Battle log files into vote arrays, streamed: a few megabytes of the file in memory at a time,
never one Python object per battle kept.

A log is a JSON array of battles or one battle a line (JSONL), either of them gzipped. Each
block of the file is decoded by msgspec into typed rows that hold only the fields the fit uses
(names, outcome, category, language, and the style counts or the sampling probability only when
asked), turned into integer columns at once and dropped. A block that msgspec cannot decode as
typed rows (bad JSON, an unexpected type) is read row by row by the exact reader
(`battle_log.record_from_arena` / `record_from_jsonl` over the standard library's json), so
every row is read as `battle_log.read_log` reads it and every rejected row is reported with why.

msgspec rather than orjson: it decodes straight into typed structs and skips the fields a
struct does not declare without building them (conversations, tags), and its ``decode_lines``
reads JSONL blocks; orjson would build every dict, conversations included.
"""

from __future__ import annotations

import gc
import gzip
import json
from pathlib import Path
from typing import BinaryIO

import msgspec
import numpy as np

from ranking.battle_log import ReadReport, public_filter, record_from_arena, record_from_jsonl
from ranking.compute import VoteArrays
from ranking.log_rows import TAGGED, TYPES, Columns
from ranking.progress import advance

BLOCK = 8 << 20  # bytes read at a time
# What a block msgspec cannot take as typed rows raises; the exact reader then says why.
_UNDECODABLE = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)
_WHITESPACE = b" \t\r\n"
_BOM = b"\xef\xbb\xbf"


def open_log(path: Path) -> BinaryIO:
    """The file's bytes, decompressed when it is gzipped (whatever its name)."""
    stream = path.open("rb")
    if stream.peek(2)[:2] == b"\x1f\x8b":
        stream.close()
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return stream  # type: ignore[return-value]


def read_battle_log(
    stream: BinaryIO,
    *,
    fmt: str,
    report: ReadReport,
    style: bool = False,
    include_simulated: bool = True,
    keep_named: bool = False,
    keep_duplicates: bool = False,
    exact: bool = False,
    tags: bool = False,
) -> VoteArrays:
    """The vote arrays of a log, as `battle_log.arrays_from_records(read_log(...))` gives them
    (style columns only when ``style``; zeros otherwise; tag sets only when ``tags``).
    ``exact`` reads every row with the exact reader, for tests that compare the two."""
    filters = {
        "include_simulated": include_simulated,
        "keep_named": keep_named,
        "keep_duplicates": keep_duplicates,
    }
    columns = Columns(fmt=fmt, style=style, filters=filters, tags=tags)
    # The read makes millions of short-lived objects and no reference cycles: the cyclic
    # collector, run every few hundred allocations, would take a third of its time for nothing.
    collecting = gc.isenabled()
    gc.disable()
    try:
        _Reader(stream, columns, report, exact=exact).run((TAGGED if tags else TYPES)[fmt, style])
    finally:
        if collecting:
            gc.enable()
    return columns.arrays()


class _Reader:
    """The file a block at a time: a block of whole lines, or of whole array elements."""

    def __init__(self, stream: BinaryIO, columns: Columns, report: ReadReport, *, exact: bool):
        self.stream = stream
        self.columns = columns
        self.report = report
        self.exact = exact
        self.parse = record_from_arena if columns.fmt == "arena" else record_from_jsonl
        self.number = 1  # of the next line or array element

    def run(self, row_type: type) -> None:
        self.many = msgspec.json.Decoder(list[row_type])
        self.lines = msgspec.json.Decoder(row_type)
        head = self.stream.read(BLOCK)
        if head.startswith(_BOM):
            head = head[len(_BOM) :]
        if head.lstrip(_WHITESPACE).startswith(b"["):
            self._array(head.lstrip(_WHITESPACE)[1:])
        else:
            self._lines(head)

    # One battle a line -----------------------------------------------------------------

    def _lines(self, buf: bytes) -> None:
        while True:
            more = self.stream.read(BLOCK)
            if more:
                buf += more
                cut = buf.rfind(b"\n") + 1
                if cut == 0:
                    continue  # a line longer than the block so far
                block, buf = buf[:cut], buf[cut:]
            else:
                block, buf = buf, b""
            if block:
                self._line_block(block)
            if not more:
                return

    def _line_block(self, block: bytes) -> None:
        first = self.number
        self.number += block.count(b"\n") + (not block.endswith(b"\n"))
        if not self.exact:
            try:
                rows = self.lines.decode_lines(block)
            except _UNDECODABLE:
                pass
            else:
                numbers = _line_numbers(block, first)
                if len(numbers) == len(rows):  # not so where a line holds two values
                    self.columns.rows(rows, numbers, self.report)
                    return
        self._exact((first + i, line) for i, line in enumerate(block.split(b"\n")))

    # A JSON array ----------------------------------------------------------------------

    def _array(self, buf: bytes) -> None:
        """Elements of the array, a block at a time. A block is cut after an element that
        ends where a later element (learned from the first cut) would start, and msgspec's
        decoding of "[" + block + "]" proves the cut: a prefix of the array's elements that
        decodes as an array of its own ends between two top-level elements. Where no cut is
        proven (or a row in the block is bad) the block is split exactly by `_split`."""
        gap = None  # the bytes between two top-level elements, e.g. b"},\n{"
        while True:
            more = self.stream.read(BLOCK)
            buf += more
            if not more:
                self._last(buf)
                return
            rows = None
            if gap is not None and not self.exact:
                cut = buf.rfind(gap)
                if cut > 0:
                    try:
                        rows = self.many.decode(b"[" + buf[: cut + 1] + b"]")
                    except _UNDECODABLE:
                        rows = None
            if rows is not None:
                numbers = np.arange(self.number, self.number + len(rows))
                self.number += len(rows)
                self.columns.rows(rows, numbers, self.report)
                buf = buf[cut + 1 :].lstrip(_WHITESPACE)[1:]  # past the comma
                continue
            commas, end = _split(buf)
            if end >= 0:
                self._last(buf)
                return
            if not commas.size:
                continue  # an element longer than the block so far: read on
            if gap is None and commas.size >= 1:
                gap = _gap(buf, commas)
            self._elements(buf, commas[:-1], int(commas[-1]))
            buf = buf[int(commas[-1]) + 1 :]

    def _last(self, buf: bytes) -> None:
        commas, end = _split(buf)
        if end < 0:
            if buf.strip(_WHITESPACE):
                self._elements(buf, commas, len(buf))
            self.report.rejected.append((0, "the JSON array is cut short: no closing ]"))
            return
        self._elements(buf, commas[commas < end], end)
        after = buf[end + 1 :]
        while not after.strip(_WHITESPACE):
            after = self.stream.read(BLOCK)
            if not after:
                return
        self.report.rejected.append((0, "text after the end of the JSON array"))

    def _elements(self, buf: bytes, commas: np.ndarray, end: int) -> None:
        """The elements of ``buf[:end]`` (``commas`` between them), checked one by one."""
        if not buf[:end].strip(_WHITESPACE) and not commas.size:
            return  # an empty array
        bounds = [-1, *commas.tolist(), end]
        items = [buf[bounds[i] + 1 : bounds[i + 1]] for i in range(len(bounds) - 1)]
        first = self.number
        self.number += len(items)
        if not self.exact:
            try:
                rows = self.many.decode(b"[" + buf[:end] + b"]")
            except _UNDECODABLE:
                pass
            else:
                self.columns.rows(rows, np.arange(first, first + len(rows)), self.report)
                return
        self._exact(enumerate(items, start=first), blank_is_row=True)

    def _exact(self, numbered, *, blank_is_row: bool = False) -> None:
        """Rows read one at a time as `battle_log.read_log` reads them."""
        records = []
        report, filters = self.report, self.columns.filters
        for number, data in numbered:
            if not data.strip(_WHITESPACE) and not blank_is_row:
                continue
            try:
                # Bytes that are not UTF-8 are replaced, as msgspec leaves them be in the
                # fields it skips: a bad byte in a conversation does not lose the battle.
                row = json.loads(data.decode("utf-8", errors="replace"))
            except json.JSONDecodeError as exc:
                report.rejected.append((number, f"not valid JSON ({exc.msg})"))
                continue
            except (ValueError, RecursionError) as exc:  # a huge integer, a deep nesting
                report.rejected.append((number, f"not readable JSON ({exc.__class__.__name__})"))
                continue
            if not isinstance(row, dict):
                report.rejected.append((number, "not a JSON object"))
                continue
            if row.get("simulated") and not filters["include_simulated"]:
                report.skipped_simulated += 1
                continue
            why = public_filter(
                row, keep_named=filters["keep_named"], keep_duplicates=filters["keep_duplicates"]
            )
            if why:
                report.rejected.append((number, why))
                continue
            try:
                records.append(self.parse(row))
            except ValueError as exc:
                report.rejected.append((number, str(exc)))
        report.read += len(records)
        advance(len(records))
        self.columns.records(records)


def _line_numbers(block: bytes, first: int) -> np.ndarray:
    """The numbers of the block's non-blank lines (those ``decode_lines`` returns rows for)."""
    data = np.frombuffer(block, dtype=np.uint8)
    ends = np.flatnonzero(data == 10)
    if not block.endswith(b"\n"):
        ends = np.append(ends, len(data))
    solid = np.cumsum(~_IS_SPACE[data], dtype=np.int64)
    solid = np.concatenate([[0], solid])
    starts = np.concatenate([[0], ends[:-1] + 1])
    return first + np.flatnonzero(solid[np.minimum(ends, len(data))] - solid[starts] > 0)


_IS_SPACE = np.zeros(256, dtype=bool)
_IS_SPACE[list(_WHITESPACE)] = True
# Per byte: 1 opens, 2 closes, 3 a comma; JSON's structure outside strings.
_KIND = np.zeros(256, dtype=np.int8)
_KIND[list(b"{[")] = 1
_KIND[list(b"}]")] = 2
_KIND[ord(",")] = 3


def _split(buf: bytes) -> tuple[np.ndarray, int]:
    """Where ``buf``, which starts between two elements of the top-level array, has the
    commas between its elements, and the array's closing bracket (-1 if not in ``buf``).

    Exact for any JSON: quotes preceded by an odd run of backslashes are escaped; commas and
    brackets between unescaped quote pairs are text.
    """
    data = np.frombuffer(buf, dtype=np.uint8)
    quotes = np.flatnonzero(data == 0x22)
    if quotes.size:
        after_slash = quotes[(quotes > 0) & (data[quotes - 1] == 0x5C)]
        if after_slash.size:
            slashes = np.flatnonzero(data == 0x5C)
            starts = np.ones(slashes.size, dtype=bool)
            starts[1:] = slashes[1:] != slashes[:-1] + 1
            run_start = slashes[starts][np.cumsum(starts) - 1]
            run = after_slash - run_start[np.searchsorted(slashes, after_slash - 1)]
            quotes = np.setdiff1d(quotes, after_slash[run % 2 == 1], assume_unique=True)
    marks = np.flatnonzero(_KIND[data])
    marks = marks[np.searchsorted(quotes, marks) % 2 == 0]  # outside strings
    kind = _KIND[data[marks]]
    depth = np.cumsum(np.where(kind == 1, 1, np.where(kind == 2, -1, 0)))
    closed = np.flatnonzero(depth < 0)
    end = int(marks[closed[0]]) if closed.size else -1
    commas = marks[(kind == 3) & (depth == 0)]
    if end >= 0:
        commas = commas[commas < end]
    return commas, end


def _gap(buf: bytes, commas: np.ndarray) -> bytes:
    """The bytes from the end of the first element through the start of the second."""
    comma = int(commas[0])
    left = len(buf[:comma].rstrip(_WHITESPACE)) - 1
    rest = buf[comma + 1 :]
    right = comma + 1 + (len(rest) - len(rest.lstrip(_WHITESPACE)))
    return buf[left : right + 1]
