"""Protected names however an answer disguises them (pure).

A model told not to name itself, or a prompt asking it to slip its name past the filter, can
write ``C l a u d e``, ``ClaudeAI``, ``Сlaude`` (a Cyrillic С), ``Cl\\u200baude`` (a zero-width
space), ``ＧＰＴ`` (fullwidth) or ``A-n-t-h-r-o-p-i-c``. Each is found by matching on a
*skeleton* of the text rather than the text itself:

* every character is NFKD-folded (fullwidth, mathematical and circled letters to plain ones,
  ligatures apart), its combining marks dropped (``Claúde``) and its case folded;
* Cyrillic and Greek look-alikes of Latin letters are mapped to them (an explicit table below:
  the common ones, which is what a disguise uses);
* invisible characters (Unicode category Cf, such as zero-width spaces and joiners, bidi
  controls, soft hyphens; control characters but tab and line breaks, ``Clau\\x7fde``; and a
  few fillers) are dropped;
* a capital ``I`` stays apart, since it looks like both ``i`` and ``l`` (``CIaude``).

Each skeleton character remembers which character of the original it came from, so a match
is replaced whole, invisible characters and all, in the original text.

A name matches written whole (its own words joined by up to three separators or none:
``Deep Owl``, ``DeepOwl``; a camel-case name's parts by one or none: ``Deep Seek``,
``Open-AI``; markup that shows nothing between its letters: ``Cl**au**de``), or
spelt out with a separator (whitespace, or a dot, dash, underscore, ``*`` or ``·`` with a
little space around it) between *every* pair of its letters: ``C l a u d e``, ``G. P. T.``.
Spelling out only in places is not a disguise but ordinary text: "I met a friend" is not
"Meta". A name runs on into a version (``GPT-4o``, ``Llama3.1``, ``gemini-2.5-pro``) and may
be glued to a plural or a short suffix (``GPTs``, ``ClaudeAI``, ``ClaudeBot``), but a name
inside a longer word is ordinary text ("egypt", "metaphor", "Claudette"), spelt out too
("m e t a l", "c l a u d e t t e"; but "C l a u d e a model": one letter alone may be a
word of its own). A name may follow or precede text in scripts written without spaces
(``我是Claude模型``). A right-to-left override that shows a name reversed
(``\\u202eedualC``) is replaced whole.

Not caught: names translated or transliterated (``Клод``, ``克劳德``), leetspeak
(``Cl4ude``), reversed text without an override, look-alikes from scripts outside the table
(Armenian, Cherokee), descriptions ("the lab Dario Amodei founded"), and a name spelt out
inside a sentence spelt out whole ("C l a u d e a n d m e" reads as one word).
"""

from __future__ import annotations

import re
from functools import lru_cache

from arena.core.text import spans_merged
from arena.integrity.skeleton import fold_char, one_skeleton, one_to_one, skeleton

# Scripts written without spaces between words: a name may run straight into their text.
_UNSPACED = (
    "\u0e00-\u0eff\u1000-\u109f\u1100-\u11ff\u1780-\u17ff\u2e80-\u2fff\u3040-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff66-\uff9f"
    "\U00020000-\U0003ffff"
)
# A letter or digit a name cannot follow (an underscore it can: "_Claude_" is italics).
_WORD = rf"(?:(?![{_UNSPACED}])[^\W_])"
_LETTER = rf"(?:(?![{_UNSPACED}])[^\W\d_])"  # a letter a name cannot run into
_SEP = r"[\s._\-*·]"
_WORDS_SEP = rf"{_SEP}{{0,3}}"  # between a name's own words: "Deep Owl", "DeepOwl"
# Between every letter of a name spelt out: one mark with a little space around it, or
# whitespace alone (a browser shows a run of it as one space).
_SPELT_SEP = r"(?:[ \t]{0,3}[._\-*·][ \t]{0,3}|\s{1,8})"
# Three letters spelt out with a space before each mark are more often algebra ("x - a - i").
_SPELT_SEP_SHORT = r"(?:[._\-*·][ \t]{0,3}|\s{1,8})"
_SPELT_WIDTH = 9  # the most skeleton characters a spelt-out letter takes, with its separator
# Between the letters of a name written whole: markup the page renders as nothing visible
# between letters ("Cl**au**de", "Cl`au`de", "$C$laude").
_MARKUP = r"[*_~`$]{0,4}"
# Between the parts of a camel-case name: one separator, not a sentence's end ("open. AI").
_CAMEL_SEP = rf"{_MARKUP}(?:(?:[.\-]|[^\S\n]{{1,3}}){_MARKUP})?"
_SPELT_MIN = 3  # letters a name needs before spelling it out is a disguise, not chance

