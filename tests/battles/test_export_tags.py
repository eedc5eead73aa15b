"""The battle export carries each vote's tags: our list, and FastChat's category_tag and
is_code where FastChat has the category; `rank` reads them back into the same boards."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from arena.records.models import Vote
from arena.tagging.models import VoteTags
from tests.votes import logged_vote


@pytest.fixture
def make_vote(alice, two_models):
    """A voted battle written straight to the tables, as the vote log has it, and no tags: the
    job that tags a vote cast through the services is not part of these tests."""

    def make(text: str, choice: str = "a") -> Vote:
        return logged_vote(alice, two_models, [text], choice=choice, decision_ms=5000)

    return make


def export(*args: str) -> str:
    out = io.StringIO()
    call_command("export_votes", *args, stdout=out)
    return out.getvalue()


def tag(vote, tags: list[str], *, labeller: str = "rules", version: int = 1) -> None:
    VoteTags.objects.create(
        vote=vote, prompt_hash=vote.prompt_hash, tags=tags, labeller=labeller, version=version
    )


def test_the_arena_export_carries_the_newest_tags_in_fastchat_shape(make_vote):
    labelled = make_vote("Write a poem about sorting in Python.")
    rules_only = make_vote("What is 12 * 7?", "b")
    untagged = make_vote("Hello there.", "tie")
    tag(labelled, ["math"])
    tag(labelled, ["hard", "creative_writing", "code"], labeller="rules+judge", version=2)
    tag(rules_only, ["math"])

    rows = {row["question_id"]: row for row in json.loads(export("--format", "arena"))}

    row = rows[labelled.battle_id.hex]
    assert row["tags"] == ["code", "creative_writing", "hard"]  # the newest version, sorted
    assert row["is_code"] is True
    assert row["category_tag"] == {
        "math_v0.1": {"math": False},
        "if_v0.1": {"if": False},
        "creative_writing_v0.1": {"creative_writing": True},
    }  # no criteria_v0.1: the labeller recorded "hard", not the seven criteria
    row = rows[rules_only.battle_id.hex]
    assert row["tags"] == ["math"] and row["is_code"] is False
    assert row["category_tag"] == {"math_v0.1": {"math": True}}  # the rules decide no more
    row = rows[untagged.battle_id.hex]
    assert row["tags"] is None and "category_tag" not in row and "is_code" not in row
    assert row["language"] == "unknown"  # logged without one

    lines = [json.loads(line) for line in export("--format", "jsonl").splitlines()]
    assert [line["tags"] for line in lines] == [
        ["code", "creative_writing", "hard"],
        ["math"],
        None,
    ]


def test_recorded_criteria_are_exported_as_fastchats_criteria(make_vote):
    vote = make_vote("Design a cache for a trading system.")
    criteria = ["complexity", "domain_knowledge", "problem_solving", "real_world"]
    tag(vote, ["hard", *criteria], labeller="rules+judge")
    (row,) = json.loads(export())
    held = row["category_tag"]["criteria_v0.1"]
    assert len(held) == 7 and {k for k, v in held.items() if v} == set(criteria)


def test_rank_reads_the_exported_tags_back_into_the_same_boards(make_vote, tmp_path):
    votes = [make_vote(f"Prove claim {c}.", c) for c in ("a", "b", "tie")]
    tag(votes[0], ["math", "hard"], labeller="rules+judge")
    tag(votes[1], ["math"])
    log = tmp_path / "battles.json"
    log.write_text(export())
    out = tmp_path / "rank.json"
    call_command("rank", str(log), by=["category"], ci="sandwich", min_votes=1, json=out,
                 quiet=True, stdout=io.StringIO(), stderr=io.StringIO())  # fmt: skip
    boards = {b["breakdown"]: b["votes"] for b in json.loads(out.read_text())["boards"]}
    assert boards == {"all": 3, "category:math": 2, "category:hard": 1}
