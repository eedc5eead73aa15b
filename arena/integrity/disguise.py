"""Protected names however an answer disguises them (pure).

A model told not to name itself, or a prompt asking it to slip its name past the filter, can
write ``C l a u d e``, ``ClaudeAI``, ``Сlaude`` (a Cyrillic С), ``Cl\u200baude`` (a zero-width
space), ``ＧＰＴ`` (fullwidth) or ``A-n-t-h-r-o-p-i-c``. Each is found by matching on a
*skeleton* of the text rather than the text itself:

* every character is NFKD-folded (fullwidth, mathematical and circled letters to plain ones,
  ligatures apart), its combining marks dropped (``Claúde``) and its case folded;
* Cyrillic and Greek look-alikes of Latin letters are mapped to them (an explicit table below:
  the common ones, which is what a disguise uses);
* invisible characters (Unicode category Cf, such as zero-width spaces and joiners, bidi
  controls, soft hyphens, and a few fillers that are not Cf) are dropped;
* a capital ``I`` stays apart, since it looks like both ``i`` and ``l`` (``CIaude``).

Each skeleton character remembers which character of the original it came from, so a match
is replaced whole, invisible characters and all, in the original text.

A name matches written whole (its own words joined by up to three separators or none:
``Deep Owl``, ``DeepOwl``), or spelt out with one or two separators (space, dot, dash,
underscore, ``*``, ``·``) between *every* pair of its letters: ``C l a u d e``, ``G.P.T.``.
Spelling out only in places is not a disguise but ordinary text: "I met a friend" is not
"Meta". A name runs on into a version (``GPT-4o``, ``Llama3.1``, ``gemini-2.5-pro``) and may
be glued to a plural or a short suffix (``GPTs``, ``ClaudeAI``, ``ClaudeBot``), but a name
inside a longer word is ordinary text ("egypt", "metaphor", "Claudette"). A name may follow
or precede text in scripts written without spaces (``我是Claude模型``).
"""

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
    # Dashes and dots that separate spelt-out letters as well as ASCII ones do
    "‐": "-", "‑": "-", "‒": "-", "–": "-", "—": "-", "―": "-", "−": "-", "•": ".",
    "‧": ".", "∙": ".", "⋅": ".",
}  # fmt: skip
# Invisible, though not category Cf: Hangul fillers, the braille blank.
_INVISIBLE = frozenset("\u115f\u1160\u3164\uffa0\u2800")
_DROPPED = frozenset(("Cf", "Mn", "Me", "Cc"))

# Scripts written without spaces between words: a name may run straight into their text.
_UNSPACED = (
    "\u0e00-\u0eff\u1000-\u109f\u1100-\u11ff\u1780-\u17ff\u2e80-\u2fff\u3040-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff66-\uff9f"
    "\U00020000-\U0003ffff"
)
_WORD = rf"(?:(?![{_UNSPACED}])\w)"  # a letter, digit or underscore a name cannot follow
_LETTER = rf"(?:(?![{_UNSPACED}])[^\W\d_])"  # a letter a name cannot run into
_SEP = r"[\s._\-*·]"
_WORDS_SEP = rf"{_SEP}{{0,3}}"  # between a name's own words: "Deep Owl", "DeepOwl"
_SPELT_SEP = rf"{_SEP}{{1,2}}"  # between every letter of a name spelt out
_SPELT_MIN = 3  # letters a name needs before spelling it out is a disguise, not chance

# What may follow a name as part of it: a version and a variant ("GPT-4o", "Claude-3.5",
# "gemini-2.5-pro", "Llama3.1"), then a plural or short suffix glued on ("GPTs", "ClaudeAI").
_VERSION = r"(?:[0-9]+(?:\.[0-9]+)*[a-zI]*)?(?:-[a-zI0-9]+(?:\.[0-9]+)*)*"
_GLUED = r"(?:s|es|a[iI]|bot)?"
# The same, cut off anywhere: a tail still arriving.
_SUFFIX_SO_FAR = r"[0-9a-zI.\-]*"
_SUFFIX_ROOM = 24  # skeleton characters of suffix a held tail may grow by

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


def skeleton(text: str) -> tuple[str, list[int] | None]:
    """The text's skeleton, and for each of its characters the index in ``text`` it came from
    (None: the same index, when the text is plain ASCII)."""
    if text.isascii():
        return text.translate(_ASCII_FOLD), None
    chars: list[str] = []
    origin: list[int] = []
    for i, ch in enumerate(text):
        folded = fold_char(ch)
        chars.append(folded)
        origin.extend([i] * len(folded))
    return "".join(chars), origin


def _span(origin: list[int] | None, size: int, start: int, end: int) -> tuple[int, int]:
    """A skeleton match's span in the original text: its first character, through any
    dropped (invisible) characters up to the next character that remains."""
    if origin is None:
        return start, end
    last = origin[end - 1] + 1
    return origin[start], max(last, origin[end] if end < len(origin) else size)


