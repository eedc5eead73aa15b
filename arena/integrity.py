"""Pure integrity checks: identity questions and leaks, the reading-time floor."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

REDACTED = "[model name]"


@lru_cache(maxsize=8)
def _questions(patterns: tuple[str, ...]) -> list[re.Pattern[str]]:
    return [re.compile(p, re.IGNORECASE) for p in patterns]


def asks_identity(text: str, patterns: Iterable[str]) -> bool:
    """Does the prompt ask a model who it is or who made it?"""
    return any(p.search(text) for p in _questions(tuple(patterns)))


@lru_cache(maxsize=32)
def identity_pattern(terms: tuple[str, ...]) -> re.Pattern[str] | None:
    """One regex for every name, on word boundaries; longest first so 'ChatGPT' beats 'GPT'."""
    clean = sorted({t.strip() for t in terms if t and t.strip()}, key=len, reverse=True)
    if not clean:
        return None
    alternatives = "|".join(re.escape(t) for t in clean)
    # Not inside a longer Latin word ("Metaphor"), but "GPT-4", "Claude's" and names run
    # into CJK text ("我是Claude模型") still count.
    return re.compile(rf"(?<![A-Za-z0-9_])(?:{alternatives})(?![A-Za-z])", re.IGNORECASE)


def identity_mentions(text: str, terms: tuple[str, ...]) -> list[str]:
    pattern = identity_pattern(terms)
    return sorted({m.group(0) for m in pattern.finditer(text)}) if pattern else []


def redact(text: str, terms: tuple[str, ...]) -> str:
    pattern = identity_pattern(terms)
    return pattern.sub(REDACTED, text) if pattern else text


def reading_floor_ms(chars: int, *, chars_per_s: float, min_ms: int) -> int:
    """The least time a rater needs to read ``chars`` characters of answers."""
    return max(min_ms, int(chars / chars_per_s * 1000)) if chars_per_s > 0 else min_ms
