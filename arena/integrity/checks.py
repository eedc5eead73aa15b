"""Pure integrity checks: identity questions and leaks, the reading-time floor."""

from __future__ import annotations

import re
from functools import lru_cache

REDACTED = "[model name]"

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


def redact(text: str, terms: tuple[str, ...]) -> str:
    pattern = identity_pattern(terms)
    return pattern.sub(REDACTED, text) if pattern else text


def reading_floor_ms(chars: int, *, chars_per_s: float, min_ms: int) -> int:
    """The least time a rater needs to read ``chars`` characters of answers."""
    return max(min_ms, int(chars / chars_per_s * 1000)) if chars_per_s > 0 else min_ms


def has_finding(findings: list[dict] | None, reason: str) -> bool:
    """Does a battle's list of findings (``Battle.integrity_flags``) hold one for ``reason``?"""
    return any(f["reason"] == reason for f in findings or [])
