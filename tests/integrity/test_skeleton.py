"""The one-pass skeleton (integrity.skeleton.one_skeleton) agrees with the character-by-character
fold, including on the private-use character it marks other characters with."""

from __future__ import annotations

import pytest

from arena.integrity.skeleton import _MARK, fold_char, one_skeleton, one_to_one, skeleton


def slow(text: str) -> str:
    return "".join(fold_char(c) for c in text)


@pytest.mark.parametrize(
    "text",
    ["Plain ASCII, I think", "Сlaude’s answer—here", "⟨1733.5⟩word ", "ＧＰＴ", "Ⓒlaude", "日本語"],
)
def test_a_text_of_one_skeleton_character_each_is_folded_in_one_pass(text):
    assert one_to_one(text)
    assert one_skeleton(text) == slow(text)
    assert skeleton(text) == (slow(text), None)


@pytest.mark.parametrize("text", ["Cl\u200baude", "ﬁne", "Clau\x7fde", "ß"])
def test_a_text_with_a_character_that_folds_to_none_or_several_is_left_to_the_slow_fold(text):
    assert not one_to_one(text)
    assert one_skeleton(text) is None
    folded, origin = skeleton(text)
    assert folded == slow(text)
    assert origin is not None and len(origin) == len(folded)


def test_the_marker_character_itself_in_a_text_is_folded_as_itself():
    text = f"{_MARK}Claude {_MARK}"
    assert one_to_one(text)
    assert one_skeleton(text) is None  # taken the slow way, never wrongly
    assert skeleton(text) == (slow(text), None)