# What may follow a name as part of it: a version and a variant ("GPT-4o", "Claude-3.5",
# "gemini-2.5-pro", "Llama3.1"), then a plural or short suffix glued on ("GPTs", "ClaudeAI").
_VERSION = r"(?:[0-9]+(?:\.[0-9]+)*[a-zI]*)?(?:-[a-zI0-9]+(?:\.[0-9]+)*)*"
_GLUED = r"(?:s|es|a[iI]|bot)?"
_SUFFIX_ROOM = 24  # skeleton characters of suffix a held tail may grow by

# Separators and markup between letters; and i, l and a capital I made one letter. A tail
# read this loosely may only *begin* a name, so the looseness errs on the side of holding it
# back a little longer; a spelt-out run read so is still letter for letter.
_GAPS = re.compile(r"[\s._\-*·~`$]+")
_IL = str.maketrans("il", "II")


# What a name, however disguised, may take in the skeleton it is found on: letters and
# digits, separators, markup (_SEP, _MARKUP).
_IN_NAME = re.compile(r"[\w\s.\-*·~`$]")


@lru_cache(maxsize=8192)
def breaks_names(ch: str) -> bool:
    """Whether ``ch`` is in no name and no name reaches across it (a comma, a bracket, "。",
    an emoji): its skeleton is not empty and holds nothing a name may take."""
    folded = fold_char(ch)
    return bool(folded) and not any(_IN_NAME.match(c) for c in folded)


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


_HUMP = "\ue000"  # a private-use mark, kept by folding: where a camel-case word's parts meet


def _camel(word: str) -> list[str]:
    """A camel-case word's parts ("DeepSeek", "OpenAI", "GPTZero"), each at least two
    characters long ("xAI" and "iPhone" stay whole)."""
    cuts = [
        k
        for k in range(1, len(word))
        if word[k].isupper()
        and (word[k - 1].islower() or (word[k - 1].isupper() and word[k + 1 : k + 2].islower()))
    ]
    parts: list[str] = []
    for part in (word[a:b] for a, b in zip([0, *cuts], [*cuts, len(word)], strict=True)):
        if parts and (len(parts[-1]) < 2 or len(part) < 2):
            parts[-1] += part
        else:
            parts.append(part)
    return parts


def _parts(term: str) -> list[list[str]]:
    """A term's skeleton as its words, each as its camel-case parts: "Deep Owl" ->
    [["deep"], ["owl"]], "OpenAI" -> [["open", "ai"]]."""
    marked = re.sub(r"[^\W_]+", lambda m: _HUMP.join(_camel(m.group())), term)
    folded = "".join(fold_char(c) for c in marked).replace("I", "i")
    words = (w.split(_HUMP) for w in re.split(rf"(?:[^\w{_HUMP}]|_)+", folded))
    return [parts for w in words if (parts := [p for p in w if p])]


def _units(term: str) -> list[list[str]]:
    """A term's skeleton as its words' letters: "Deep Owl" -> [[d, e, e, p], [o, w, l]]."""
    return [list("".join(parts)) for parts in _parts(term)]


def _whole(term: str) -> str:
    """The term written whole, as a pattern: its words joined by a few separators or none,
    the parts of a camel-case word by one or none ("Deep Seek", "Open-AI"), markup allowed
    between its letters."""
    return _WORDS_SEP.join(
        _CAMEL_SEP.join(_MARKUP.join(_letter(c) for c in part) for part in parts)
        for parts in _parts(term)
    )


def _letters(term: str) -> str:
    """A term's letters alone, with i, l and I made one (how spelt-out runs are compared)."""
    return "".join("".join(w) for w in _units(term)).translate(_IL)


def _clean(terms: tuple[str, ...]) -> list[str]:
    # Longest first, so "ChatGPT" is tried before "GPT" and a whole name before a shorter one.
    clean = {t.strip() for t in terms if t and t.strip() and _units(t)}
    return sorted(clean, key=lambda t: (-len(_letters(t)), t))


# Runs of single letters or digits, each apart from the next by a separator: where a name
# spelt out can be. Spelt-out names are looked up in such a run rather than each written
# into the name pattern, which would make it several times longer (and slower to compile).
_SINGLE = rf"(?:(?![{_UNSPACED}])[^\W_])(?!{_WORD})"
_SPELT_RUN = re.compile(rf"(?<!{_WORD}){_SINGLE}(?:{_SPELT_SEP}{_SINGLE})+")
_SHORT_GAP = re.compile(_SPELT_SEP_SHORT)
_AFTER_NAME = re.compile(rf"{_VERSION}{_GLUED}(?!{_LETTER})")


