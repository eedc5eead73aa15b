"""Pure integrity checks: identity questions and leaks, the reading-time floor."""

from __future__ import annotations

import re
from functools import lru_cache

REDACTED = "[model name]"
_WORD_CHAR = re.compile(r"[A-Za-z0-9_]")

# Prompts asking a model who it is, in English, Chinese, Spanish, French, German, Japanese.
IDENTITY_QUESTIONS = (
    r"\b(what|which)\s+(ai\s+|language\s+)?model\s+(are|is)\s+(you|this)\b",
    r"\bwho\s+(made|created|built|trained|developed)\s+you\b",
    r"\bwho\s+are\s+you\b",
    r"\bare\s+you\s+(chat)?gpt\b",
    r"\bwhat('s|\s+is)\s+your\s+name\b",
    r"\bwhich\s+(company|lab|organi[sz]ation)\s+(made|created|built|trained)\s+you\b",
    r"你是哪个模型",
    r"tu\s+es\s+quel\s+mod[èe]le",
    r"c[óo]mo\s+te\s+llamas",
    r"wie\s+hei(ß|ss)t\s+du",
    r"\bwhat\s+is\s+your\s+name\b",
    r"\bare\s+you\s+(gpt|claude|gemini|llama)",
    r"你是谁",
    r"你是什么模型",
    r"谁(开发|训练|创造|制造)了你",
    r"你叫什么",
    r"qui[ée]n\s+eres",
    r"qu[ée]\s+modelo\s+eres",
    r"qui[ée]n\s+te\s+(cre[óo]|entren[óo]|hizo)",
    r"qui\s+es[- ]tu",
    r"quel\s+mod[èe]le\s+es[- ]tu",
    r"qui\s+t['’]a\s+(cr[ée]{2}|entra[îi]n[ée])",
    r"wer\s+bist\s+du",
    r"welches\s+modell\s+bist\s+du",
    r"wer\s+hat\s+dich\s+(erstellt|trainiert|entwickelt|gemacht)",
    r"あなたは誰",
    r"あなたはだれ",
    r"何のモデル",
    r"どのモデル",
    r"誰が(あなたを)?(作|開発|訓練)",
)


_QUESTIONS = [re.compile(p, re.IGNORECASE) for p in IDENTITY_QUESTIONS]


def asks_identity(text: str) -> bool:
    """Does the prompt ask a model who it is or who made it?"""
    return any(p.search(text) for p in _QUESTIONS)


# What may follow a name as part of it: a version and a variant ("GPT-4o", "Claude-3.5",
# "gemini-2.5-pro", "Llama3.1"), so the whole token is redacted, not all but "-4".
_SUFFIX = r"(?:[0-9]+(?:\.[0-9]+)*[A-Za-z]*)?(?:-[A-Za-z0-9]+(?:\.[0-9]+)*)*"
# The same, cut off anywhere: a tail still arriving.
_SUFFIX_SO_FAR = r"[0-9A-Za-z.\-]*"
_SUFFIX_ROOM = 24  # characters of suffix a held tail may grow by


def _alternatives(terms: tuple[str, ...]) -> str:
    clean = sorted({t.strip() for t in terms if t and t.strip()}, key=len, reverse=True)
    return "|".join(re.escape(t) for t in clean)


@lru_cache(maxsize=32)
def identity_pattern(terms: tuple[str, ...]) -> re.Pattern[str] | None:
    """One regex for every name, with its version suffix, on word boundaries; longest first so
    'ChatGPT' beats 'GPT'."""
    alternatives = _alternatives(terms)
    if not alternatives:
        return None
    # Not inside a longer Latin word ("Metaphor"), but "GPT-4", "Claude's" and names run
    # into CJK text ("我是Claude模型") still count.
    return re.compile(rf"(?<![A-Za-z0-9_])(?:{alternatives}){_SUFFIX}(?![A-Za-z])", re.IGNORECASE)


@lru_cache(maxsize=32)
def _name_prefixes(terms: tuple[str, ...]) -> tuple[frozenset[str], int, re.Pattern[str] | None]:
    clean = [t.strip().lower() for t in terms if t and t.strip()]
    prefixes = frozenset(t[:k] for t in clean for k in range(1, len(t) + 1))
    alternatives = _alternatives(terms)
    whole = (
        re.compile(rf"(?:{alternatives}){_SUFFIX_SO_FAR}", re.IGNORECASE) if alternatives else None
    )
    return prefixes, max(map(len, clean), default=0), whole


def name_tail(text: str, shown: int, terms: tuple[str, ...]) -> int:
    """How many characters at the end of ``text`` (past the first ``shown``) could be the
    start of a protected name, or a whole name whose version suffix may still be arriving,
    and so must wait for more text before they are shown.

    Only such a tail is held back: one that begins where a name may begin (as in
    ``identity_pattern``: not right after a Latin letter, digit or underscore) and reads,
    ignoring case, as the beginning of some term, or as a term and a suffix so far.
    """
    prefixes, longest, whole = _name_prefixes(terms)
    end = len(text)
    for start in range(max(shown, end - longest - _SUFFIX_ROOM), end):
        if start and _WORD_CHAR.match(text[start - 1]):
            continue
        tail = text[start:end]
        if tail.lower() in prefixes or (whole is not None and whole.fullmatch(tail)):
            return end - start
    return 0


def redact(text: str, terms: tuple[str, ...]) -> str:
    pattern = identity_pattern(terms)
    return pattern.sub(REDACTED, text) if pattern else text


def reading_floor_ms(chars: int, *, chars_per_s: float, min_ms: int) -> int:
    """The least time a rater needs to read ``chars`` characters of answers."""
    return max(min_ms, int(chars / chars_per_s * 1000)) if chars_per_s > 0 else min_ms


def has_finding(findings: list[dict] | None, reason: str) -> bool:
    """Does a battle's list of findings (``Battle.integrity_flags``) hold one for ``reason``?"""
    return any(f["reason"] == reason for f in findings or [])