def _letter(c: str) -> str:
    # A capital I in the text may stand for an i or an l.
    return {"i": "[iI]", "l": "[lI]"}.get(c) or re.escape(c)


def _units(term: str) -> list[list[str]]:
    """A term's skeleton as its words' letters: "Deep Owl" -> [[d, e, e, p], [o, w, l]]."""
    folded = "".join(fold_char(c) for c in term).replace("I", "i")
    return [list(word) for word in re.split(r"[\W_]+", folded) if word]


def _forms(term: str) -> list[list[tuple[str, str]]]:
    """Each way of writing the term, as (separator before, letter) pairs: whole, and (when it
    is long enough) spelt out letter by letter."""
    words = _units(term)
    whole = [("" if j else _WORDS_SEP, _letter(c)) for w in words for j, c in enumerate(w)]
    if not whole:
        return []
    whole[0] = ("", whole[0][1])
    forms = [whole]
    letters = [_letter(c) for w in words for c in w]
    if len(letters) >= _SPELT_MIN:
        forms.append([("" if not k else _SPELT_SEP, c) for k, c in enumerate(letters)])
    return forms


def _whole(form: list[tuple[str, str]]) -> str:
    return "".join(sep + c for sep, c in form)


def _prefix(form: list[tuple[str, str]]) -> str:
    """Any beginning of the form, as far as its first letter."""
    rest = ""
    for sep, c in reversed(form[1:]):
        rest = f"(?:{sep}(?:{c}{rest})?)?" if sep else f"(?:{c}{rest})?"
    return form[0][1] + rest


def _sorted_forms(terms: tuple[str, ...]) -> list[list[tuple[str, str]]]:
    clean = sorted({t.strip() for t in terms if t and t.strip()})
    forms = [f for t in clean for f in _forms(t)]
    # Longest first, so "ChatGPT" is tried before "GPT" and a whole name before a shorter one.
    return sorted(forms, key=len, reverse=True)


class NamePattern:
    """Every protected name, disguised or not, found in the original text."""

    def __init__(self, terms: tuple[str, ...]) -> None:
        names = "|".join(_whole(f) for f in _sorted_forms(terms))
        self.regex = re.compile(rf"(?<!{_WORD})(?:{names}){_VERSION}{_GLUED}(?!{_LETTER})")

    def spans(self, text: str) -> list[tuple[int, int]]:
        skel, origin = skeleton(text)
        return [_span(origin, len(text), *m.span()) for m in self.regex.finditer(skel)]

    def search(self, text: str) -> tuple[int, int] | None:
        found = self.spans(text)
        return found[0] if found else None

    def sub(self, replacement: str, text: str) -> str:
        """``text`` with every name, and whatever hid it, replaced by ``replacement``."""
        spans = self.spans(text)
        if not spans:
            return text
        out: list[str] = []
        at = 0
        for start, end in spans:
            out += [text[at:start], replacement]
            at = end
        out.append(text[at:])
        return "".join(out)


@lru_cache(maxsize=32)
def name_pattern(terms: tuple[str, ...]) -> NamePattern | None:
    return NamePattern(terms) if _sorted_forms(terms) else None


@lru_cache(maxsize=32)
def _tail_pattern(terms: tuple[str, ...]) -> tuple[re.Pattern[str], int] | None:
    forms = _sorted_forms(terms)
    if not forms:
        return None
    prefixes = "|".join(_prefix(f) for f in forms)
    names = "|".join(_whole(f) for f in forms)
    pattern = re.compile(rf"(?<!{_WORD})(?:(?:{names}){_SUFFIX_SO_FAR}|{prefixes})\Z")
    # The most skeleton characters a name's tail can take: spelt out, two separators a letter.
    longest = max(len(f) for f in forms) * 3 + _SUFFIX_ROOM
    return pattern, longest


def held_tail(text: str, shown: int, terms: tuple[str, ...]) -> int:
    """How many characters at the end of ``text`` (past the first ``shown``) could be the
    start of a protected name, however disguised, or a whole name whose suffix may still be
    arriving: they must wait for more text before they are shown."""
    found = _tail_pattern(terms)
    if found is None:
        return 0
    pattern, longest = found
    end = len(text)
    # Back from the end by skeleton characters, not the text's: a run of invisible
    # characters inside a name must not push its beginning out of reach.
    lo, size = end, 0
    while lo > shown and size < longest:
        lo -= 1
        size += len(fold_char(text[lo]))
    # And one visible character before that, if any, for the word boundary.
    context = lo
    while context > 0 and not fold_char(text[context - 1]):
        context -= 1
    context = max(0, context - 1)
    skel, origin = skeleton(text[context:end])
    pos = lo - context
    if origin is not None:
        pos = next((k for k, i in enumerate(origin) if i >= lo - context), len(skel))
    match = pattern.search(skel, pos)
    if match is None:
        return 0
    start = match.start() if origin is None else origin[match.start()]
    return end - (context + start)
