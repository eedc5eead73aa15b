"""The open dataset: counted battles and votes with no rater identity and no personal data,
and its datasheet. ``manage.py export_dataset`` is a thin edge over ``dataset_export``.

Raters appear only as a keyed hash (HMAC-SHA-256 of the user id under a salt), so one rater's
votes can be grouped without naming them. The salt is ``settings.DATASET_SALT`` when set (the
same pseudonyms across releases) or drawn for this run; it is never written anywhere. Every
prompt, system prompt and answer passes ``anonymise.scrub``. docs/datasets.md is the schema.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from arena.core.errors import ServiceError
from arena.datasets import selectors
from arena.datasets.anonymise import PLACEHOLDERS, scrub
from arena.images.selectors import image_bytes
from arena.images.services import storage_name
from arena.records.models import Turn, Vote

SCHEMA = "arena.open_dataset/1"


def rater_pseudonym(rater_id: int, *, salt: str) -> str:
    return hmac.new(salt.encode(), str(rater_id).encode(), hashlib.sha256).hexdigest()[:20]


def _side(side: dict) -> dict:
    # What the log keeps of a side, less nothing personal: tokens, finish, timings, style.
    keep = ("model", "output_tokens", "input_tokens", "finish_reason", "ttft_ms", "total_ms")
    return {**{k: side.get(k) for k in keep}, "style": side.get("style") or {}}


@dataclass
class Removed:
    prompts: Counter[str] = field(default_factory=Counter)
    answers: Counter[str] = field(default_factory=Counter)


def _conversation(turns: list[Turn], side: str, removed: Removed) -> list[dict[str, str]]:
    messages = []
    for turn in turns:
        answer = next((a for a in turn.answers.all() if a.side == side), None)
        # Follow-ups are the same text on both sides: count the prompt's data once (side a).
        prompt_counts = removed.prompts if side == "a" else Counter()
        messages.append({"role": "user", "content": scrub(turn.text, prompt_counts)})
        text = scrub(answer.text, removed.answers) if answer else ""
        messages.append({"role": "assistant", "content": text})
    return messages


def dataset_row(vote: Vote, *, salt: str, tags: frozenset[str], removed: Removed) -> dict:
    turns = sorted(vote.battle.turns.all(), key=lambda t: t.index)
    return {
        "schema": SCHEMA,
        "battle_id": str(vote.battle_id),
        "voted_at": vote.created_at.isoformat(),
        "rater": rater_pseudonym(vote.rater_id, salt=salt),
        "rater_pool": vote.rater_pool,
        "model_a": vote.side_a.get("model", ""),
        "model_b": vote.side_b.get("model", ""),
        "choice": vote.choice,
        "turns": vote.turns,
        "language": vote.prompt_language or None,
        "category_tags": sorted(tags),
        "system_prompt": scrub(vote.system_prompt, removed.prompts),
        "conversation_a": _conversation(turns, "a", removed),
        "conversation_b": _conversation(turns, "b", removed),
        "params": vote.params,
        "decision_ms": vote.decision_ms,
        "simulated": vote.simulated,
        "sampling_probability": vote.sampling_probability,
        "side_a": _side(vote.side_a),
        "side_b": _side(vote.side_b),
        # Hashes, types and sizes only: the images themselves are the raters' to share.
        "images": vote.images,
    }


@dataclass
class DatasetResult:
    rows: int = 0
    raters: int = 0
    first: datetime | None = None
    last: datetime | None = None
    choices: Counter[str] = field(default_factory=Counter)
    left_out: dict[str, int] = field(default_factory=dict)
    removed: Removed = field(default_factory=Removed)
    salt_source: str = ""
    filters: dict[str, object] = field(default_factory=dict)
    images: int = 0  # image files written beside the rows (0: hashes only)


def dataset_export(
    *,
    output: Path,
    datasheet: Path,
    include_simulated: bool = False,
    since: datetime | None = None,
    until: datetime | None = None,
    images_dir: Path | None = None,
) -> DatasetResult:
    """Write the release (JSONL, one counted vote a line) and its datasheet (Markdown); with
    ``images_dir``, the rows' image files there too (by hash), where the raters' terms allow
    it (DATASET_IMAGES); otherwise the rows name the images by hash only."""
    if images_dir is not None and not settings.DATASET_IMAGES:
        raise ServiceError(
            "images_not_public",
            "The raters' images are not published unless their terms say so: set "
            "DATASET_IMAGES=true once they do, or leave out --include-images (rows keep the "
            "images' hashes).",
        )
    salt = settings.DATASET_SALT
    result = DatasetResult(salt_source="DATASET_SALT" if salt else "drawn for this run")
    salt = salt or secrets.token_hex(32)
    result.filters = {"include_simulated": include_simulated, "since": since, "until": until}
    result.left_out = selectors.votes_left_out(
        include_simulated=include_simulated, since=since, until=until
    )
    votes = selectors.votes_to_release(include_simulated=include_simulated, since=since,
                                       until=until)  # fmt: skip
    raters = set()
    try:
        with output.open("w", encoding="utf-8", newline="\n") as fh:
            batch: list[Vote] = []
            for vote in votes.iterator(chunk_size=500):
                batch.append(vote)
                if len(batch) == 500:
                    _write_batch(fh, batch, salt, result, raters)
                    batch = []
            _write_batch(fh, batch, salt, result, raters)
        result.raters = len(raters)
        if images_dir is not None:
            result.images = _images_write(images_dir, votes)
        datasheet.write_text(datasheet_text(result), encoding="utf-8")
    except OSError as exc:
        raise ServiceError("write_failed", f"Cannot write: {exc.strerror or exc}") from None
    return result


def _images_write(folder: Path, votes) -> int:
    """Each released vote's images, once each, as ``<sha256>.<ext>`` in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    written = set()
    for records in votes.exclude(images=[]).values_list("images", flat=True).iterator(500):
        for record in records:
            if record["sha256"] in written:
                continue
            name = storage_name(sha256=record["sha256"], content_type=record["type"])
            (folder / name).write_bytes(
                image_bytes(sha256=record["sha256"], content_type=record["type"])
            )
            written.add(record["sha256"])
    return len(written)


