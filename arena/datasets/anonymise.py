"""Personal data in free text -> typed placeholders, for the open dataset (pure, offline).

Phone numbers are found by ``phonenumbers`` (Google's libphonenumber, maintained) and full
postal addresses by ``pyap2`` (US, Canadian and British forms); neither loads a model or reaches
the network. Emails, IP addresses, card numbers and bare street lines ("221B Baker Street") are
rules, each tested in tests/datasets/test_anonymise.py: a card number must pass the Luhn check
and an IP address must parse as one, so version strings and ordinary numbers stay.

Kinds run in a fixed order, each over the text the earlier ones left: a card number is replaced
before the phone matcher can read its digits as a phone, an email before its domain looks like
an address.
"""

from __future__ import annotations

import ipaddress
import re
from collections import Counter
from collections.abc import Callable, Iterator

import phonenumbers
import pyap

from arena.core.text import spans_merged

PLACEHOLDERS = {
    "email": "[EMAIL]",
    "credit_card": "[CREDIT_CARD]",
    "ip_address": "[IP_ADDRESS]",
    "phone": "[PHONE]",
    "street_address": "[ADDRESS]",
}

Span = tuple[int, int]

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}", re.UNICODE)
# 13 to 19 digits, optionally grouped by single spaces or dashes, not inside a longer number.
_CARD = re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])")
# Not part of a longer dotted number (a version 1.2.3.4.5); a sentence's full stop may follow.
_IPV4 = re.compile(r"(?<!\d)(?<!\d\.)(?:\d{1,3}\.){3}\d{1,3}(?!\.?\d)")
# Candidates only: ipaddress decides. Hex groups with colons, '::' compression allowed.
_IPV6 = re.compile(r"(?<![\w:])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:])")
_STREET_TYPES = (
    "street|st|avenue|ave|road|rd|boulevard|blvd|lane|ln|drive|dr|court|ct|place|pl|"
    "square|sq|terrace|way|parkway|pkwy|highway|hwy|crescent|close|gardens|grove|"
    "strasse|straße|rue|allee"
)
# "221B Baker Street", "1600 Pennsylvania Ave NW": a house number, one to four capitalised
# words, a street type. Capitals keep "3 more lines" or "the 2 roads" prose out.
_STREET = re.compile(
    r"\b\d{1,5}[A-Za-z]?,?\s+(?:[A-Z][\w'’.-]*\s+){1,4}(?:" + _STREET_TYPES + r")\b\.?"
    r"(?:\s+(?:N|S|E|W|NE|NW|SE|SW)\b)?",
    re.IGNORECASE,
)
_STREET_WORDS = re.compile(r"\s+")
_TRAILING_WORD = re.compile(r"[\s,]+(?:or|and|to|at|in|for|please|then)\W*$")
_PHONE_REGIONS = ("US", "GB")


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        n = int(ch)
        if i % 2 == 1:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
    return total % 10 == 0


def _emails(text: str) -> Iterator[Span]:
    for m in _EMAIL.finditer(text):
        yield m.span()


def _cards(text: str) -> Iterator[Span]:
    for m in _CARD.finditer(text):
        digits = re.sub(r"\D", "", m.group())
        if 13 <= len(digits) <= 19 and _luhn(digits):
            yield m.span()


def _ips(text: str) -> Iterator[Span]:
    for pattern in (_IPV4, _IPV6):
        for m in pattern.finditer(text):
            try:
                ipaddress.ip_address(m.group())
            except ValueError:
                continue
            yield m.span()


def _phones(text: str) -> Iterator[Span]:
    # International numbers (+44 ...) match under any region; national ones need their
    # region's rules, so the two most common here are tried. VALID: a real numbering plan.
    for region in _PHONE_REGIONS:
        for m in phonenumbers.PhoneNumberMatcher(text, region, phonenumbers.Leniency.VALID):
            yield m.start, m.end


def _street_line_ok(match: re.Match) -> bool:
    # The capitalised-words rule is case-sensitive where the street type is not.
    words = _STREET_WORDS.split(match.group().strip())[1:-1]
    return all(w[:1].isupper() for w in words if w.upper() not in {"N", "S", "E", "W"})


def _addresses(text: str) -> Iterator[Span]:
    for country in ("US", "CA", "GB"):
        for address in pyap.parse(text, country=country):
            # Without a postcode pyap reads prose as addresses ("120 km in 1.5 hours. What is
            # its average speed in": "in" taken for Indiana); a bare street line is the rule's.
            if not address.postal_code:
                continue
            start, end = address.match_start, address.match_end
            # pyap's match may carry a trailing connective ("... DC 20500 or"): give it back.
            tail = _TRAILING_WORD.search(text, start, end)
            yield start, tail.start() if tail else end
    for m in _STREET.finditer(text):
        if _street_line_ok(m):
            yield m.span()


FINDERS: tuple[tuple[str, Callable[[str], Iterator[Span]]], ...] = (
    ("email", _emails),
    ("credit_card", _cards),
    ("ip_address", _ips),
    ("phone", _phones),
    ("street_address", _addresses),
)


def scrub(text: str, counts: Counter[str] | None = None) -> str:
    """``text`` with every email, card number, IP address, phone number and street address
    replaced by its kind's placeholder; ``counts`` (if given) gains one per replacement."""
    for kind, finder in FINDERS:
        if not text:
            break
        spans = spans_merged(list(finder(text)))
        if not spans:
            continue
        placeholder = PLACEHOLDERS[kind]
        pieces, last = [], 0
        for start, end in spans:
            pieces += [text[last:start], placeholder]
            last = end
        pieces.append(text[last:])
        text = "".join(pieces)
        if counts is not None:
            counts[kind] += len(spans)
    return text
