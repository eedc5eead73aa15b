"""What a judge must not see (names masked) and whom it must not judge (its own family)."""

from __future__ import annotations

from arena.judges import rules as judge


def test_names_are_masked_as_whole_words_in_any_case():
    text = "As Zephyr Quill (zq-large-001) by nimbus research, unlike GPT-4o; quilled."
    masked = judge.mask(text, ("Zephyr Quill", "zq-large-001", "Nimbus Research", "GPT"))
    assert masked == "As [MODEL] ([MODEL]) by [MODEL], unlike [MODEL]; quilled."


def test_a_family_is_the_vendor_else_the_prefix_of_an_openrouter_id_else_the_organisation():
    assert judge.family(vendor="Anthropic", model_id="claude-3") == "anthropic"
    assert judge.family(vendor="", model_id="anthropic/claude-3.5-sonnet") == "anthropic"
    assert judge.family(vendor="", model_id="gpt-4o", organisation="OpenAI") == "openai"


def test_a_family_is_never_empty_so_a_model_named_by_nothing_else_is_its_own_family():
    assert judge.family(vendor="", model_id="gpt-4o") == "gpt-4o"
    assert judge.family(vendor=" ", model_id="", public_name="Quill") == "quill"
    assert judge.family(vendor="", model_id="") != ""


def test_a_judge_with_no_vendor_and_no_prefix_is_kept_from_its_organisations_models():
    from arena.catalog.models import ModelEntry

    judge_model = ModelEntry(public_name="Judge", model_id="j-1", organisation="Nimbus")
    sibling = ModelEntry(public_name="Quill", model_id="q-2", organisation="nimbus ")
    stranger = ModelEntry(public_name="Other", model_id="o-3")
    assert judge.judges_own_family(judge_model, sibling)
    assert not judge.judges_own_family(judge_model, stranger)
    assert judge.judges_own_family(stranger, ModelEntry(public_name="Twin", model_id="o-3"))
