"""Rubrics in YAML as in JSON, checked the same way; ``compare --rubric`` reads either."""

from __future__ import annotations

from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from arena.compare.models import CompareRun
from arena.judges.rubric import RubricError, rubric_from, rubric_text
from tests.helpers import make_judge, make_two_models

YAML_LIST = """\
- name: depth
  weight: 0.6
  low: shallow
  high: thorough
- name: tone
  weight: 0.4
  low: rude
  high: kind
"""

YAML_MAPPING = """\
criteria:
  depth: {weight: 0.5, low: shallow, high: thorough}
  tone: {weight: 0.5, low: rude, high: kind}
"""


def test_yaml_and_json_give_the_same_rubric():
    from_yaml = rubric_from(rubric_text(YAML_LIST))
    from_json = rubric_from(rubric_text(
        '[{"name": "depth", "weight": 0.6, "low": "shallow", "high": "thorough"},'
        ' {"name": "tone", "weight": 0.4, "low": "rude", "high": "kind"}]'
    ))  # fmt: skip
    assert from_yaml == from_json
    assert [c.weight for c in from_yaml] == [Decimal("0.6"), Decimal("0.4")]
    assert [c.name for c in rubric_from(rubric_text(YAML_MAPPING))] == ["depth", "tone"]


def test_yaml_is_checked_as_json_is():
    with pytest.raises(RubricError, match="sum to 1"):
        rubric_from(rubric_text(YAML_LIST.replace("0.4", "0.3")))
    with pytest.raises(RubricError, match=r"neither JSON nor YAML \(line 3"):
        rubric_text("- name: depth\n  weight: [0.5\n")
    with pytest.raises(RubricError, match="neither JSON nor YAML"):
        rubric_text("just words")
    with pytest.raises(RubricError, match="neither JSON nor YAML"):
        rubric_text("!!python/object:os.system {}")  # safe_load: no Python objects


def test_the_command_runs_with_a_yaml_rubric(transactional_db, staff, tmp_path):
    make_two_models()
    make_judge()
    path = tmp_path / "rubric.yaml"
    path.write_text(YAML_LIST)
    out = StringIO()
    call_command("compare", "Explain CAP", "--models", "Zephyr Quill", "Orchid Lantern",
                 "--rubric", str(path), stdout=out)  # fmt: skip
    assert [c["name"] for c in CompareRun.objects.get().rubric] == ["depth", "tone"]
    total = out.getvalue().splitlines()[-1]  # mock prices: an example, never a bill
    assert total.startswith("total $0 (example): answers $0 (example), judge $0 (example) over ")
    assert "judge: Judged 2 of 2 answers: A, B." in out.getvalue()
    path.write_text("- name: depth\n  weight: [0.5\n")
    with pytest.raises(CommandError, match="--rubric: The rubric is neither JSON nor YAML"):
        call_command("compare", "Explain CAP", "--models", "Zephyr Quill", "Orchid Lantern",
                     "--rubric", str(path), stdout=out)  # fmt: skip
