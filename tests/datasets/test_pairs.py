from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from arena.battles.simulation import votes_simulate
from arena.integrity.models import VoteFlag
from arena.integrity.services import vote_flag


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def export_pairs(*args: str) -> str:
    out = io.StringIO()
    call_command("export_pairs", *args, stdout=out)
    return out.getvalue()


@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("choice", ["a", "b"])
def test_chosen_and_rejected_are_the_sides_the_vote_picked(
    make_vote, alice, models_named, tmp_path, choice, swap
):
    vote = make_vote(alice, choice, swap=swap, answers_a=("Side A says so.",),
                     answers_b=("Side B says otherwise.",))  # fmt: skip
    export_pairs("--output", str(tmp_path / "p.jsonl"))

    [row] = read(tmp_path / "p.jsonl")
    won, lost = ("A says so", "B says otherwise") if choice == "a" else ("B says", "A says")
    assert row["prompt"] == [{"role": "user", "content": "Explain recursion."}]
    assert [m["role"] for m in row["chosen"]] == ["assistant"]
    assert won in row["chosen"][0]["content"] and lost in row["rejected"][0]["content"]
    picked = vote.side_a if choice == "a" else vote.side_b
    other = vote.side_b if choice == "a" else vote.side_a
    assert (row["chosen_model"], row["rejected_model"]) == (picked["model"], other["model"])
    assert row["chosen_side"] == choice and row["battle_id"] == str(vote.battle_id)


def test_every_turn_is_in_each_side_with_the_follow_ups_between(make_vote, alice, tmp_path):
    make_vote(alice, "b", answers_a=("A1", "A2"), answers_b=("B1", "B2"), follow_ups=("More?",),
              system_prompt="Be brief.")  # fmt: skip
    export_pairs("--output", str(tmp_path / "p.jsonl"))

    [row] = read(tmp_path / "p.jsonl")
    assert row["prompt"] == [{"role": "system", "content": "Be brief."},
                             {"role": "user", "content": "Explain recursion."}]  # fmt: skip
    assert [m["content"] for m in row["chosen"]] == ["B1", "More?", "B2"]
    assert [m["content"] for m in row["rejected"]] == ["A1", "More?", "A2"]
    assert row["turns"] == 2


def test_both_bad_is_left_out_and_ties_go_to_their_own_file(make_vote, alice, tmp_path):
    for i, choice in enumerate(["a", "tie", "both_bad", "b"]):
        make_vote(alice, choice, prompt=f"Question {i}?")
    out = export_pairs("--output", str(tmp_path / "p.jsonl"), "--ties", str(tmp_path / "t.jsonl"))

    assert [r["choice"] for r in read(tmp_path / "p.jsonl")] == ["a", "b"]
    [tie] = read(tmp_path / "t.jsonl")
    assert tie["choice"] == "tie" and "chosen" not in tie and tie["completion_a"]
    assert "both-bad dropped: 1" in out


def test_both_bad_kept_on_request_goes_with_the_ties(make_vote, alice, tmp_path):
    make_vote(alice, "both_bad")
    with pytest.raises(CommandError, match="ties file"):
        export_pairs("--output", str(tmp_path / "p.jsonl"), "--keep-both-bad")
    export_pairs("--output", str(tmp_path / "p.jsonl"), "--ties", str(tmp_path / "t.jsonl"),
                 "--keep-both-bad")  # fmt: skip

    assert read(tmp_path / "p.jsonl") == []
    assert [r["choice"] for r in read(tmp_path / "t.jsonl")] == ["both_bad"]


def test_no_prompt_is_in_both_splits(make_vote, alice, tmp_path):
    for p in range(30):
        for choice in ("a", "b", "a"):
            make_vote(alice, choice, prompt=f"Prompt number {p}?")
    export_pairs("--output", str(tmp_path / "p.jsonl"), "--test-share", "0.3", "--seed", "4")

    train, test = read(tmp_path / "p.train.jsonl"), read(tmp_path / "p.test.jsonl")
    hashes = {s: {r["prompt_hash"] for r in rows} for s, rows in (("train", train), ("test", test))}
    assert hashes["train"] and hashes["test"]
    assert hashes["train"].isdisjoint(hashes["test"])
    assert len(train) + len(test) == 90
    assert {r["split"] for r in train} == {"train"} and {r["split"] for r in test} == {"test"}


def test_the_cap_keeps_at_most_n_votes_per_prompt(make_vote, alice, tmp_path):
    for _ in range(5):
        make_vote(alice, "a", prompt="The same question?")
    make_vote(alice, "b", prompt="Another question?")
    out = export_pairs("--output", str(tmp_path / "p.jsonl"), "--per-prompt-cap", "2")

    rows = read(tmp_path / "p.jsonl")
    assert sorted(r["choice"] for r in rows) == ["a", "a", "b"]
    assert "over the per-prompt cap: 3" in out


def test_simulated_votes_are_marked_and_left_out_unless_asked_for(
    make_vote, alice, models_named, tmp_path
):
    human = make_vote(alice, "a")
    votes_simulate(n=40, strengths=dict.fromkeys(models_named, 0.0), once=False)

    export_pairs("--output", str(tmp_path / "h.jsonl"))
    export_pairs("--output", str(tmp_path / "all.jsonl"), "--include-simulated", "--ties",
                 str(tmp_path / "t.jsonl"))  # fmt: skip

    assert [(r["battle_id"], r["simulated"]) for r in read(tmp_path / "h.jsonl")] == [
        (str(human.battle_id), False)
    ]
    rows = read(tmp_path / "all.jsonl") + read(tmp_path / "t.jsonl")
    marked = {r["battle_id"] for r in rows if r["simulated"]}
    assert len(marked) == len(rows) - 1 >= 30 and str(human.battle_id) not in marked


def test_a_flagged_vote_is_left_out_and_counted_by_reason(make_vote, alice, staff, tmp_path):
    kept = make_vote(alice, "a", prompt="Kept?")
    flagged = make_vote(alice, "b", prompt="Flagged?")
    vote_flag(vote=flagged, by=staff, reason=VoteFlag.Reason.ADMIN)
    out = export_pairs("--output", str(tmp_path / "p.jsonl"))

    assert [r["battle_id"] for r in read(tmp_path / "p.jsonl")] == [str(kept.battle_id)]
    assert "'admin': 1" in out


def test_a_pair_carries_its_metadata(make_vote, alice, tmp_path):
    vote = make_vote(alice, "a", answers_a=("**Bold** and long answer here",))
    export_pairs("--output", str(tmp_path / "p.jsonl"))

    [row] = read(tmp_path / "p.jsonl")
    assert row["language"] == "en" and row["category_tags"] == ["general"]
    assert row["decision_ms"] == 9000 and row["simulated"] is False
    assert row["chosen_meta"]["output_tokens"] == 5
    assert row["chosen_meta"]["style"]["bold"] == 1
    assert row["model_a"] == vote.side_a["model"] and "sampling_probability" in row
