"""Rubric scoring's rules, pure: rubric, labels and orders, replies, weights, tie-breaks."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from arena.judges import rubric as judge


def test_the_default_rubric_is_valid_and_weighs_correctness_most():
    rubric = judge.rubric_from(judge.rubric_as_data(judge.DEFAULT_RUBRIC))
    assert [(c.name, c.weight) for c in rubric] == [
        ("correctness", Decimal("0.40")),
        ("completeness", Decimal("0.25")),
        ("clarity", Decimal("0.20")),
        ("safety", Decimal("0.15")),
    ]


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ([{"name": "a", "weight": 0.5, "low": "x", "high": "y"}], "sum to 1; these sum to 0.5"),
        ([{"name": "a", "weight": 1, "low": "", "high": "y"}], "say what a 1 (low)"),
        ([{"name": "a", "weight": -1, "low": "x", "high": "y"}], "above 0"),
        ([{"name": "a", "weight": "lots", "low": "x", "high": "y"}], "must be a number"),
        ([{"name": "A B", "weight": 1, "low": "x", "high": "y"}], "lower_case word"),
        ([{"name": "a", "weight": 0.5, "low": "x", "high": "y"}] * 2, "once"),
        ([], "non-empty"),
    ],
)
def test_a_rubric_that_cannot_be_used_says_why(data, says):
    with pytest.raises(judge.RubricError, match=None) as err:
        judge.rubric_from(data)
    assert says in str(err.value)


def test_a_rubric_may_be_a_mapping_as_yaml_writes_it():
    rubric = judge.rubric_from(
        {"criteria": {"depth": {"weight": 0.7, "low": "shallow", "high": "deep"},
                      "tone": {"weight": 0.3, "low": "rude", "high": "kind"}}}
    )  # fmt: skip
    assert [c.name for c in rubric] == ["depth", "tone"]


def test_labels_are_shuffled_by_seed_reproducibly_and_orders_differ_across_calls():
    assert judge.labels_for(4, seed=7) == judge.labels_for(4, seed=7)
    assert sorted(judge.labels_for(4, seed=7)) == ["A", "B", "C", "D"]
    firsts = {judge.labels_for(4, seed=s)[0] for s in range(40)}
    assert len(firsts) > 1  # the first model is not always A
    orders = {tuple(judge.call_order(list("ABCD"), seed=7, call=c)) for c in "wxyz"}
    assert len(orders) > 1
    assert all(sorted(o) == list("ABCD") for o in orders)


def reply(scores: dict) -> str:
    return json.dumps({"scores": scores})


def test_a_reply_scores_every_label_exactly_once_from_1_to_5_with_reasons():
    ok = {"A": {"score": 4, "reason": "good"}, "B": {"score": 1, "reason": "wrong"}}
    assert judge.parse_scores("```json\n" + reply(ok) + "\n```", ["B", "A"]) == {
        "B": (1, "wrong"),
        "A": (4, "good"),
    }
    for bad, says in [
        ("not json", "not JSON"),
        (reply({"A": {"score": 4, "reason": "x"}}), "not exactly"),
        (reply({**ok, "C": {"score": 3, "reason": "x"}}), "not exactly"),
        (reply({**ok, "A": {"score": 6, "reason": "x"}}), "from 1 to 5"),
        (reply({**ok, "A": {"score": 4.5, "reason": "x"}}), "from 1 to 5"),
        (reply({**ok, "A": {"score": 4}}), "no reason"),
        (json.dumps(["A"]), "not a JSON object"),
    ]:
        with pytest.raises(judge.ReplyError, match=says):
            judge.parse_scores(bad, ["A", "B"])


def test_a_criterion_left_out_has_its_weight_shared_among_those_scored():
    rubric = judge.DEFAULT_RUBRIC
    scores = {"correctness": {"A": 5, "B": 1}, "clarity": {"A": 1, "B": 5}}
    overall, missing = judge.combine(scores, rubric)
    assert missing == ["completeness", "safety"]
    # correctness 0.40 and clarity 0.20 become 2/3 and 1/3.
    assert overall == {"A": pytest.approx(2 / 3, abs=1e-4), "B": pytest.approx(1 / 3, abs=1e-4)}
    assert judge.combine({}, rubric) == ({}, [c.name for c in rubric])


def test_a_close_call_goes_head_to_head_and_two_orders_that_disagree_are_a_tie():
    assert judge.close_call({"A": 0.8, "B": 0.7, "C": 0.1}) == ("A", "B")
    assert judge.close_call({"A": 0.9, "B": 0.7}) is None
    assert judge.head_to_head_result("B", "B") == "B"
    assert judge.head_to_head_result("A", "B") == "tie"
    assert judge.winner({"A": 0.8, "B": 0.7}, "B") == "B"
    assert judge.winner({"A": 0.9, "B": 0.2}, None) == "A"
    assert judge.parse_winner('{"winner": "tie"}', ("A", "B")) == "tie"
    with pytest.raises(judge.ReplyError):
        judge.parse_winner('{"winner": "C"}', ("A", "B"))


def test_the_replys_schema_asks_for_exactly_the_labels_shown():
    schema = judge.scores_schema(["B", "A"])
    scores = schema["properties"]["scores"]
    assert scores["required"] == ["B", "A"] and scores["additionalProperties"] is False
    assert scores["properties"]["A"]["properties"]["score"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 5,
    }
    assert judge.winner_schema(("A", "C"))["properties"]["winner"]["enum"] == ["A", "C", "tie"]
