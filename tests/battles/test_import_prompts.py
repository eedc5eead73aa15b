from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from arena.records.models import Prompt


def run_import(path: Path) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("import_prompts", str(path), stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def jsonl(*rows: object) -> str:
    return "\n".join(row if isinstance(row, str) else json.dumps(row) for row in rows) + "\n"


@pytest.fixture
def short_limit(settings):
    settings.ARENA = {**settings.ARENA, "PROMPT_MAX_CHARS": 40}


def test_a_file_with_rejected_rows_adds_nothing_and_reports_each_with_its_line_and_reason(
    db, tmp_path, short_limit
):
    path = tmp_path / "prompts.jsonl"
    path.write_text(
        jsonl(
            {"text": "Name three prime numbers.", "category": "math", "language": "en"},
            '{"text": "unterminated',
            {"category": "math"},
            {"text": "x" * 41},
            {"text": "Why is the sky blue?"},
        )
    )

    out, err = run_import(path)

    assert out.strip().startswith("Nothing was imported: 3 row(s) rejected.")
    lines = err.strip().splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("prompts.jsonl:2: rejected: not valid JSON")
    assert lines[1] == "prompts.jsonl:3: rejected: 'text' is missing or empty"
    assert lines[2] == "prompts.jsonl:4: rejected: The prompt is 41 characters; the limit is 40."
    assert not Prompt.objects.exists()  # not the good rows either: all or nothing


def test_csv_rows_are_numbered_by_file_line(db, tmp_path):
    path = tmp_path / "prompts.csv"
    path.write_text("text,category\nExplain recursion.,code\n,code\n")

    out, err = run_import(path)

    assert out.strip().startswith("Nothing was imported: 1 row(s) rejected.")
    assert err.strip() == "prompts.csv:3: rejected: 'text' is missing or empty"


def test_importing_the_same_prompts_again_adds_nothing(db, tmp_path):
    path = tmp_path / "prompts.jsonl"
    path.write_text(
        jsonl(
            {"text": "Summarise the plot of Hamlet."},
            # Differs only in case and spacing: the same prompt.
            {"text": "  summarise the  plot of HAMLET. "},
            {"text": "Translate 'good morning' into French."},
        )
    )

    first, _ = run_import(path)
    second, _ = run_import(path)

    assert first.strip() == "2 prompt(s) added, 1 already present."
    assert second.strip() == "0 prompt(s) added, 3 already present."
    assert Prompt.objects.count() == 2


def test_a_missing_file_is_a_command_error(db, tmp_path):
    with pytest.raises(CommandError, match="No such file"):
        run_import(tmp_path / "nowhere.jsonl")
    assert not Prompt.objects.exists()


def test_hostile_rows_are_cleaned_or_rejected_never_a_crash(db, tmp_path):
    path = tmp_path / "prompts.jsonl"
    path.write_text(
        jsonl(
            {
                "text": "Nul\x00 in the text",
                "category": "ma\x00th",
                "system_prompt": "Be\x00 brief",
            },
            {"text": "A lone \ud800 surrogate"},
        ),
        encoding="utf-8",
        errors="surrogatepass",
    )
    deep = tmp_path / "deep.jsonl"
    deep.write_text(jsonl({"text": "Fine."}, "[" * 3000 + "]" * 3000))

    out, err = run_import(deep)
    assert err.strip() == "deep.jsonl:2: rejected: not valid JSON (nested too deep)"
    out, err = run_import(path)

    assert out.strip() == "2 prompt(s) added, 0 already present."
    cleaned = Prompt.objects.get(text="Nul in the text")
    assert (cleaned.category, cleaned.system_prompt) == ("math", "Be brief")
    assert Prompt.objects.filter(text="A lone \ufffd surrogate").exists()
