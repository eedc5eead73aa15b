"""Disguise at the edges: control characters a page shows as nothing, spelt-out names against
the longer spelt-out words that hold them, and camel-case names written in parts."""

from __future__ import annotations

import pytest

from arena.integrity.checks import REDACTED, asks_identity, name_tail, redact
from tests.integrity.streaming import streamed as stream_splits

TERMS = (
    "Claude",
    "Anthropic",
    "GPT",
    "ChatGPT",
    "OpenAI",
    "DeepSeek",
    "Gemini",
    "Llama",
    "Meta",
    "Phi",
    "xAI",
    "Deep Owl",
)


def streamed(text: str) -> list[tuple[str, str]]:
    return stream_splits(text, TERMS)


# Control characters --------------------------------------------------------------------------

CONTROLS = ["\x01", "\x08", "\x0e", "\x1b", "\x1c", "\x1f", "\x7f", "\x00"]


@pytest.mark.parametrize("control", CONTROLS, ids=repr)
@pytest.mark.parametrize("name", ["Claude", "GPT", "Anthropic", "Meta"])
def test_a_control_character_inside_a_name_in_plain_ascii_does_not_hide_it(name, control):
    assert redact(f"I am {name[:2]}{control}{name[2:]}, hi.", TERMS) == f"I am {REDACTED}, hi."
    assert redact(f"I am {control.join(name)}.", TERMS) == f"I am {REDACTED}."


@pytest.mark.parametrize("disguised", ["Clau\x7fde", "Cl\x1baude", "G\x7fP\x7fT", "Cl\x7faude"])
def test_a_name_with_control_characters_is_never_shown_in_a_stream(disguised):
    text = f"I am {disguised}, hi."
    expected = f"I am {REDACTED}, hi."
    for first, whole in streamed(text):
        assert expected.startswith(first)
        assert whole == expected


def test_a_tail_with_control_characters_is_held_like_one_without():
    assert name_tail("so Cl\x7f", 0, TERMS) == 3
    assert name_tail("so C\x1bl\x1ba", 0, TERMS) == 5
    # However many, they do not push the name's beginning out of reach.
    text = "so C" + "\x7f" * 500
    assert name_tail(text, 0, TERMS) == len(text) - len("so ")


def test_tab_and_line_breaks_are_still_whitespace():
    assert redact("C\tl\ta\tu\td\te and C\nl\na\nu\nd\ne", TERMS) == f"{REDACTED} and {REDACTED}"
    assert redact("Clau\tde and Clau\nde", TERMS) == "Clau\tde and Clau\nde"


def test_an_identity_question_with_a_control_character_is_recognised():
    assert asks_identity("Who tr\x7fained you?")
    assert asks_identity("Wh\x1bat model are you?")


# Spelt-out names and spelt-out words ---------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "m e t a l",
        "heavy m-e-t-a-l music",
        "s a m e t a b l e",
        "P h i l o s o p h y",
        "c l a u d e t t e",
        "C. l. a. u. d. e. t. t. e.",
        "G P T Q model",
        "g e m i n i d s",
    ],
)
def test_a_spelt_out_word_holding_a_name_passes_untouched(text):
    assert redact(text, TERMS) == text


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("m e t a", REDACTED),
        ("C l a u d e s", REDACTED),  # a plural spelt out goes with the name
        ("C l a u d e a i", REDACTED),
        ("G P T 4 o here", f"{REDACTED} here"),  # and a version
        ("G P T 4 o-mini here", f"{REDACTED} here"),
        ("I am C l a u d e a model", f"I am {REDACTED} a model"),  # "a" is a word of its own
        ("G P T I think", f"{REDACTED} I think"),
        ("C-l-a-u-d-e a-n-d G-P-T", f"{REDACTED} a-n-d {REDACTED}"),  # apart as words are
        ("m e t a  l", f"{REDACTED}  l"),
        ("C l a u d e-3.5 ok", f"{REDACTED} ok"),
    ],
)
def test_a_spelt_out_name_ends_its_word_or_takes_a_suffix(text, shown):
    assert redact(text, TERMS) == shown


@pytest.mark.parametrize("text", ["so m e t a l, hi.", "so c l a u d e t t e, hi."])
def test_a_spelt_out_word_holding_a_name_streams_untouched(text):
    for first, whole in streamed(text):
        assert text.startswith(first)
        assert whole == text


def test_a_spelt_out_plural_streams_redacted_whole():
    expected = f"I am {REDACTED}, hi."
    for first, whole in streamed("I am C l a u d e s, hi."):
        assert expected.startswith(first)
        assert whole == expected


# Camel-case names in parts -------------------------------------------------------------------


@pytest.mark.parametrize(
    "disguised",
    [
        "Deep Seek",
        "Deep-Seek",
        "Deep.Seek",
        "deep_seek",
        "DEEP SEEK",
        "Open AI",
        "open ai",
        "Open-AI",
        "Open.AI",
        "open_ai",
        "Open AIs",
        "Chat GPT",
        "Chat-GPT-4o",
        "Deep Seek-V3",
        "Ореn АI",  # Cyrillic look-alikes
    ],
)
def test_a_camel_case_name_written_in_parts_is_redacted(disguised):
    assert redact(f"I am {disguised}, hi.", TERMS) == f"I am {REDACTED}, hi."


@pytest.mark.parametrize(
    "text",
    [
        "open air",
        "an open-air concert",
        "The door was wide open. AI can help.",  # a sentence's end, not one separator
        "leave it open\nAI helps",
        "deep-seated, seek deeply",
        "chat, GPS and email",
        "x ai",  # a one-letter part is no camel-case part ("xAI" stays whole)
        "OpenAL audio",
        "Open Aid",
    ],
)
def test_ordinary_words_near_a_camel_case_name_pass_untouched(text):
    assert redact(text, TERMS) == text


@pytest.mark.parametrize("disguised", ["Deep Seek", "Open-AI"])
def test_a_camel_case_name_in_parts_is_never_shown_in_a_stream(disguised):
    expected = f"I am {REDACTED}, hi."
    for first, whole in streamed(f"I am {disguised}, hi."):
        assert expected.startswith(first)
        assert whole == expected


def test_showing_text_before_a_held_tail_leaves_the_tail_as_it_was():
    """The pacer keeps a hold while what it shows stays before the held tail: for the same
    text, every ``shown`` from the first up to the tail's start holds back the same tail."""
    import random

    pieces = ["Claude", "C l a u d e", "GPT-4o", "Anthro", "Deep", " Owl", "Il", "Lla", "ma", "Me"]
    pieces += list(" .-_*,;:()⟨⟩0123456789\n\t") + ["\u200b", "С", "ＧＰ", "é", "ﬁ", "\u202e"]
    pieces += ["\u202c", "我是", "\x7f", "Ⓒ", "–", "ı", "ß", "\n\n", "C", "l", "a", "u", "d", "e"]
    rng = random.Random(28)
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
        shown = rng.randint(0, len(text))
        held = name_tail(text, shown, TERMS)
        for later in range(shown, len(text) - held + 1):
            assert name_tail(text, later, TERMS) == held, (text, shown, later)
