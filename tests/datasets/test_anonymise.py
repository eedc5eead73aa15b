from __future__ import annotations

from collections import Counter

import pytest

from arena.datasets.anonymise import scrub

# (text, what must go, its placeholder)
PERSONAL = [
    ("Write to jane.doe+arena@example.co.uk today", "jane.doe+arena@example.co.uk", "[EMAIL]"),
    ("my mail: JOSÉ_99@mail-host.org.", "JOSÉ_99@mail-host.org", "[EMAIL]"),
    ("Card 4111 1111 1111 1111, exp 09/29", "4111 1111 1111 1111", "[CREDIT_CARD]"),
    ("pay with 5500-0000-0000-0004 please", "5500-0000-0000-0004", "[CREDIT_CARD]"),
    ("amex 378282246310005 ok", "378282246310005", "[CREDIT_CARD]"),
    ("ssh into 192.168.10.23 now", "192.168.10.23", "[IP_ADDRESS]"),
    ("Rebooting 10.20.30.40.", "10.20.30.40", "[IP_ADDRESS]"),
    ("the v6 host 2001:db8::8a2e:370:7334 is down", "2001:db8::8a2e:370:7334", "[IP_ADDRESS]"),
    ("call +44 20 7946 0958 after six", "+44 20 7946 0958", "[PHONE]"),
    ("or (415) 555-2671 in SF", "(415) 555-2671", "[PHONE]"),
    ("mobile 07911 123456 is mine", "07911 123456", "[PHONE]"),
    ("Ruf an: +49 30 901820", "+49 30 901820", "[PHONE]"),
    ("I live at 221B Baker Street, London NW1 6XE.", "221B Baker Street", "[ADDRESS]"),
    (
        "Send it to 1600 Pennsylvania Avenue NW, Washington, DC 20500 or else",
        "Pennsylvania Avenue",
        "[ADDRESS]",
    ),
    ("our office is 42 Wallaby Way, Sydney", "42 Wallaby Way", "[ADDRESS]"),
    ("Ship to 350 Fifth Avenue, New York, NY 10118 please", "New York, NY 10118", "[ADDRESS]"),
]

# Ordinary text the rules must leave alone.
PLAIN = [
    "Python 3.11.4 came out in 2023; pi is 3.14159265358979.",
    "Meet at 12:30:45 on 2024-05-01, room 101.",
    "The function returns 4111111111111112 when it overflows.",
    "Step 3 moves the 2 small disks; version 10.2.1 fixed it, and 1.2.3.4.5 too.",
    "we walked 3 more streets and took the 2 roads home",
    "A train travels 120 km in 1.5 hours. What is its average speed in metres per second?",
    "a@b is not an address, nor is user@localhost",
]


@pytest.mark.parametrize(("text", "secret", "placeholder"), PERSONAL)
def test_personal_data_becomes_a_typed_placeholder(text, secret, placeholder):
    counts = Counter()
    out = scrub(text, counts)

    assert secret not in out and placeholder in out
    assert sum(counts.values()) >= 1


@pytest.mark.parametrize("text", PLAIN)
def test_ordinary_numbers_and_words_stay(text):
    counts = Counter()
    assert scrub(text, counts) == text
    assert counts == Counter()


def test_the_text_around_a_replacement_is_kept():
    assert scrub("Mail bob@example.com or call (415) 555-2671, thanks!") == (
        "Mail [EMAIL] or call [PHONE], thanks!"
    )
