"""Reading prompt files (JSONL or CSV) into rows, with a reason for every row rejected."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field

from arena.core.text import text_clean

FIELDS = ("text", "category", "language", "system_prompt")


@dataclass
class ImportReport:
    created: int = 0
    duplicates: int = 0
    rejected: list[tuple[int, str]] = field(default_factory=list)  # (line or row number, why)

    def summary(self) -> str:
        if self.rejected:
            return (
                f"Nothing was imported: {len(self.rejected)} row(s) rejected. Fix them and "
                "import the file again (prompts already present are skipped)."
            )
        return f"{self.created} prompt(s) added, {self.duplicates} already present."


def _row(raw: object) -> dict[str, str]:
    if not isinstance(raw, dict):
        raise ValueError("expected an object with a 'text' field")
    out: dict[str, str] = {}
    for name in FIELDS:
        value = raw.get(name, "")
        if value is None:
            value = ""
        if not isinstance(value, str):
            raise ValueError(f"'{name}' must be a string")
        value = text_clean(value)  # no NUL or lone surrogate reaches the database
        out[name] = value.strip() if name != "text" else value
    if not out["text"].strip():
        raise ValueError("'text' is missing or empty")
    if len(out["category"]) > 64 or len(out["language"]) > 16:
        raise ValueError("'category' is limited to 64 characters and 'language' to 16")
    return out


def parse_prompts(
    data: bytes, *, filename: str
) -> tuple[list[tuple[int, dict]], list[tuple[int, str]]]:
    """Rows as (line number, fields), and rejections as (line number, reason)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return [], [(0, "the file is not UTF-8 text")]
    rows: list[tuple[int, dict]] = []
    rejected: list[tuple[int, str]] = []
    if filename.lower().endswith(".csv"):
        reader = csv.DictReader(io.StringIO(text, newline=""))
        try:
            if not reader.fieldnames or "text" not in reader.fieldnames:
                return [], [(1, "the CSV header must name a 'text' column")]
            for raw in reader:
                try:
                    rows.append((reader.line_num, _row(raw)))
                except ValueError as exc:
                    rejected.append((reader.line_num, str(exc)))
        except csv.Error as exc:  # past repair (a stray quote, say): nothing after it is read
            rejected.append((reader.line_num, f"not valid CSV ({exc}); nothing after it was read"))
        return rows, rejected
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append((number, _row(json.loads(line))))
        except json.JSONDecodeError as exc:
            rejected.append((number, f"not valid JSON ({exc.msg})"))
        except RecursionError:
            rejected.append((number, "not valid JSON (nested too deep)"))
        except ValueError as exc:
            rejected.append((number, str(exc)))
    return rows, rejected
