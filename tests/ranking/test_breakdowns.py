"""Boards' names and chips: the tags in display order by LMArena's names, then curated
categories, languages by name; a curated category worded as a tag says it is the curated one."""

from __future__ import annotations

from ranking.breakdowns import chips, label


def test_chips_list_tags_in_display_order_then_curated_categories_and_languages_by_name():
    categories = ["writing", "hard", "code", "coding", "math"]
    keys = [f"category:{c}" for c in categories] + [f"language:{c}" for c in "fr de xx zh".split()]
    categories, languages = chips(keys)
    assert [c.label for c in categories] == [
        "coding",
        "math",
        "hard prompts",
        "coding (curated)",
        "writing",
    ]
    assert [c.key for c in categories][:2] == ["category:code", "category:math"]
    assert [c.label for c in languages] == ["Chinese", "French", "German", "xx"]
    assert label("all") == "all" and label("category:multi_turn") == "multi-turn"
