"""Turning logged votes into export rows: FastChat's battle format, and the full event as JSONL.

Everything here is pure: it reads votes whose battle, turns and answers are already loaded (see
``selectors.votes_for_export``) and never queries or writes. docs/vote_log.md is the schema.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Protocol

from django.utils import timezone
from django.utils.dateparse import parse_datetime

from arena.core.criteria import CRITERIA
from arena.core.text import estimate_tokens
from arena.records.models import Turn, Vote

FORMATS = ("arena", "jsonl")

# FastChat's names for the outcomes; elo_analysis.py matches on these exact strings.
WINNER = {
    Vote.Choice.A: "model_a",
    Vote.Choice.B: "model_b",
    Vote.Choice.TIE: "tie",
    Vote.Choice.BOTH_BAD: "tie (bothbad)",
}


class Writer(Protocol):
    def write(self, text: str) -> object: ...


def parse_since(value: str) -> datetime:
    """An ISO date or date-time as an aware datetime; a date means its midnight, naive means
    the project's time zone. Raises ValueError with a message fit for the person who typed it."""
    problem = (
        f"expected an ISO date (2025-01-31) or date-time (2025-01-31T14:00:00+00:00), got {value!r}"
    )
    try:
        moment = parse_datetime(value.strip())
    except ValueError:
        # Well-formed but impossible, such as a thirteenth month.
        raise ValueError(problem) from None
    if moment is None:
        raise ValueError(problem)
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment)
    return moment


def _turns(vote: Vote) -> list[Turn]:
    return sorted(vote.battle.turns.all(), key=lambda t: t.index)


def conversation(turns: Iterable[Turn], side: str) -> list[dict[str, str]]:
    """One side's dialogue in OpenAI message form: each turn's prompt, then that side's answer."""
    messages: list[dict[str, str]] = []
    for turn in turns:
        answer = next((a for a in turn.answers.all() if a.side == side), None)
        messages.append({"role": "user", "content": turn.text})
        messages.append({"role": "assistant", "content": answer.text if answer else ""})
    return messages


def _style(side: dict) -> dict[str, int]:
    return side.get("style") or {}


def conv_metadata(vote: Vote, turns: list[Turn]) -> dict:
    """The style-control features FastChat's elo_analysis.py reads.

    FastChat splits headers by level, lists by kind and bold by marker; we count each feature
    as one total, and elo_analysis sums whatever keys a count has, so ``{"total": n}`` fits.
    """
    a, b = vote.side_a, vote.side_b
    return {
        # User prompts were never sent through a tokenizer on their own: estimated.
        "sum_user_tokens": sum(estimate_tokens(t.text) for t in turns),
        "sum_assistant_a_tokens": a.get("output_tokens", 0),
        "sum_assistant_b_tokens": b.get("output_tokens", 0),
        "context_a_tokens": a.get("input_tokens", 0),
        "context_b_tokens": b.get("input_tokens", 0),
        "turns": vote.turns,
        "header_count_a": {"total": _style(a).get("headers", 0)},
        "header_count_b": {"total": _style(b).get("headers", 0)},
        "list_count_a": {"total": _style(a).get("list_items", 0)},
        "list_count_b": {"total": _style(b).get("list_items", 0)},
        "bold_count_a": {"total": _style(a).get("bold", 0)},
        "bold_count_b": {"total": _style(b).get("bold", 0)},
    }


# Our tags that FastChat's category_tag has a category for: its key and its verdict's key.
# The rules decide math (and code: FastChat's is_code) for every tagged vote; the other two
# only an LLM labeller decides, so a vote tagged by the rules alone says nothing of them.
FASTCHAT_CATEGORY = {"math": ("math_v0.1", "math")}
FASTCHAT_LABELLED = {
    "instruction_following": ("if_v0.1", "if"),
    "creative_writing": ("creative_writing_v0.1", "creative_writing"),
}


def newest_tags(vote: Vote) -> tuple[list[str], str] | None:
    """The vote's tags and labeller from its newest labeller version (the latest row within
    it, as ``tagging.selectors.vote_tags`` reads them); None when it has no tags yet."""
    rows = vote.tag_rows.all()  # prefetched by ``selectors.votes_for_export``
    newest = max(rows, key=lambda r: (r.version, r.pk), default=None)
    return None if newest is None else (sorted(newest.tags), newest.labeller)


