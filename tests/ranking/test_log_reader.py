"""`rank`'s streaming reader: the same arrays and reports as the exact per-row reader, whatever
the file's shape, block size or compression, and today's numbers on a fixed log."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from ranking import log_reader
from ranking.battle_log import ReadReport
from ranking.compute import breakdown_masks

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "ranking"
# Ranked by afee29e (the reader before streaming) with the flags below; the rows include a
# simulated one, odd style numbers, unreadable ones, named battles and duplicates.
TODAY = FIXTURES / "battles.rank.json"
FLAGS = dict(style_control=True, by=["category", "language"], bootstrap=200, seed=3,
             min_votes=50, include_simulated=True,
             style_ci="bootstrap", breakdown_ci="bootstrap")  # today's methods  # fmt: skip


def fixture_rows() -> list:
    return json.loads(gzip.open(FIXTURES / "battles.json.gz").read())


def shapes(rows: list) -> dict[str, bytes]:
    """The same battles as a pretty-printed array, a compact one and JSONL with blank lines."""
    return {
        "indented": json.dumps(rows, indent=1).encode(),
        "compact": json.dumps(rows).encode(),
        "jsonl": b"\n".join(json.dumps(r).encode() for r in rows) + b"\n\n",
    }


def read(data: bytes, *, exact: bool = False, fmt: str = "arena", **flags):
    report = ReadReport()
    arrays = log_reader.read_battle_log(
        io.BytesIO(data), fmt=fmt, report=report, style=True, exact=exact, **flags
    )
    return arrays, report


def assert_same_arrays(x, y) -> None:
    assert x.model_names == y.model_names
    for name in ("a", "b", "outcome", "style_a", "style_b"):
        assert np.array_equal(getattr(x, name), getattr(y, name)), name
    for name in ("category", "language"):
        (cx, lx), (cy, ly) = x.coded(name), y.coded(name)
        assert [lx[i] for i in cx] == [ly[i] for i in cy], name
    assert (x.weights is None) == (y.weights is None)
    if x.weights is not None:
        assert np.allclose(x.weights, y.weights)


def test_rank_gives_todays_numbers_on_the_same_log_and_seed(tmp_path):
    out = tmp_path / "rank.json"
    call_command("rank", str(FIXTURES / "battles.json.gz"), json=out, quiet=True,
                 stdout=io.StringIO(), stderr=io.StringIO(), **FLAGS)  # fmt: skip
    got, want = json.loads(out.read_text()), json.loads(TODAY.read_text())
    for key in ("read", "rejected", "rejected_by_reason", "skipped_simulated"):
        assert got["input"][key] == want["input"][key], key
    # Since issue 26 a category board also holds the rows tagged with it: the log's is_code
    # makes a board of its own, the same rows as its "coding" category here.
    pinned = {(b["view"], b["breakdown"]) for b in want["boards"]}
    tagged = [(b["view"], b["breakdown"], b["votes"]) for b in got["boards"]
              if (b["view"], b["breakdown"]) not in pinned]  # fmt: skip
    coding = next(b["votes"] for b in want["boards"] if b["breakdown"] == "category:coding")
    assert tagged == [("raw", "category:code", coding), ("style", "category:code", coding)]
    got["boards"] = [b for b in got["boards"] if (b["view"], b["breakdown"]) in pinned]
    assert [(b["view"], b["breakdown"], b["votes"]) for b in got["boards"]] == [
        (b["view"], b["breakdown"], b["votes"]) for b in want["boards"]
    ]
    for board, today in zip(got["boards"], want["boards"], strict=True):
        assert [r["model"] for r in board["rows"]] == [r["model"] for r in today["rows"]]
        for row, old in zip(board["rows"], today["rows"], strict=True):
            assert (row["rank_best"], row["rank_worst"]) == (old["rank_best"], old["rank_worst"])
            for key in ("score", "lower", "upper"):
                assert row[key] == pytest.approx(old[key], abs=0.01)
        for name, coef in board["style_coefs"].items():
            assert coef == pytest.approx(today["style_coefs"][name], abs=1e-4)


@pytest.mark.parametrize("shape", ["indented", "compact", "jsonl"])
def test_every_block_size_reads_what_the_exact_reader_reads(shape, monkeypatch):
    rows = fixture_rows()[:600]
    data = shapes(rows)[shape]
    exact, exact_report = read(data, exact=True)
    assert exact_report.read > 500 and len(exact_report.rejected) > 5
    for block in (97, 4096, 1 << 20):  # shorter than one battle, a few battles, all of them
        monkeypatch.setattr(log_reader, "BLOCK", block)
        arrays, report = read(data)
        assert_same_arrays(arrays, exact)
        assert (report.read, report.rejected) == (exact_report.read, exact_report.rejected)


def test_jsonl_exports_keep_their_sampling_probabilities_and_style():
    lines = [
        {"model_a": "x", "model_b": "y", "choice": "a", "sampling_probability": 0.5,
         "side_a": {"output_tokens": 10, "style": {"headers": 2}}, "prompt_category": "code"},
        {"model_a": "y", "model_b": "x", "choice": "both_bad", "sampling_probability": 0.25,
         "side_b": {"output_tokens": {"x": 3, "y": 4}, "style": {"bold": 1.5}}},
        {"model_a": "x", "model_b": "y", "choice": "b", "side_a": "not an object"},
        {"model_a": "x", "model_b": "y", "choice": "b", "sampling_probability": 7},
    ]  # fmt: skip
    data = b"\n".join(json.dumps(r).encode() for r in lines)
    fast, _ = read(data, fmt="jsonl")
    exact, report = read(data, fmt="jsonl", exact=True)
    assert_same_arrays(fast, exact)
    assert report.read == 3
    assert report.rejected == [(4, "sampling_probability must be a number in (0, 1], or null")]
    assert fast.style_a[0].tolist() == [10, 2, 0, 0] and fast.style_b[1].tolist() == [7, 0, 0, 1.5]
    # Inverse probabilities, mean 1; the vote without one weighs as much as the average.
    assert fast.weights.tolist() == pytest.approx([2 / 3, 4 / 3, 1.0])


@pytest.mark.parametrize(
    ("data", "reasons"),
    [
        (b'[{"model_a": "x", "model_b": "y", "winner": "tie"}, {"model_a": "x"', [
            (2, "not valid JSON (Expecting ',' delimiter)"),
            (0, "the JSON array is cut short: no closing ]")]),
        (b'[{"model_a": "x", "model_b": "y", "winner": "tie"}] trailing', [
            (0, "text after the end of the JSON array")]),
        (b'[{"model_a": "x", "model_b": "y", "winner": "tie"},]', [
            (2, "not valid JSON (Expecting value)")]),
        (b'\xef\xbb\xbf{"model_a": "x", "model_b": "y", "winner": "tie"}\n{"model_a": "\xff"}\n'
         b'{"model_a": "x", "model_b": "y", "winner": "tie", "n": NaN}\n', [
            (2, "unknown winner None")]),
        (b'{"model_a": "x", "model_b": "y", "winner": "tie"} {"model_a": "y", "model_b": "x"}\n'
         b'{"model_a": "x", "model_b": "y", "winner": "tie", "deep": ' + b"[" * 100_000 + b"}\n"
         b'{"model_a": "x", "model_b": "y", "winner": "tie"}', [
            (1, "not valid JSON (Extra data)"), (2, "not readable JSON (RecursionError)")]),
    ],
)  # fmt: skip
def test_broken_files_keep_every_readable_battle_and_say_what_is_wrong(data, reasons):
    arrays, report = read(data)
    assert report.rejected == reasons
    assert report.read == len(arrays.a) >= 1


def test_the_file_is_read_a_block_at_a_time(tmp_path, monkeypatch):
    monkeypatch.setattr(log_reader, "BLOCK", 4096)
    sizes = []

    class Watched(io.BytesIO):
        def read(self, size=-1):
            sizes.append(size)
            return super().read(size)

    data = shapes(fixture_rows())["compact"]
    arrays = log_reader.read_battle_log(Watched(data), fmt="arena", report=ReadReport())
    assert len(arrays.a) > 2000 and len(sizes) > len(data) // 4096
    assert set(sizes) == {4096}  # never "the rest of the file"


def test_gzip_is_read_whatever_the_name_and_a_cut_gzip_is_an_error(tmp_path):
    log = tmp_path / "battles.json"  # gzipped, though the name does not say so
    log.write_bytes(gzip.compress(shapes(fixture_rows()[:50])["compact"]))
    out = tmp_path / "out.json"
    call_command("rank", str(log), ci="sandwich", min_votes=1, json=out, quiet=True,
                 stdout=io.StringIO(), stderr=io.StringIO())  # fmt: skip
    assert json.loads(out.read_text())["input"]["read"] > 40
    log.write_bytes(log.read_bytes()[:-200])
    with pytest.raises(CommandError, match="Cannot read"):
        call_command("rank", str(log), min_votes=1, stdout=io.StringIO(), stderr=io.StringIO())


def test_names_and_labels_only_rejected_rows_have_stay_off_the_board():
    rows = [
        {"model_a": "x", "model_b": "y", "winner": "model_a", "category": "code"},
        {"model_a": "x", "model_b": "ghost", "winner": "model_a", "anony": False},
        {"model_a": "x", "model_b": "y", "winner": "nobody", "category": "secret"},
    ]
    for shape, data in shapes(rows).items():
        for exact in (False, True):
            arrays, report = read(data, exact=exact)
            assert arrays.model_names == ["x", "y"], (shape, exact)
            assert [key for key, _ in breakdown_masks(arrays, ["category"])] == [
                "all",
                "category:code",
            ]
            assert len(report.rejected) == 2
