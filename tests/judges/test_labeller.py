"""The labeller's reply, read strictly: hard at six of the seven criteria, anything but the
object asked for is a reply to ask again for."""

from __future__ import annotations

import json

import pytest

from arena.judges.calls import ReplyError
from arena.judges.labeller import CRITERIA, SCHEMA, parse


def reply(met: int, **flags: object) -> str:
    criteria = {c: i < met for i, c in enumerate(CRITERIA)}
    return json.dumps({"creative_writing": False, "instruction_following": True,
                       "criteria": criteria, **flags})  # fmt: skip


def test_a_prompt_is_hard_when_it_meets_six_of_the_seven_criteria():
    assert parse(reply(6)) == {"instruction_following", "hard"}
    assert parse(reply(7, creative_writing=True)) == {
        "creative_writing",
        "instruction_following",
        "hard",
    }
    assert parse(reply(5)) == {"instruction_following"}


def test_a_fenced_reply_is_read_as_a_bare_one():
    assert parse(f"```json\n{reply(0)}\n```") == {"instruction_following"}


@pytest.mark.parametrize(
    "bad",
    [
        "It is a creative prompt.",
        "[true, false]",
        json.dumps({"creative_writing": True, "instruction_following": False}),
        reply(3, creative_writing="yes"),
        reply(3, criteria={c: 1 for c in CRITERIA}),
    ],
)
def test_anything_but_the_object_asked_for_is_refused(bad):
    with pytest.raises(ReplyError):
        parse(bad)


def test_the_schema_asks_for_every_field_and_no_other():
    assert SCHEMA["required"] == ["creative_writing", "instruction_following", "criteria"]
    assert SCHEMA["properties"]["criteria"]["required"] == list(CRITERIA)
    assert SCHEMA["additionalProperties"] is False
