from __future__ import annotations

import json

import numpy as np
import pytest
from django.utils import timezone

from arena.battles.prompts import prompt_create
from arena.battles.simulation import votes_simulate
from arena.datasets.audit import balance_length, length_audit, rank_gaps
from arena.datasets.exports import audit_report, pairs_export
from ranking.models import LeaderboardRow, LeaderboardSnapshot
from tests.helpers import make_model


def test_the_share_leaves_equal_lengths_out():
    audit = length_audit(np.array([10, 5, 7, 7]), np.array([5, 10, 1, 7]))

    assert (audit.pairs, audit.equal_length, audit.chosen_longer) == (4, 1, 2)
    assert audit.chosen_longer_share == pytest.approx(2 / 3)


def test_deciles_split_pairs_evenly_by_relative_difference():
    rng = np.random.default_rng(1)
    chosen, rejected = rng.integers(10, 500, 1000), rng.integers(10, 500, 1000)
    audit = length_audit(chosen, rejected)

    assert len(audit.deciles) == 10
    assert sum(d.pairs for d in audit.deciles) == audit.unequal
    assert all(a.high <= b.low for a, b in zip(audit.deciles, audit.deciles[1:], strict=False))


def test_balancing_only_drops_pairs_and_lands_on_one_half():
    chosen = np.array([9, 9, 9, 9, 9, 1, 4])
    rejected = np.array([1, 1, 1, 1, 1, 9, 4])
    keep = balance_length(chosen, rejected, seed=3)

    assert len(set(keep.tolist())) == keep.size == 3  # one longer, one shorter, the equal one
    assert length_audit(chosen[keep], rejected[keep]).chosen_longer_share == 0.5


def test_rank_gaps_name_models_that_fall_once_style_is_controlled():
    raw = {"Wordy": 1200.0, "Terse": 1100.0, "Middle": 1150.0, "Low": 900.0}
    style = {"Wordy": 1000.0, "Terse": 1190.0, "Middle": 1150.0, "Low": 1100.0}

    [gap] = rank_gaps(raw, style, more_than=2)
    assert (gap.model, gap.raw_rank, gap.style_rank, gap.places) == ("Wordy", 1, 4, 3)
    assert [g.model for g in rank_gaps(raw, style, more_than=0)] == ["Wordy"]


@pytest.fixture
def length_biased(db) -> None:
    """Raters who pick the longer answer 70% of the time, 4,000 simulated votes."""
    for name in ("Alpha", "Beta", "Gamma"):
        make_model(name, name.lower())
    prompt_create(text="Anything?", category="general", language="en")
    votes_simulate(n=4000, strengths={"Alpha": 0.5, "Beta": 0.0, "Gamma": -0.5}, once=False,
                   length_preference=0.7)  # fmt: skip


def test_the_audit_finds_a_known_length_preference_and_balances_it(length_biased, tmp_path):
    result = pairs_export(output=tmp_path / "p.jsonl", audit=True, balance=True, seed=2,
                          include_simulated=True)  # fmt: skip

    assert result.audit.length.chosen_longer_share == pytest.approx(0.70, abs=0.03)
    # Wider gaps are not preferred more by these raters: every decile near 0.7 too.
    assert all(abs(d.longer_won - 0.7) < 0.08 for d in result.audit.length.deciles)
    rows = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    sizes = [(r["chosen_meta"]["output_tokens"], r["rejected_meta"]["output_tokens"]) for r in rows]
    longer = [c > r for c, r in sizes if c != r]
    assert sum(longer) / len(longer) == pytest.approx(0.50, abs=0.02)
    assert result.balance["all"]["kept"] == len(rows) < result.balance["all"]["before"]
    assert all(r["simulated"] for r in rows)


def test_the_audit_reports_the_latest_style_fit_and_rank_gaps(length_biased):
    snapshot = LeaderboardSnapshot.objects.create(
        cutoff=timezone.now(), method="sandwich", settings={}, votes_used=4000,
        style_coefs={"all": {"length": [0.4, 0.3, 0.5], "bold": [0.0, -0.1, 0.1]}},
        content_hash="x",
    )  # fmt: skip
    for view, scores in (("raw", [1200, 1100, 1000, 900]), ("style", [900, 1100, 1000, 1050])):
        for name, score in zip(("Alpha", "Beta", "Gamma", "Delta"), scores, strict=True):
            LeaderboardRow.objects.create(snapshot=snapshot, view=view, model_name=name,
                                          section="ranked", score=score, votes=1000)  # fmt: skip

    report = audit_report(include_simulated=True, more_than=2)

    assert report.style.coefs["length"] == (0.4, 0.3, 0.5)
    assert [(g.model, g.raw_rank, g.style_rank) for g in report.rank_gaps] == [("Alpha", 1, 4)]
    assert report.length.chosen_longer_share == pytest.approx(0.70, abs=0.03)
    assert audit_report(include_simulated=False).length.pairs == 0