# What may follow a spelt-out name in its own run of letters (letters alone, the separators
# gone): a version ("G P T 4 o") and a plural or short suffix, as after a name written whole.
_SPELT_AFTER = re.compile(rf"(?:[0-9]+[0-9a-zI]*)?{_GLUED}")
# A letter after a spelt-out name that is a word of its own, not more of the name's word:
# "I am C l a u d e a model" (in "m e t a l" and "c l a u d e t t e" the rest is one word).
_ONE_LETTER_WORDS = frozenset("aeiouyI")


def _spelt_end(skel: str, at: list[int], i: int, size: int) -> tuple[int, int] | None:
    """Where the name spelt out at letters ``i`` to ``i + size`` of a run ends, with any
    suffix, in the skeleton and in the run's letters; None if the letters after it in the
    same word make it part of a longer one.

    The word goes on while the letters are apart as the name's own are (a different
    separator, or a wider space, ends it: "C-l-a-u-d-e a-n-d"); as with a name written whole,
    the rest of it may only be a version or a suffix."""
    inside = {skel[a + 1 : at[k + 1]] for k, a in enumerate(at[i : i + size - 1], i)}
    j = i + size
    while j < len(at) and skel[at[j - 1] + 1 : at[j]] in inside:
        j += 1
    rest = "".join(skel[k] for k in at[i + size : j])
    if rest and not _SPELT_AFTER.fullmatch(rest):
        if rest not in _ONE_LETTER_WORDS:
            return None
        j = i + size  # a word after the name, not a suffix: it stays
    last = at[j - 1]
    after = _AFTER_NAME.match(skel, last + 1)
    return (after.end() if after else last + 1), j


def _spelt_spans(skel: str, spelt: dict[int, frozenset[str]]) -> list[tuple[int, int]]:
    """Names spelt out letter by letter in the skeleton, with any version after them."""
    found: list[tuple[int, int]] = []
    for run in _SPELT_RUN.finditer(skel):
        at = [k for k in range(*run.span()) if not _GAPS.match(skel, k)]
        letters = "".join(skel[k] for k in at).translate(_IL)
        i = 0
        while i < len(at):
            for size in sorted(spelt, reverse=True):
                if letters[i : i + size] not in spelt[size]:
                    continue
                gaps = zip(at[i : i + size - 1], at[i + 1 : i + size], strict=True)
                if size == _SPELT_MIN and not all(
                    _SHORT_GAP.fullmatch(skel, a + 1, b) for a, b in gaps
                ):
                    continue
                ends = _spelt_end(skel, at, i, size)
                if ends is None:
                    continue
                found.append((at[i], ends[0]))
                i = ends[1] - 1
                break
            i += 1
    return found


_RLO = "\u202e"
# An override runs to its pop, or the end of the paragraph.
_OVERRIDE_RUN = re.compile(r"\u202e[^\u202c]*?(?=\u202c|\n[ \t]*\n|\Z)")


class NamePattern:
    """Every protected name, disguised or not, found in the original text."""

    def __init__(self, terms: tuple[str, ...]) -> None:
        clean = _clean(terms)
        names = "|".join(_whole(t) for t in clean)
        self.regex = re.compile(rf"(?<!{_WORD})(?:{names}){_VERSION}{_GLUED}(?!{_LETTER})")
        spelt: dict[int, set[str]] = {}
        for t in clean:
            letters = _letters(t)
            if len(letters) >= _SPELT_MIN:
                spelt.setdefault(len(letters), set()).add(letters)
        self.spelt = {size: frozenset(names) for size, names in spelt.items()}

    def _skeleton_spans(self, skel: str) -> list[tuple[int, int]]:
        found = [m.span() for m in self.regex.finditer(skel)]
        return spans_merged(found + _spelt_spans(skel, self.spelt)) if self.spelt else found

    def spans(self, text: str) -> list[tuple[int, int]]:
        skel, origin = skeleton(text)
        found = [_span(origin, len(text), s, e) for s, e in self._skeleton_spans(skel)]
        if _RLO in text:
            # A right-to-left override shows what follows it backwards: "\u202eedualC" reads
            # "Claude". Such a run naming a model goes whole.
            for run in _OVERRIDE_RUN.finditer(text):
                if self._skeleton_spans(skeleton(run.group()[::-1])[0]):
                    found.append(run.span())
            found = spans_merged(found)
        return found

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
    return NamePattern(terms) if _clean(terms) else None


