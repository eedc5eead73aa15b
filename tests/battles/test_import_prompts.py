from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from arena.battles.models import Prompt


def run_import(path: Path) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("import_prompts", str(path), stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def jsonl(*rows: object) -> str:
    return "\n".join(row if isinstance(row, str) else json.dumps(row) for row in rows) + "\n"


@pytest.fixture
def short_limit(settings):
    settings.ARENA = {**settings.ARENA, "PROMPT_MAX_CHARS": 40}


def test_rejected_rows_are_reported_with_line_numbers_and_reasons(db, tmp_path, short_limit):
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

    assert out.strip() == "2 prompt(s) added, 0 already present, 3 rejected."
    lines = err.strip().splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("prompts.jsonl:2: rejected: not valid JSON")
    assert lines[1] == "prompts.jsonl:3: rejected: 'text' is missing or empty"
    assert lines[2] == "prompts.jsonl:4: rejected: The prompt is 41 characters; the limit is 40."
    assert set(Prompt.objects.values_list("text", flat=True)) == {
        "Name three prime numbers.",
        "Why is the sky blue?",
    }
    assert Prompt.objects.get(text="Name three prime numbers.").category == "math"


def test_csv_rows_are_numbered_by_file_line(db, tmp_path):
    path = tmp_path / "prompts.csv"
    path.write_text("text,category\nExplain recursion.,code\n,code\n")

    out, err = run_import(path)

    assert out.strip() == "1 prompt(s) added, 0 already present, 1 rejected."
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

    assert first.strip() == "2 prompt(s) added, 1 already present, 0 rejected."
    assert second.strip() == "0 prompt(s) added, 3 already present, 0 rejected."
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
            "[" * 3000 + "]" * 3000,
            {"text": "A lone \ud800 surrogate"},
        ),
        encoding="utf-8",
        errors="surrogatepass",
    )

    out, err = run_import(path)

    assert out.strip() == "2 prompt(s) added, 0 already present, 1 rejected."
    assert err.strip() == "prompts.jsonl:2: rejected: not valid JSON (nested too deep)"
    cleaned = Prompt.objects.get(text="Nul in the text")
    assert (cleaned.category, cleaned.system_prompt) == ("math", "Be brief")
    assert Prompt.objects.filter(text="A lone \ufffd surrogate").exists()
