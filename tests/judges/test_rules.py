"""What a judge must not see (names masked) and whom it must not judge (its own family)."""

from __future__ import annotations

from arena.judges import rules as judge


def test_names_are_masked_as_whole_words_in_any_case():
    text = "As Zephyr Quill (zq-large-001) by nimbus research, unlike GPT-4o; quilled."
    masked = judge.mask(text, ("Zephyr Quill", "zq-large-001", "Nimbus Research", "GPT"))
    assert masked == "As [MODEL] ([MODEL]) by [MODEL], unlike [MODEL]; quilled."


def test_a_family_is_the_vendor_or_the_prefix_of_an_openrouter_id():
    assert judge.family(vendor="Anthropic", model_id="claude-3") == "anthropic"
    assert judge.family(vendor="", model_id="anthropic/claude-3.5-sonnet") == "anthropic"
    assert judge.family(vendor="", model_id="gpt-4o") == ""
