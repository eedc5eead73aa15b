"""The pure checks: which tail of a stream could still become a protected name."""

from __future__ import annotations

import pytest

from arena.integrity.checks import name_tail

TERMS = ("Claude", "ChatGPT", "GPT", "Deep Owl", "xAI")


@pytest.mark.parametrize(
    ("text", "held"),
    [
        ("I think Cla", 3),  # could become Claude
        ("so Chat", 4),  # could become ChatGPT
        ("try the Deep O", 6),  # a name with a space in it
        ("我是Cla", 3),  # a name may follow CJK text directly
        ("I think cLA", 3),  # names match in any case
        ("Hello world", 0),
        ("Metaphor", 0),
        ("ReCla", 0),  # inside a longer Latin word a name cannot begin
        ("x_Cla", 0),
        ("Clause", 0),  # no name begins with this
    ],
)
def test_only_a_tail_that_could_begin_a_name_is_held(text, held):
    assert name_tail(text, 0, TERMS) == held


def test_text_already_shown_is_not_held_again():
    assert name_tail("Ask Cla", len("Ask Cla"), TERMS) == 0
    assert name_tail("Ask Cla", len("Ask "), TERMS) == 3
    # Past a shown "C", what follows is inside a word: no name can begin there.
    assert name_tail("Ask Cla", len("Ask C"), TERMS) == 0


def test_no_terms_hold_nothing():
    assert name_tail("Cla", 0, ()) == 0
