"""The skeleton a text's protected names are looked for on (pure; integrity.disguise says
what it folds and why): every character folded to what it passes for, invisible ones gone,
with where each skeleton character came from."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

# Look-alikes that NFKD leaves alone, to the Latin letter they pass for. Upper and lower case
# both: case folding comes after, and an upper and a lower case letter can pass for different
# letters (Greek Η looks like H, η like n).
_LOOKALIKES = {
    # Cyrillic
    "А": "a", "а": "a", "В": "b", "в": "b", "Ь": "b", "ь": "b", "С": "c", "с": "c",
    "Ԁ": "d", "ԁ": "d", "Е": "e", "е": "e", "Ё": "e", "ё": "e", "Һ": "h", "һ": "h",
    "Н": "h", "н": "h", "І": "I", "і": "i", "Ї": "I", "ї": "i", "Ӏ": "I", "ӏ": "I",
    "Ј": "j", "ј": "j", "К": "k", "к": "k", "М": "m", "м": "m", "О": "o", "о": "o",
    "Р": "p", "р": "p", "Ԛ": "q", "ԛ": "q", "Ѕ": "s", "ѕ": "s", "Т": "t", "т": "t",
    "Ԝ": "w", "ԝ": "w", "Х": "x", "х": "x", "У": "y", "у": "y", "Ү": "y", "ү": "y",
    # Greek
    "Α": "a", "α": "a", "Β": "b", "β": "b", "Ϲ": "c", "ϲ": "c", "Ε": "e", "ε": "e",
    "Η": "h", "η": "n", "Ι": "I", "ι": "i", "Κ": "k", "κ": "k", "Μ": "m", "μ": "u",
    "Ν": "n", "ν": "v", "Ο": "o", "ο": "o", "Ρ": "p", "ρ": "p", "Τ": "t", "τ": "t",
    "Υ": "y", "υ": "u", "Χ": "x", "χ": "x", "Ζ": "z", "γ": "y", "ω": "w", "Ϝ": "f",
    # Latin letters that pass for others
    "ı": "i", "ȷ": "j", "ɡ": "g", "ɑ": "a", "ɩ": "i", "ʟ": "l", "ᴄ": "c", "ᴏ": "o",
    "ǀ": "I", "ℓ": "l",
    # Hyphens and dots that separate spelt-out letters as well as ASCII ones do; a dash, as
    # punctuation ("Claude—an assistant"), is a space, not the start of a version.
    "‐": "-", "‑": "-", "‒": "-", "−": "-", "–": " ", "—": " ", "―": " ", "•": ".",
    "‧": ".", "∙": ".", "⋅": ".",
}  # fmt: skip
# Invisible, though not category Cf: Hangul fillers, the braille blank; and the control
# characters Python counts as whitespace that a page shows as nothing (not as a space): only
# tab, line feed, vertical tab, form feed and carriage return of the controls stay.
_INVISIBLE = frozenset("\u115f\u1160\u3164\uffa0\u2800\x1c\x1d\x1e\x1f\x85")
_DROPPED = frozenset(("Cf", "Mn", "Me", "Cc"))
# Plain ASCII but for these (the controls fold_char drops) is its own skeleton, case aside.
_ASCII_DROPPED = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")

_ASCII_FOLD = str.maketrans(
    "ABCDEFGHJKLMNOPQRSTUVWXYZ", "abcdefghjklmnopqrstuvwxyz"
)  # "I" stays apart


@lru_cache(maxsize=8192)
def fold_char(ch: str) -> str:
    """The skeleton of one character: none, one or (a ligature, a compatibility form) more."""
    if ch in _LOOKALIKES:
        return _LOOKALIKES[ch]
    if ch in _INVISIBLE or (unicodedata.category(ch) in _DROPPED and not ch.isspace()):
        return ""
    out = []
    for c in unicodedata.normalize("NFKD", ch):
        if unicodedata.category(c) in _DROPPED and not c.isspace():
            continue
        c = _LOOKALIKES.get(c, c)
        out.append(c if c == "I" else c.casefold())
    return "".join(out)


def plain(text: str) -> bool:
    """Is the text its own skeleton character for character: ASCII, none of it dropped?"""
    return text.isascii() and not _ASCII_DROPPED.search(text)


# Tables for str.translate, filled in as characters are met (fold_char's results): most text
# (accented letters, punctuation, an emoji, CJK) folds one character to one, and is then
# folded in one C-level pass with no index map, as plain ASCII is. A bound on what is kept,
# since every character of Unicode could be sent.
_TABLE_MAX = 8192


class _ManyTable(dict):
    """ord -> None for a character whose skeleton is one character, else itself: what is left
    of a text translated by it are the characters that fold to none or to several."""

    def __missing__(self, key: int) -> int | None:
        kept = None if len(fold_char(chr(key))) == 1 else key
        if len(self) < _TABLE_MAX:
            self[key] = kept
        return kept


# Stands for a character whose skeleton is not one character, in a text folded by ``_ONE``: a
# private-use character, which folds to itself, so a text holding one itself is only folded
# the slow way (``one_skeleton`` says None), never wrongly.
_MARK = "\ue0ff"


class _OneTable(dict):
    """ord -> the character's skeleton if it is one character, else ``_MARK``: a text is
    folded and checked for one character each in a single pass (``one_skeleton``)."""

    def __missing__(self, key: int) -> str:
        folded = fold_char(chr(key))
        one = folded if len(folded) == 1 else _MARK
        if len(self) < _TABLE_MAX:
            self[key] = one
        return one


_MANY = _ManyTable()
_ONE = _OneTable()


def one_to_one(text: str) -> bool:
    """Does each character of the text fold to exactly one skeleton character?"""
    return plain(text) or not text.translate(_MANY)


def one_skeleton(text: str) -> str | None:
    """The text's skeleton when each of its characters folds to exactly one (its indices are
    the text's), else None: one pass over the text, where ``one_to_one`` then ``skeleton``
    take two or three."""
    if plain(text):
        return text.translate(_ASCII_FOLD)
    folded = text.translate(_ONE)
    return None if _MARK in folded else folded


def skeleton(text: str) -> tuple[str, list[int] | None]:
    """The text's skeleton, and for each of its characters the index in ``text`` it came from
    (None: the same index, when each character folds to exactly one)."""
    folded = one_skeleton(text)
    if folded is not None:
        return folded, None
    if not text.translate(_MANY):  # one each after all: the text holds ``_MARK`` itself
        return text.translate(_ONE), None
    chars: list[str] = []
    origin: list[int] = []
    for i, ch in enumerate(text):
        folded = fold_char(ch)
        chars.append(folded)
        origin.extend([i] * len(folded))
    return "".join(chars), origin
