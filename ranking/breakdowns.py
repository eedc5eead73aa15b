"""Boards' names as people read them, and the order the leaderboard's chips list them in.

A board's key is "all", "category:<tag or curated category>" or "language:<ISO 639-1 code>"
(``compute.breakdown_masks``); the keys stay as they are in URLs and downloads.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf.locale import LANG_INFO

from arena.tagging.selectors import TAGS

# The tags' names as LMArena's category list words them.
TAG_NAMES = {
    "code": "coding",
    "math": "math",
    "creative_writing": "creative writing",
    "instruction_following": "instruction following",
    "hard": "hard prompts",
    "long_query": "longer query",
    "multi_turn": "multi-turn",
    "vision": "vision (with images)",
}
# Languages Django has no plain entry for (it names Chinese by script only).
_LANGUAGE_NAMES = {"zh": "Chinese"}


@dataclass(frozen=True)
class Chip:
    key: str  # the board's key: ?breakdown=<key>
    label: str
    title: str  # what the label stands for, e.g. the language's code


def language_name(code: str) -> str:
    """English name of an ISO 639-1 code; the code itself when Django does not know it."""
    return _LANGUAGE_NAMES.get(code) or LANG_INFO.get(code, {}).get("name") or code


def chip(key: str) -> Chip:
    kind, _, value = key.partition(":")
    if kind == "language":
        return Chip(key, language_name(value), f"prompts in {value}")
    if kind == "category":
        if value in TAG_NAMES:
            return Chip(key, TAG_NAMES[value], f"prompts tagged {value}")
        return Chip(key, value, f"prompts of the curated category {value}")
    return Chip(key, "all", "every prompt")


def label(key: str) -> str:
    """A board's name for a page: "coding", "French", "all"."""
    return chip(key).label


def chips(keys: list[str]) -> tuple[list[Chip], list[Chip]]:
    """The category chips (the tags in `TAGS` order, then curated categories by name) and the
    language chips (by name) for a snapshot's board keys."""
    order = {f"category:{t}": i for i, t in enumerate(TAGS)}
    categories = [chip(k) for k in keys if k.startswith("category:")]
    # A curated category worded as a tag's name ("coding", beside the tag code) says which.
    tag_labels = {c.label for c in categories if c.key in order}
    categories = [
        Chip(c.key, f"{c.label} (curated)", c.title)
        if c.key not in order and c.label in tag_labels
        else c
        for c in categories
    ]
    categories.sort(key=lambda c: (order.get(c.key, len(order)), c.label.casefold()))
    languages = [chip(k) for k in keys if k.startswith("language:")]
    languages.sort(key=lambda c: c.label.casefold())
    return categories, languages
