"""Votes as preference pairs in TRL's conversational preference format (pure: no queries).

A decisive vote becomes ``{"prompt": [...], "chosen": [...], "rejected": [...], ...metadata}``:
``prompt`` is the system prompt (when there was one) and the first user turn; ``chosen`` and
``rejected`` are each side's continuation, every turn: its answer, then the rater's follow-up,
then its next answer. The follow-ups are the same text on both sides, as the rater sent each to
both. Hugging Face TRL's DPOTrainer, RewardTrainer, ORPOTrainer and CPOTrainer read this as it
is (docs/datasets.md). A tie or both-bad vote has no winner: ``completion_a``/``completion_b``
instead, for a separate file.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from arena.battles.exports import conversation
from arena.records.models import Turn, Vote

SCHEMA = "arena.preference_pair/1"
SPLITS = ("train", "test")


def _turns(vote: Vote) -> list[Turn]:
    return sorted(vote.battle.turns.all(), key=lambda t: t.index)


def _prompt_and_rest(vote: Vote, turns: list[Turn], side: str) -> tuple[list, list]:
    messages = conversation(turns, side)
    system = [{"role": "system", "content": vote.system_prompt}] if vote.system_prompt else []
    return system + messages[:1], messages[1:]


def _side_meta(side: dict) -> dict:
    style = side.get("style") or {}
    return {
        "model": side.get("model", ""),
        "output_tokens": side.get("output_tokens"),
        "style": {k: style.get(k) for k in ("chars", "headers", "list_items", "bold")},
    }


def split_of(prompt_hash: str, *, test_share: float, seed: int) -> str:
    """ "test" for a stable ``test_share`` of prompt hashes, else "train": every vote on one
    prompt lands in the same split, whatever else changes in the export."""
    digest = hashlib.sha256(f"{seed}:{prompt_hash}".encode()).digest()
    return "test" if int.from_bytes(digest[:8], "big") / 2**64 < test_share else "train"


def pair_row(vote: Vote, *, tags: Iterable[str] = ()) -> dict:
    """One vote as a row: a preference pair when it has a winner, else a tie row."""
    turns = _turns(vote)
    prompt, rest_a = _prompt_and_rest(vote, turns, "a")
    _, rest_b = _prompt_and_rest(vote, turns, "b")
    meta = {
        "battle_id": str(vote.battle_id),
        "choice": vote.choice,
        "model_a": vote.side_a.get("model", ""),
        "model_b": vote.side_b.get("model", ""),
        "turns": vote.turns,
        "prompt_hash": vote.prompt_hash,
        "category_tags": sorted(tags),
        "language": vote.prompt_language or None,
        "decision_ms": vote.decision_ms,
        "simulated": vote.simulated,
        "sampling_probability": vote.sampling_probability,
        "voted_at": vote.created_at.isoformat(),
        "images": vote.images,  # hashes, types and sizes; never the bytes
    }
    if vote.choice in (Vote.Choice.A, Vote.Choice.B):
        won, lost = ("a", "b") if vote.choice == Vote.Choice.A else ("b", "a")
        rest = {"a": rest_a, "b": rest_b}
        sides = {"a": vote.side_a, "b": vote.side_b}
        return {
            "prompt": prompt,
            "chosen": rest[won],
            "rejected": rest[lost],
            **meta,
            "chosen_side": won,
            "chosen_model": sides[won].get("model", ""),
            "rejected_model": sides[lost].get("model", ""),
            "chosen_meta": _side_meta(sides[won]),
            "rejected_meta": _side_meta(sides[lost]),
            "schema": SCHEMA,
        }
    return {
        "prompt": prompt,
        "completion_a": rest_a,
        "completion_b": rest_b,
        **meta,
        "a_meta": _side_meta(vote.side_a),
        "b_meta": _side_meta(vote.side_b),
        "schema": SCHEMA,
    }


def is_pair(row: dict) -> bool:
    return "chosen" in row


def lengths(row: dict) -> tuple[int, int]:
    """(chosen, rejected) output tokens over every turn: what the length audit compares."""
    return (
        int(row["chosen_meta"]["output_tokens"] or 0),
        int(row["rejected_meta"]["output_tokens"] or 0),
    )


def cap_per_prompt(rows: list[dict], *, cap: int, seed: int) -> list[dict]:
    """At most ``cap`` rows per prompt hash, the kept ones drawn by a hash of (seed, battle),
    so a prompt asked a thousand times cannot outweigh the rest; order kept."""

    def draw(row: dict) -> bytes:
        return hashlib.sha256(f"{seed}:{row['battle_id']}".encode()).digest()

    by_prompt: dict[str, list[dict]] = {}
    for row in rows:
        by_prompt.setdefault(row["prompt_hash"], []).append(row)
    kept = {id(row) for group in by_prompt.values() for row in sorted(group, key=draw)[:cap]}
    return [row for row in rows if id(row) in kept]