def category_tag(tags: list[str], labeller: str) -> dict:
    """The tags as FastChat's ``category_tag``, for the categories it has and this labeller
    decided; criteria_v0.1 only when the labeller recorded the criteria themselves."""
    held = set(tags)
    found = {key: {verdict: name in held} for name, (key, verdict) in FASTCHAT_CATEGORY.items()}
    if "+" in labeller:  # "rules+<model>": an LLM labeller answered too
        for name, (key, verdict) in FASTCHAT_LABELLED.items():
            found[key] = {verdict: name in held}
    if held & set(CRITERIA):
        found["criteria_v0.1"] = {c: c in held for c in CRITERIA}
    return found


def arena_tags(vote: Vote) -> dict:
    """An arena row's tag fields: ``tags`` (every tag, sorted; null until tagged) and, once
    tagged, FastChat's ``is_code`` and ``category_tag``."""
    newest = newest_tags(vote)
    if newest is None:
        return {"tags": None}
    tags, labeller = newest
    return {"tags": tags, "is_code": "code" in tags, "category_tag": category_tag(tags, labeller)}


def arena_record(vote: Vote) -> dict:
    """One row of FastChat's clean_battle_data.py output."""
    turns = _turns(vote)
    return {
        "question_id": vote.battle_id.hex,
        "model_a": vote.model_a.public_name,
        "model_b": vote.model_b.public_name,
        "winner": WINNER[vote.choice],
        "judge": f"arena_user_{vote.rater_id}",
        "conversation_a": conversation(turns, "a"),
        "conversation_b": conversation(turns, "b"),
        "turn": vote.turns,
        # Every battle here is blind: names are revealed only after the vote.
        "anony": True,
        "language": vote.prompt_language or "unknown",
        "tstamp": vote.created_at.timestamp(),
        "conv_metadata": conv_metadata(vote, turns),
        "category": vote.prompt_category,
        **arena_tags(vote),
        # Demo votes are made up: marked so no one ranks them as real judgements.
        "simulated": vote.simulated,
    }


def jsonl_record(vote: Vote) -> dict:
    """The whole vote event as logged, plus both conversations."""
    turns = _turns(vote)
    return {
        "id": vote.pk,
        "battle_id": str(vote.battle_id),
        "created_at": vote.created_at.isoformat(),
        "rater_id": vote.rater_id,
        "rater_pool": vote.rater_pool,
        "prompt_id": vote.prompt_id,
        "prompt_hash": vote.prompt_hash,
        "prompt_category": vote.prompt_category,
        "prompt_language": vote.prompt_language,
        "model_a": vote.model_a.public_name,
        "model_b": vote.model_b.public_name,
        "choice": vote.choice,
        "decision_ms": vote.decision_ms,
        "turns": vote.turns,
        "params": vote.params,
        "system_prompt": vote.system_prompt,
        "side_a": vote.side_a,
        "side_b": vote.side_b,
        "sampling_probability": vote.sampling_probability,
        "simulated": vote.simulated,
        # Each image's hash, type and size: never its bytes (arena/images keeps those).
        "images": vote.images,
        "tags": (newest_tags(vote) or (None,))[0],
        "conversation_a": conversation(turns, "a"),
        "conversation_b": conversation(turns, "b"),
    }


def _dumps(record: dict) -> str:
    return json.dumps(record, ensure_ascii=False)


# Writers emit whole lines only, so Django's OutputWrapper (which ends every write with a
# newline unless it has one) produces exactly the same bytes as a plain file.


def write_arena(votes: Iterable[Vote], out: Writer) -> int:
    """A JSON array, one battle per line, without holding the whole export in memory."""
    out.write("[\n")
    count = 0
    pending: str | None = None
    for vote in votes:
        if pending is not None:
            out.write(pending + ",\n")
        pending = _dumps(arena_record(vote))
        count += 1
    if pending is not None:
        out.write(pending + "\n")
    out.write("]\n")
    return count


def write_jsonl(votes: Iterable[Vote], out: Writer) -> int:
    count = 0
    for vote in votes:
        out.write(_dumps(jsonl_record(vote)) + "\n")
        count += 1
    return count


WRITERS = {"arena": write_arena, "jsonl": write_jsonl}
