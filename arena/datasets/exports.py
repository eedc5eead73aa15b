"""The preference-pair export and its length audit: counted votes -> JSONL files.

Reads through the room's selectors, shapes rows with ``pairs`` and measures with ``audit``;
writes files only, never the database. ``manage.py export_pairs`` is a thin edge over
``pairs_export``; the staff page reads ``audit_report``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from arena.core.errors import ServiceError
from arena.datasets import selectors
from arena.datasets.audit import LengthAudit, RankGap, balance_length, length_audit, rank_gaps
from arena.datasets.pairs import cap_per_prompt, is_pair, lengths, pair_row, split_of

RANK_GAP_DEFAULT = 2


@dataclass(frozen=True)
class AuditReport:
    length: LengthAudit
    style: selectors.StyleFit | None
    rank_gaps: tuple[RankGap, ...]
    rank_gap_more_than: int
    simulated: bool  # simulated votes were read

    def as_dict(self) -> dict:
        style = None
        if self.style is not None:
            style = {
                "snapshot": self.style.snapshot_id,
                "computed_at": self.style.computed_at.isoformat(),
                "includes_simulated": self.style.includes_simulated,
                "coefficients": {k: list(v) for k, v in self.style.coefs.items()},
            }
        return {
            "length": asdict(self.length),
            "style_fit": style,
            "rank_gap_more_than": self.rank_gap_more_than,
            "raw_beats_style": [
                {"model": g.model, "raw_rank": g.raw_rank, "style_rank": g.style_rank}
                for g in self.rank_gaps
            ],
            "simulated_votes_read": self.simulated,
        }


def _audit(
    chosen: np.ndarray, rejected: np.ndarray, *, more_than: int, simulated: bool
) -> AuditReport:
    fit = selectors.style_fit_latest()
    gaps = rank_gaps(fit.raw, fit.style, more_than=more_than) if fit else ()
    return AuditReport(length_audit(chosen, rejected), fit, gaps, more_than, simulated)


def audit_report(*, include_simulated: bool, more_than: int = RANK_GAP_DEFAULT) -> AuditReport:
    """The audit of every counted decisive vote (the staff page)."""
    chosen, rejected = selectors.decisive_lengths(include_simulated=include_simulated)
    return _audit(chosen, rejected, more_than=more_than, simulated=include_simulated)


@dataclass
class PairsResult:
    files: dict[str, int] = field(default_factory=dict)  # path -> rows written
    votes_read: int = 0
    both_bad_dropped: int = 0
    capped: int = 0
    balance: dict[str, dict[str, int]] = field(default_factory=dict)  # split -> before/kept
    left_out: dict[str, int] = field(default_factory=dict)
    audit: AuditReport | None = None
    audit_balanced: dict[str, LengthAudit] = field(default_factory=dict)


def _split_paths(output: Path, splits: tuple[str, ...]) -> dict[str, Path]:
    if splits == ("all",):
        return {"all": output}
    return {s: output.with_name(f"{output.stem}.{s}{output.suffix or '.jsonl'}") for s in splits}


def _write(path: Path, rows: list[dict]) -> int:
    try:
        with path.open("w", encoding="utf-8", newline="\n") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    except OSError as exc:
        raise ServiceError("write_failed", f"Cannot write {path}: {exc.strerror or exc}") from None
    return len(rows)


def _arrays(rows: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    data = np.array([lengths(r) for r in rows], dtype=np.float64).reshape(-1, 2)
    return data[:, 0], data[:, 1]


def pairs_export(
    *,
    output: Path | None,
    ties: Path | None = None,
    keep_both_bad: bool = False,
    per_prompt_cap: int | None = None,
    test_share: float | None = None,
    seed: int = 0,
    balance: bool = False,
    audit: bool = False,
    include_simulated: bool = False,
    rank_gap: int = RANK_GAP_DEFAULT,
) -> PairsResult:
    """Write the counted votes with a winner as preference pairs (split in two files by prompt
    hash when ``test_share`` is given); ties, and both-bad votes when kept, to ``ties``.
    Without ``output`` nothing is written: the audit and the counts alone."""
    if keep_both_bad and ties is None:
        raise ServiceError("no_ties_file", "Both-bad votes have no winner: give a ties file.")
    if test_share is not None and not 0 < test_share < 1:
        raise ServiceError("bad_share", f"The test share must lie between 0 and 1: {test_share}")
    if per_prompt_cap is not None and per_prompt_cap < 1:
        raise ServiceError("bad_cap", f"The cap per prompt must be 1 or more: {per_prompt_cap}")
    result = PairsResult()
    votes = list(selectors.votes_to_release(include_simulated=include_simulated).iterator(
        chunk_size=500))  # fmt: skip
    result.votes_read = len(votes)
    result.left_out = selectors.votes_left_out(include_simulated=include_simulated)
    tags = selectors.tags_of(votes)
    rows = []
    for vote in votes:
        if vote.choice == "both_bad" and not keep_both_bad:
            result.both_bad_dropped += 1
            continue
        rows.append(pair_row(vote, tags=tags[vote.pk]))
    if per_prompt_cap is not None:
        before = len(rows)
        rows = cap_per_prompt(rows, cap=per_prompt_cap, seed=seed)
        result.capped = before - len(rows)
    splits: tuple[str, ...] = ("all",) if test_share is None else ("train", "test")
    for row in rows:
        row["split"] = (
            "all" if test_share is None else split_of(row["prompt_hash"], test_share=test_share,
                                                      seed=seed)
        )  # fmt: skip
    pairs = [r for r in rows if is_pair(r)]
    if audit:
        result.audit = _audit(*_arrays(pairs), more_than=rank_gap, simulated=include_simulated)
    paths = _split_paths(output, splits) if output is not None else {}
    for split in splits:
        chosen = [r for r in pairs if r["split"] == split]
        if balance:
            keep = balance_length(*_arrays(chosen), seed=seed)
            result.balance[split] = {"before": len(chosen), "kept": int(keep.size)}
            chosen = [chosen[i] for i in keep]
            if audit:
                result.audit_balanced[split] = length_audit(*_arrays(chosen))
        if split in paths:
            result.files[str(paths[split])] = _write(paths[split], chosen)
    if ties is not None:
        result.files[str(ties)] = _write(ties, [r for r in rows if not is_pair(r)])
    return result
