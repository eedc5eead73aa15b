"""Tag sets in vote arrays, and the tags a battle log's row carries.

A vote may have several tags (coding and hard), so its tags are not one label per vote as its
language is: each vote holds a code into a list of the distinct tag sets seen (a few dozen
at most, however many votes), and a tag's board is the votes whose set holds it. Code -1 is a
vote with no tags yet. Pure: no Django, no project imports beyond ranking's own.

A public battle log (FastChat's) tags a row with ``category_tag``, a dict of labeller
versions, each a dict of verdicts (``{"math_v0.1": {"math": true}}``), and ``is_code``;
our exports add ``tags``, the list of names. `row_tags` reads all three as our tag names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np

NO_TAGS = -1  # the code of a vote not tagged yet

# FastChat's category names (a category_tag key without its version) -> our tag names; any
# other name is taken as it is.
FASTCHAT_NAMES = {"if": "instruction_following", "criteria": "hard", "is_code": "code"}
# FastChat's hard prompts: at least 6 of the 7 criteria (sum(criteria_v0.1.values()) >= 6).
HARD_CRITERIA = 6
_VERSION = re.compile(r"_v\d+(\.\d+)*$")


def _true(value: object) -> bool:
    """A verdict that says yes: JSON true only (1, "yes" and the like are not verdicts)."""
    return value is True


def category_tag_names(value: object) -> set[str]:
    """Our tag names from a FastChat ``category_tag``: a category whose verdict is true.

    A verdict is the category's own key inside its dict (``if_v0.1.if``), or the value itself
    when it is a bare boolean; ``criteria_v0.1`` is "hard" when at least `HARD_CRITERIA` of
    its criteria hold. Anything of another shape says nothing.
    """
    found: set[str] = set()
    if not isinstance(value, dict):
        return found
    for key, verdict in value.items():
        if not isinstance(key, str):
            continue
        name = _VERSION.sub("", key)
        if name == "criteria":
            held = isinstance(verdict, dict) and sum(map(_true, verdict.values()))
            if held and held >= HARD_CRITERIA:
                found.add("hard")
        elif _true(verdict) or (isinstance(verdict, dict) and _true(verdict.get(name))):
            found.add(FASTCHAT_NAMES.get(name, name))
    return found


def row_tags(category_tag: object, tags: object, is_code: object) -> frozenset[str]:
    """A log row's tags: its ``category_tag`` (FastChat), its ``tags`` (a list of names, as
    our exports write it) and FastChat's ``is_code``, together."""
    found = category_tag_names(category_tag)
    if isinstance(tags, list):
        found.update(t for t in tags if isinstance(t, str) and t)
    if _true(is_code):
        found.add("code")
    return frozenset(found)


class SetCodes(dict):
    """Tag set -> a dense code, a new one for each set not seen before (None: not tagged)."""

    def __init__(self) -> None:
        super().__init__()
        self.sets: list[frozenset[str]] = []
        self[None] = NO_TAGS

    def __missing__(self, key: frozenset[str]) -> int:
        code = self[key] = len(self.sets)
        self.sets.append(key)
        return code


def tag_codes(
    sets: Iterable[frozenset[str] | None], n: int
) -> tuple[np.ndarray, list[frozenset[str]]]:
    """Each vote's code (`NO_TAGS` for None) and the distinct sets the codes point into."""
    known = SetCodes()
    codes = np.fromiter(map(known.__getitem__, sets), np.int32, n)
    return codes, known.sets


def used_sets(codes: np.ndarray, sets: list[frozenset[str]]) -> tuple[np.ndarray, list]:
    """The codes renumbered to the sets some vote has (a set only rejected rows had, say, is
    dropped, so it makes no board); `NO_TAGS` stays."""
    used = np.bincount(codes[codes >= 0], minlength=len(sets)) > 0
    renumber = np.append(np.cumsum(used) - 1, NO_TAGS)  # index -1 (NO_TAGS) -> NO_TAGS
    return renumber[codes].astype(np.int32), [s for s, u in zip(sets, used, strict=True) if u]


def tag_masks(codes: np.ndarray, sets: list[frozenset[str]]) -> dict[str, np.ndarray]:
    """Per tag any set holds, the votes whose set holds it."""
    masks = {}
    for tag in sorted(set().union(*sets)):
        holds = np.array([tag in s for s in sets] + [False])  # the last: NO_TAGS
        masks[tag] = holds[codes]
    return masks
