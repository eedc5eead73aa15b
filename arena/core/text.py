"""Pure text helpers: prompt normalisation and hashing, style counts of an answer."""

from __future__ import annotations

import hashlib
import re
import unicodedata

_WS = re.compile(r"\s+")
_HEADER = re.compile(r"^ {0,3}#{1,6}\s+\S", re.MULTILINE)
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+\S", re.MULTILINE)
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*|__(?=\S)(.+?)(?<=\S)__", re.DOTALL)
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def spans_merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """(start, end) spans of a text, sorted, with those that overlap joined into one."""
    out: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if out and start < out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def text_clean(text: str) -> str:
    """Text as it may be stored and sent on: NUL bytes dropped (PostgreSQL refuses them) and
    lone surrogates, which no encoding can carry, replaced by U+FFFD."""
    if "\x00" in text:
        text = text.replace("\x00", "")
    return _LONE_SURROGATE.sub("\ufffd", text)


def normalise_prompt(text: str) -> str:
    """Unicode NFKC, case-folded, whitespace collapsed: two prompts that differ only so are one."""
    return _WS.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def prompt_hash(text: str) -> str:
    return hashlib.sha256(normalise_prompt(text).encode("utf-8")).hexdigest()


def estimate_tokens(text: str) -> int:
    """A vendor-neutral estimate (about four characters a token) for when usage is missing."""
    return 0 if not text else max(1, round(len(text) / 4))


def style_counts(text: str) -> dict[str, int]:
    """Markdown style features, outside code fences, as used by style-controlled ranking."""
    prose = _FENCE.sub("", text)
    return {
        "chars": len(text),
        "headers": len(_HEADER.findall(prose)),
        "list_items": len(_LIST_ITEM.findall(prose)),
        "bold": len(_BOLD.findall(prose)),
    }
