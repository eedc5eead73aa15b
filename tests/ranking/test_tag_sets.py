"""Tag sets as vote arrays hold them, FastChat's category_tag read as our tags, and the
category boards a vote with several tags is on."""

from __future__ import annotations

import numpy as np
import pytest

from arena.core.criteria import CRITERIA
from ranking.battle_log import Record, arrays_from_records
from ranking.compute import breakdown_masks
from ranking.tag_sets import NO_TAGS, category_tag_names, row_tags, tag_codes, tag_masks, used_sets


def criteria(held: int) -> dict[str, bool]:
    return {name: i < held for i, name in enumerate(CRITERIA)}


# A public log's category_tag (FastChat's shape) and the tags it gives.
CATEGORY_TAGS = [
    ({"criteria_v0.1": criteria(6)}, {"hard"}),
    ({"criteria_v0.1": criteria(7)}, {"hard"}),
    ({"criteria_v0.1": criteria(5)}, set()),
    ({"if_v0.1": {"if": True, "score": 4}}, {"instruction_following"}),
    ({"if_v0.1": {"if": False, "score": 1}}, set()),
    ({"math_v0.1": {"math": True}}, {"math"}),
    ({"creative_writing_v0.1": {"creative_writing": True, "score": "yes"}}, {"creative_writing"}),
    ({"refusal_v0.2": {"refusal": True}}, {"refusal"}),
    (
        {
            "criteria_v0.1": criteria(6),
            "if_v0.1": {"if": True, "score": 5},
            "math_v0.1": {"math": True},
            "creative_writing_v0.1": {"creative_writing": False, "score": "no"},
        },
        {"hard", "instruction_following", "math"},
    ),
    ({"long_user": True}, {"long_user"}),  # a bare verdict
    # Not verdicts: truthy values that are not JSON true, and shapes that say nothing.
    ({"math_v0.1": {"math": 1}}, set()),
    ({"math_v0.1": {"math": "true"}}, set()),
    ({"criteria_v0.1": [True] * 7}, set()),
    ({"criteria_v0.1": {k: 1 for k in CRITERIA}}, set()),
    ({"math_v0.1": True, "if_v0.1": None}, {"math"}),
    ("math", set()),
    (None, set()),
    ([{"math": True}], set()),
]


@pytest.mark.parametrize(("value", "tags"), CATEGORY_TAGS)
def test_fastchat_category_tags_read_as_our_tag_names(value, tags):
    assert category_tag_names(value) == tags


def test_a_rows_tags_join_category_tag_our_tag_list_and_is_code():
    assert row_tags({"math_v0.1": {"math": True}}, ["hard", 3, ""], True) == {
        "math",
        "hard",
        "code",
    }
    assert row_tags(None, "code", 1) == frozenset()  # a string is not a list; 1 is not true
    assert row_tags(None, None, None) == frozenset()


def test_tag_codes_keep_only_the_sets_a_vote_has():
    sets = [frozenset({"code"}), None, frozenset({"code", "hard"}), frozenset({"code"})]
    codes, known = tag_codes(sets, 4)
    assert codes.tolist() == [0, NO_TAGS, 1, 0]
    assert known == [frozenset({"code"}), frozenset({"code", "hard"})]
    kept, left = used_sets(np.array([1, NO_TAGS, 1], np.int32), known)
    assert kept.tolist() == [0, NO_TAGS, 0] and left == [frozenset({"code", "hard"})]
    masks = tag_masks(codes, known)
    assert {tag: m.tolist() for tag, m in masks.items()} == {
        "code": [True, False, True, True],
        "hard": [False, False, True, False],
    }


def test_a_vote_is_on_every_board_of_its_tags_and_of_its_curated_category():
    records = [
        Record("x", "y", "a", category="general", tags=frozenset({"code", "hard"})),
        Record("x", "y", "b", category="code", tags=None),  # curated only, not tagged yet
        Record("x", "y", "tie", language="fr", tags=frozenset({"math"})),
        Record("x", "y", "a", language="und", tags=frozenset()),
    ]
    arrays = arrays_from_records(records)
    boards = {
        key: mask.tolist()
        for key, mask in breakdown_masks(arrays, ["category", "language"])
        if mask is not None
    }
    assert boards == {
        "category:code": [True, True, False, False],
        "category:general": [True, False, False, False],
        "category:hard": [True, False, False, False],
        "category:math": [False, False, True, False],
        "language:fr": [False, False, True, False],
    }  # "und" (no language told) makes no board
