"""manage.py tag_prompts: tags the votes with no tags yet, resumably, by rules or with the
labeller, and says what the labeller may cost and did cost."""

from __future__ import annotations

import io
import re
from datetime import date
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command

from arena.catalog.models import ModelEntry, ModelPrice
from arena.tagging.models import VoteTags
from arena.tagging.selectors import vote_tags
from tests.helpers import serving

# The command tags on an event loop whose database calls close a connection left in a
# transaction, as every async caller does: these tests commit.
pytestmark = pytest.mark.usefixtures("transactional_db")


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("tag_prompts", *args, "--quiet", stdout=out)
    return out.getvalue()


def mock_labeller(name: str = "Mock Labeller", **extra) -> ModelEntry:
    return ModelEntry.objects.create(
        public_name=name, vendor="mock-labeller", model_id="mock-labeller-1", active=False,
        backend=ModelEntry.Backend.MOCK,
        backend_settings={"ttft_ms": 0, "tokens_per_s": 0, "judge": True, **extra},
    )  # fmt: skip


def test_a_stopped_run_is_resumed_by_running_again_and_then_there_is_nothing_left(make_vote):
    votes = [make_vote(f"Write a function number {n} in Python.") for n in range(5)]

    first = run("--rules-only", "--limit", "2", "--batch", "1")
    rest = run("--rules-only")
    nothing = run("--rules-only")

    assert first.startswith("2 votes to tag at version 1: rules alone") and "Tagged 2" in first
    assert rest.startswith("3 votes to tag") and "Tagged 3 votes." in rest
    assert nothing.startswith("0 votes to tag") and "Tagged 0 votes." in nothing
    assert vote_tags() == {v.pk: frozenset({"code"}) for v in votes}
    assert VoteTags.objects.count() == 5


def test_with_the_mock_labeller_the_run_says_it_costs_nothing_and_labels_each_text_once(
    make_vote,
):
    mock_labeller()
    poems = [make_vote("Write a poem in exactly four lines.") for _ in range(3)]

    out = run("--labeller", "Mock Labeller")

    assert "rules and the labeller Mock Labeller" in out
    assert "1 prompt texts to label; Mock Labeller is a mock (example pricing)" in out
    assert "1 texts labelled, 0 reused" in out and "1 calls costing $0.0000" in out
    assert all({"creative_writing", "instruction_following"} <= vote_tags()[v.pk] for v in poems)
    assert set(VoteTags.objects.values_list("labeller", flat=True)) == {"rules+Mock Labeller"}


def test_a_rules_only_vote_gets_the_labellers_row_when_it_is_run_later(make_vote):
    vote = make_vote("Tell me a story about a dragon.")
    run("--rules-only")
    mock_labeller()

    out = run("--labeller", "Mock Labeller")

    assert out.startswith("1 votes to tag")
    assert "creative_writing" in vote_tags()[vote.pk]
    assert list(VoteTags.objects.order_by("id").values_list("labeller", flat=True)) == [
        "rules",
        "rules+Mock Labeller",
    ]


def test_a_new_version_tags_every_vote_again_beside_the_old_rows(make_vote):
    vote = make_vote("Solve 2x + 3 = 7.")
    run("--rules-only")

    out = run("--rules-only", "--tag-version", "2")

    assert out.startswith("1 votes to tag at version 2")
    assert sorted(VoteTags.objects.values_list("version", flat=True)) == [1, 2]
    assert vote_tags() == {vote.pk: frozenset({"math"})}


def test_a_priced_labeller_is_told_at_its_worst_case_before_and_its_cost_after(make_vote, settings):
    settings.TAGGER_DAILY_BUDGET_USD = Decimal("2")
    make_vote("Write a haiku about autumn.")
    with serving() as server:
        server.models["priced-1"] = {"ttft_ms": 0, "tokens_per_s": 0, "judge": True}
        model = ModelEntry.objects.create(
            public_name="Priced Labeller", vendor="priced", model_id="priced-1", active=False,
            backend=ModelEntry.Backend.OPENAI_COMPATIBLE, supported_params=[],
            backend_settings={"base_url": server.url, "timeout_s": 10},
        )  # fmt: skip
        ModelPrice.objects.create(
            model=model, input_per_million=Decimal("1"), output_per_million=Decimal("3"),
            effective_from=date(2020, 1, 1), source_url="https://vendor.example/pricing",
        )  # fmt: skip
        out = run("--labeller", "Priced Labeller")

    worst = Decimal(re.search(r"at most \$([0-9.]+) at list price", out).group(1))
    spent = Decimal(re.search(r"1 calls costing \$([0-9.]+)", out).group(1))
    assert "today's budget has $2.0000 left" in out
    assert Decimal(0) < spent <= worst
    assert VoteTags.objects.get().cost > 0


def test_an_unknown_labeller_is_refused():
    with pytest.raises(CommandError, match="No model named 'Nobody'"):
        run("--labeller", "Nobody")