_SUFFIX_LETTERS = re.compile(r"[0-9a-zI]*")


@lru_cache(maxsize=32)
def _tail_index(
    terms: tuple[str, ...],
) -> tuple[frozenset[str], frozenset[str], int, re.Pattern] | None:
    """Every name's letters, every beginning of them, how far back a tail can reach, and where
    in a skeleton a name may begin (one of the names' first letters, not right after a letter
    or digit, as in the name pattern)."""
    names = {_letters(t) for t in _clean(terms)}
    if not names:
        return None
    prefixes = frozenset(n[:k] for n in names for k in range(1, len(n) + 1))
    # A name's letters have i, l and I made one (``_IL``): any of the three may begin it.
    firsts = "".join(sorted({c for n in names for c in ("ilI" if n[0] == "I" else n[0])}))
    # The letter first, so the regex engine skips to the next such letter in C; then the word
    # boundary, looked back at from after it.
    starts = re.compile(rf"[{re.escape(firsts)}](?<={_WORD})(?<!{_WORD}.)")
    # The most skeleton characters a name's tail can take: spelt out, with wide separators.
    return prefixes, frozenset(names), max(map(len, names)) * _SPELT_WIDTH + _SUFFIX_ROOM, starts


def _could_begin_name(tail: str, prefixes: frozenset[str], names: frozenset[str]) -> bool:
    """Does this skeleton tail read as the beginning of a name, or as a whole name with a
    version or suffix so far?"""
    if tail[:2].translate(_IL) not in prefixes and not _GAPS.match(tail, 1):
        return False  # the common case, cheaply: two letters that begin no name
    letters = _GAPS.sub("", tail).translate(_IL)
    if letters in prefixes:
        return True
    return any(
        letters[:k] in names and _SUFFIX_LETTERS.fullmatch(letters, k)
        for k in range(max(1, len(letters) - _SUFFIX_ROOM), len(letters))
    )


def _open_override(text: str, shown: int) -> int | None:
    """Where a right-to-left override still open at the end of the text (not yet shown)
    begins."""
    at = text.rfind(_RLO, shown)
    if at < 0 or "\u202c" in text[at:] or re.search(r"\n[ \t]*\n", text[at:]):
        return None
    return at


def _visible_before(text: str, at: int) -> int:
    """Where the last character before ``at`` that folds to something is (0 if none)."""
    context = at
    while context > 0 and not fold_char(text[context - 1]):
        context -= 1
    return max(0, context - 1)


def held_tail(text: str, shown: int, terms: tuple[str, ...]) -> int:
    """How many characters at the end of ``text`` (past the first ``shown``) could be the
    start of a protected name, however disguised, or a whole name whose suffix may still be
    arriving: they must wait for more text before they are shown.

    Showing text before the held tail does not change it: for the same text, any ``shown``
    from this one up to the tail's start gives the same answer (the pacer relies on it)."""
    found = _tail_index(terms)
    if found is None:
        return 0
    prefixes, names, longest, starts = found
    end = len(text)
    override = _open_override(text, shown)
    if override is not None:
        # Backwards text still arriving: its first characters shown are a name's last.
        return end - override
    # The common case first, in one pass: the last ``longest`` characters, and one visible
    # character before them for the word boundary, each fold to one skeleton character.
    lo = max(shown, end - longest)
    context = _visible_before(text, lo)
    skel = one_skeleton(text[context:end])
    origin = None
    if skel is None:
        # Back from the end by skeleton characters, not the text's: a run of invisible
        # characters inside a name must not push its beginning out of reach.
        lo, size = end, 0
        if one_to_one(text[max(shown, end - longest) : end]):  # one skeleton character each
            lo, size = max(shown, end - longest), longest
        while lo > shown and size < longest:
            lo -= 1
            size += len(fold_char(text[lo]))
        context = _visible_before(text, lo)
        skel, origin = skeleton(text[context:end])
    pos = lo - context
    if origin is not None:
        pos = next((k for k, i in enumerate(origin) if i >= lo - context), len(skel))
    # Where a name may begin (a letter or digit not right after another, as in the name
    # pattern), the first from which the rest reads as the beginning of some name.
    for begin in starts.finditer(skel, pos):
        k = begin.start()
        if _could_begin_name(skel[k:], prefixes, names):
            start = k if origin is None else origin[k]
            return end - (context + start)
    return 0
