"""The pure checks: which tail of a stream could still become a protected name, and names
redacted whole, versions and all, however the stream was split."""

from __future__ import annotations

from functools import partial

import pytest

from arena.battles.pacing import Pacer
from arena.integrity.checks import name_tail, redact

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
        ("x_Cla", 3),  # an underscore does not hide a name: "_Claude_" is italics
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


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("I am GPT-4o, hello.", "I am [model name], hello."),
        ("Made as Claude-3.5.", "Made as [model name]."),
        ("Try gemini-2.5-pro now", "Try [model name] now"),
        ("Llama3.1 here", "[model name] here"),
        ("Claude's answer", "[model name]'s answer"),
        ("A metaphor for GPT", "A metaphor for [model name]"),
    ],
)
def test_a_name_is_redacted_with_its_version_as_one_token(text, shown):
    assert redact(text, (*TERMS, "Gemini", "Llama")) == shown


@pytest.mark.parametrize("split", range(1, 18))
def test_a_name_split_across_chunks_is_redacted_whole_with_its_version(split):
    text = "I am GPT-4o, hi."
    pacer = Pacer(
        chars_per_tick=1000,
        redact=partial(redact, terms=TERMS),
        hold=partial(name_tail, terms=TERMS),
    )
    pacer.feed("a", text[:split])
    pacer.feed("b", "other side")
    shown = pacer.tick()["a"]
    pacer.feed("a", text[split:])
    pacer.finish("a")
    pacer.finish("b")
    shown += pacer.tick()["a"]
    assert shown == "I am [model name], hi."
