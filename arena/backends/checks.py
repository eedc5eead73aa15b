"""The value checks a backend's settings schema is written in (each backend class declares
its keys with these: ``settings_schema``). A check returns "" when the value is fine, else
what it should be, for the model form's message."""

from __future__ import annotations

from collections.abc import Callable

Check = Callable[[object], str]


def url(value: object) -> str:
    ok = isinstance(value, str) and value.startswith(("http://", "https://"))
    return "" if ok else "a URL starting http:// or https://"


def text(value: object) -> str:
    return "" if isinstance(value, str) else "a string"


def flag(value: object) -> str:
    return "" if isinstance(value, bool) else "true or false"


def number(*, low: float = 0.0, strict: bool = False) -> Check:
    def check(value: object) -> str:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        ok = ok and (value > low if strict else value >= low)
        return "" if ok else f"a number {'above' if strict else 'of at least'} {low:g}"

    return check


def share(value: object) -> str:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1
    return "" if ok else "a share from 0 to 1"


def count(value: object) -> str:
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 1
    return "" if ok else "a whole number of at least 1"


def headers(value: object) -> str:
    ok = isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    )
    return "" if ok else "an object of header names to string values"


def one_of(choices: tuple[str, ...]) -> Check:
    def check(value: object) -> str:
        return "" if value in choices else "one of " + ", ".join(repr(c) for c in choices)

    return check


def elsewhere(value: object) -> str:
    return ""  # a structure checked as a whole (replicas, health: backends.pools)
