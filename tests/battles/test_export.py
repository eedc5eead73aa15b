from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from datetime import timezone as dt_timezone

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from accounts.models import User
from arena.battles.exports import parse_since
from arena.battles.prompts import prompt_create
from arena.battles.services import battle_follow_up, battle_start, turn_mark_shown, vote_cast
from arena.records.models import Answer, Battle, Vote
from tests.helpers import wait_for_answers, wait_until


def shown(battle: Battle, index: int) -> None:
    wait_for_answers(battle.pk)
    turn_mark_shown(turn_id=battle.turns.get(index=index).pk)


def voted_battle(
    rater: User, choice: str, *, text: str = "Explain photosynthesis.", follow_ups: tuple = ()
) -> Vote:
    battle = battle_start(rater=rater, text=text)
    shown(battle, 0)
    for i, follow_up in enumerate(follow_ups, start=1):
        battle_follow_up(battle_id=battle.id, rater=rater, text=follow_up)
        shown(battle, i)
    vote = vote_cast(battle_id=battle.id, rater=rater, choice=choice)
    # The vote's tags come from a job after it commits (never waited for by the rater); the
    # export carries them, so each export here reads the vote as tagged.
    wait_until(vote.tag_rows.exists)
    return vote


def export(*args: str) -> str:
    out = io.StringIO()
    call_command("export_votes", *args, stdout=out)
    return out.getvalue()


def test_arena_format_maps_every_choice_to_fastchat_winner(generation, alice, two_models):
    choices = {"a": "model_a", "b": "model_b", "tie": "tie", "both_bad": "tie (bothbad)"}
    votes = [voted_battle(alice, c, text=f"Question number {c}?") for c in choices]

    rows = json.loads(export())

    assert [row["question_id"] for row in rows] == [v.battle_id.hex for v in votes]
    assert [row["winner"] for row in rows] == list(choices.values())


def test_arena_row_carries_names_conversations_and_style_metadata(generation, alice, two_models):
    prompt, _ = prompt_create(
        text="Compare two sorting algorithms.", category="coding", language="en"
    )
    battle = battle_start(rater=alice, text=prompt.text, prompt_id=prompt.pk)
    shown(battle, 0)
    battle_follow_up(battle_id=battle.id, rater=alice, text="Which is stable?")
    shown(battle, 1)
    vote = vote_cast(battle_id=battle.id, rater=alice, choice="a")

    (row,) = json.loads(export("--format", "arena"))

    battle.refresh_from_db()
    assert row["model_a"] == battle.model_a.public_name
    assert row["model_b"] == battle.model_b.public_name
    assert {row["model_a"], row["model_b"]} == {m.public_name for m in two_models}
    assert row["judge"] == f"arena_user_{alice.pk}"
    assert row["anony"] is True
    assert row["turn"] == 2
    assert row["language"] == "en"
    assert row["category"] == "coding"
    assert row["tstamp"] == pytest.approx(vote.created_at.timestamp())
    for side, key in (("a", "conversation_a"), ("b", "conversation_b")):
        answers = Answer.objects.filter(turn__battle=battle, side=side).order_by("turn__index")
        assert row[key] == [
            {"role": "user", "content": "Compare two sorting algorithms."},
            {"role": "assistant", "content": answers[0].text},
            {"role": "user", "content": "Which is stable?"},
            {"role": "assistant", "content": answers[1].text},
        ]
        assert all(answer.text for answer in answers)
    meta = row["conv_metadata"]
    assert meta["turns"] == 2
    assert meta["sum_user_tokens"] > 0
    for side, record in (("a", vote.side_a), ("b", vote.side_b)):
        assert meta[f"sum_assistant_{side}_tokens"] == record["output_tokens"] > 0
        assert meta[f"context_{side}_tokens"] == record["input_tokens"]
        assert meta[f"header_count_{side}"] == {"total": record["style"]["headers"]}
        assert meta[f"list_count_{side}"] == {"total": record["style"]["list_items"]}
        assert meta[f"bold_count_{side}"] == {"total": record["style"]["bold"]}


def test_a_typed_prompt_exports_its_detected_language_and_no_category(
    generation, alice, two_models
):
    voted_battle(alice, "tie", text="A prompt typed by the rater, in plain English.")

    (row,) = json.loads(export())

    assert row["language"] == "en"  # detected when the prompt was written (issue 26)
    assert row["category"] == ""


def test_jsonl_round_trips_every_vote_field(generation, alice, two_models):
    vote = voted_battle(alice, "b", follow_ups=("And at night?",))

    lines = export("--format", "jsonl").splitlines()

    assert len(lines) == 1
    record = json.loads(lines[0])
    vote.refresh_from_db()
    assert record["id"] == vote.pk
    assert record["battle_id"] == str(vote.battle_id)
    assert record["created_at"] == vote.created_at.isoformat()
    assert record["rater_id"] == alice.pk
    assert record["rater_pool"] == alice.rater_pool
    assert record["prompt_id"] == vote.prompt_id
    assert record["prompt_hash"] == vote.prompt_hash
    assert record["model_a"] == vote.model_a.public_name
    assert record["model_b"] == vote.model_b.public_name
    assert record["choice"] == "b"
    assert record["decision_ms"] == vote.decision_ms
    assert record["turns"] == 2
    assert record["params"] == vote.params
    assert record["system_prompt"] == vote.system_prompt
    assert record["side_a"] == vote.side_a
    assert record["side_b"] == vote.side_b
    assert [m["content"] for m in record["conversation_a"][::2]] == [
        "Explain photosynthesis.",
        "And at night?",
    ]


def test_output_file_holds_the_same_export_as_stdout(generation, alice, two_models, tmp_path):
    voted_battle(alice, "a")
    target = tmp_path / "battles.json"

    message = export("--output", str(target))

    assert message.strip() == f"1 vote(s) written to {target} (arena)."
    assert target.read_text(encoding="utf-8") == export()


def test_since_keeps_only_votes_cast_at_or_after_it(generation, alice, two_models):
    earlier = voted_battle(alice, "a", text="The earlier battle.")
    cutoff = timezone.now()
    later = voted_battle(alice, "b", text="The later battle.")

    rows = json.loads(export("--since", cutoff.isoformat()))
    that_day = json.loads(export("--since", earlier.created_at.date().isoformat()))
    tomorrow = (later.created_at + timedelta(days=1)).date().isoformat()

    assert [row["question_id"] for row in rows] == [later.battle_id.hex]
    assert len(that_day) == 2
    assert json.loads(export("--since", tomorrow)) == []
    assert export("--format", "jsonl", "--since", tomorrow) == ""


@pytest.mark.parametrize("value", ["yesterday", "2025-13-01", "31/01/2025"])
def test_a_bad_since_is_a_clear_command_error(db, value):
    with pytest.raises(CommandError, match="--since: expected an ISO date") as error:
        export("--since", value)
    assert repr(value) in str(error.value)


def test_an_empty_log_exports_an_empty_array(db):
    assert json.loads(export()) == []


def test_since_reads_dates_and_naive_times_in_the_project_time_zone():
    assert parse_since("2025-01-31") == datetime(2025, 1, 31, tzinfo=UTC)
    assert parse_since("2025-01-31T14:30") == datetime(2025, 1, 31, 14, 30, tzinfo=UTC)
    assert parse_since("2025-01-31T14:30:00+02:00") == datetime(
        2025, 1, 31, 14, 30, tzinfo=dt_timezone(timedelta(hours=2))
    )
    assert parse_since("2025-01-31T14:30:00Z") == datetime(2025, 1, 31, 14, 30, tzinfo=UTC)