def _write_batch(fh, batch: list[Vote], salt: str, result: DatasetResult, raters: set) -> None:
    tags = selectors.tags_of(batch)
    for vote in batch:
        row = dataset_row(vote, salt=salt, tags=tags[vote.pk], removed=result.removed)
        fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        raters.add(row["rater"])
        result.rows += 1
        result.choices[vote.choice] += 1
        result.first = min(result.first or vote.created_at, vote.created_at)
        result.last = max(result.last or vote.created_at, vote.created_at)


def _when(moment: object) -> str:
    return moment.isoformat() if isinstance(moment, datetime) else "none"


def datasheet_text(result: DatasetResult) -> str:
    """The datasheet: what is in the file, what was kept out, and what was replaced."""
    removed = result.removed
    lines = [
        "# Arena open dataset: datasheet",
        "",
        f"Written {timezone.now().isoformat()}; schema `{SCHEMA}` (docs/datasets.md).",
        "",
        "## Contents",
        f"- Votes: {result.rows} ({', '.join(f'{k} {v}' for k, v in sorted(result.choices.items())) or 'none'})",  # noqa: E501
        f"- Raters (pseudonyms): {result.raters}",
        f"- Window: {_when(result.first)} to {_when(result.last)}",
        "",
        "## Filters",
        "- Only votes that count (integrity's `counted_votes`): no open flag.",
        f"- Simulated (demo) votes: {'included, each marked' if result.filters['include_simulated'] else 'left out'}",  # noqa: E501
        f"- Since: {_when(result.filters['since'])}; until: {_when(result.filters['until'])}",
        f"- Images: {f'{result.images} file(s) beside the rows' if result.images else 'hashes, types and sizes only'}",  # noqa: E501
        "",
        "## Left out (per reason, first that applies)",
        *([f"- {k}: {v}" for k, v in sorted(result.left_out.items())] or ["- none"]),
        "",
        "## Removed",
        "- Rater identity: user ids and emails are never written; each rater is a keyed "
        f"hash (HMAC-SHA-256, salt {result.salt_source}; the salt is not written).",
        "- Personal data replaced by typed placeholders (prompts / answers):",
    ]
    for kind, placeholder in PLACEHOLDERS.items():
        lines.append(
            f"  - {kind} `{placeholder}`: {removed.prompts[kind]} / {removed.answers[kind]}"
        )
    lines.append("")
    return "\n".join(lines)
