"""`rank` reads a battle log's tags (ours: ``tags``; FastChat's: ``category_tag`` and
``is_code``) into category boards, the streaming reader as the exact one, whatever the shape."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from ranking import log_reader
from ranking.battle_log import ReadReport
from ranking.compute import breakdown_masks


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
        io.BytesIO(data), fmt=fmt, report=report, exact=exact, **flags
    )
    return arrays, report


HARD = {"criteria_v0.1": {f"c{i}": i < 6 for i in range(7)}}


def row(winner: str, **fields) -> dict:
    return {"model_a": "x", "model_b": "y", "winner": winner, **fields}


ROWS = [
    row("model_a", category_tag={**HARD, "math_v0.1": {"math": True}}, is_code=False),
    row("model_b", category_tag={"if_v0.1": {"if": True, "score": 5}}, is_code=True),
    row("tie", tags=["creative_writing", "hard"], category="poems"),
    row("model_a", category_tag={"math_v0.1": {"math": False}}),
    row("model_a", is_code="yes"),  # not a boolean: this block goes to the exact reader
    row("model_b", category_tag="math"),  # not an object: says nothing
    {"model_a": "x", "model_b": "y", "winner": "nobody", "tags": ["secret"]},  # rejected
]


def boards(arrays) -> dict[str, list[bool]]:
    return {
        key: mask.tolist()
        for key, mask in breakdown_masks(arrays, ["category"])
        if mask is not None
    }


WANT = {
    "category:code": [False, True, False, False, False, False],
    "category:creative_writing": [False, False, True, False, False, False],
    "category:hard": [True, False, True, False, False, False],
    "category:instruction_following": [False, True, False, False, False, False],
    "category:math": [True, False, False, False, False, False],
    "category:poems": [False, False, True, False, False, False],
}  # and no board for the rejected row's tag


@pytest.mark.parametrize("shape", ["indented", "compact", "jsonl"])
def test_a_logs_tags_make_category_boards_read_fast_or_exactly(shape, monkeypatch):
    data = shapes(ROWS)[shape]
    for block in (64, 1 << 20):
        monkeypatch.setattr(log_reader, "BLOCK", block)
        for exact in (False, True):
            arrays, report = read(data, exact=exact, tags=True)
            assert report.read == 6 and len(report.rejected) == 1
            assert boards(arrays) == WANT, (block, exact)


def test_well_typed_tags_are_read_without_the_exact_reader(monkeypatch):
    data = shapes(ROWS[:4] * 50)["jsonl"]
    exact, _ = read(data, exact=True, tags=True)

    def unwanted(*args, **kwargs):
        raise AssertionError("a well-typed block went to the exact reader")

    monkeypatch.setattr(log_reader._Reader, "_exact", unwanted)
    fast, _ = read(data, tags=True)
    assert boards(fast) == boards(exact) and sum(boards(fast)["category:hard"]) == 100


def test_without_category_boards_the_tags_are_not_read():
    arrays, _ = read(shapes(ROWS)["compact"])
    assert arrays.tags is None
    assert set(boards(arrays)) == {"category:poems"}


def test_our_jsonl_exports_tags_are_read_too():
    lines = [
        {"model_a": "x", "model_b": "y", "choice": "a", "tags": ["code", "multi_turn"]},
        {"model_a": "y", "model_b": "x", "choice": "b", "tags": None, "prompt_category": "qa"},
    ]
    arrays, _ = read(b"\n".join(json.dumps(r).encode() for r in lines), fmt="jsonl", tags=True)
    assert boards(arrays) == {
        "category:code": [True, False],
        "category:multi_turn": [True, False],
        "category:qa": [False, True],
    }


def test_rank_by_category_ranks_a_board_per_tag(tmp_path):
    log = tmp_path / "battles.jsonl"
    log.write_bytes(shapes(ROWS * 20)["jsonl"])
    out = tmp_path / "rank.json"
    call_command("rank", str(log), by=["category"], ci="sandwich", min_votes=1, json=out,
                 quiet=True, stdout=io.StringIO(), stderr=io.StringIO())  # fmt: skip
    got = {b["breakdown"]: b["votes"] for b in json.loads(out.read_text())["boards"]}
    assert got == {"all": 120, **{key: 20 * sum(mask) for key, mask in WANT.items()}}
