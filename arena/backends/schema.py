"""What a model's backend settings may hold, by kind, and of what type.

The model form checks settings against this when they are saved, so a typo ("timeout"), a wrong
type ("timeout_s": "soon") or a bad URL is a form error then, not a failed battle later. Keys
ending ``_env`` or ``_file`` name where a secret is read from (``secrets.secret``) and are
strings. URLs are held to ``outbound.url_problems`` (no credentials in them, no inward
addresses unless an operator allowed them); a pool's health check to ``health_problems``.
"""

from __future__ import annotations

from collections.abc import Callable

from arena.backends.anthropic import AnthropicBackend
from arena.backends.gemini import GeminiBackend
from arena.backends.mock import MISBEHAVIOURS, STYLES
from arena.backends.openai import OpenAIBackend
from arena.backends.outbound import url_problems
from arena.backends.pools import health_problems, replica_problems
from arena.backends.secrets import key_destination_problem

Check = Callable[[object], str]  # "" when the value is fine, else what it should be


def _url(value: object) -> str:
    ok = isinstance(value, str) and value.startswith(("http://", "https://"))
    return "" if ok else "a URL starting http:// or https://"


def _text(value: object) -> str:
    return "" if isinstance(value, str) else "a string"


def _flag(value: object) -> str:
    return "" if isinstance(value, bool) else "true or false"


def _number(*, low: float = 0.0, strict: bool = False) -> Check:
    def check(value: object) -> str:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        ok = ok and (value > low if strict else value >= low)
        return "" if ok else f"a number {'above' if strict else 'of at least'} {low:g}"

    return check


def _share(value: object) -> str:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1
    return "" if ok else "a share from 0 to 1"


def _count(value: object) -> str:
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 1
    return "" if ok else "a whole number of at least 1"


def _headers(value: object) -> str:
    ok = isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    )
    return "" if ok else "an object of header names to string values"


def _one_of(choices: tuple[str, ...]) -> Check:
    def check(value: object) -> str:
        return "" if value in choices else "one of " + ", ".join(repr(c) for c in choices)

    return check


def _any(value: object) -> str:
    return ""  # checked elsewhere (replicas: replica_problems)


# Every kind: which pool queue its answers go to, and a GPU pool's replicas and routing.
_POOL: dict[str, Check] = {
    "queue": _text,
    "replicas": _any,
    "max_concurrency": _count,
    "fail_threshold": _count,
    "probe_interval_s": _number(strict=True),
    "slow_start_s": _number(),
    "health": _any,  # {path, method, status, auth}: how a down replica is probed back
}
_HTTP: dict[str, Check] = {
    **_POOL,
    "base_url": _url,
    "headers": _headers,
    "timeout_s": _number(strict=True),
    "first_token_timeout_s": _number(strict=True),
}
SCHEMAS: dict[str, dict[str, Check]] = {
    "mock": {
        **_POOL,
        "ttft_ms": _number(),
        "tokens_per_s": _number(),
        "answer_tokens": _count,
        "style": _one_of(STYLES),
        "misbehaviour": _one_of(("", *MISBEHAVIOURS)),
        "prefix": _text,
        "timestamps": _flag,
        "judge": _flag,
        "judge_position_bias": _share,
        "judge_length_bias": _number(low=-10.0),
        "thinks": _number(),
        "base_url": _url,  # a pooled mock's replicas are mock servers
    },
    "openai_compatible": {**_HTTP, "include_usage": _flag, "structured_output": _flag},
    "openai": {**_HTTP, "structured_output": _flag},
    "anthropic": {**_HTTP, "max_tokens": _count},
    "gemini": _HTTP,
}


# Each vendor kind's own key variable and API, where its settings name neither.
_VENDOR_DEFAULTS: dict[str, tuple[str, str]] = {
    kind: (cls.default_key_env, cls.default_base_url)
    for kind, cls in (("openai", OpenAIBackend), ("anthropic", AnthropicBackend),
                      ("gemini", GeminiBackend))
    if cls.default_key_env
}  # fmt: skip


def _key_destinations(kind: str, settings: dict) -> list[str]:
    """A vendor's key (``secrets.VENDOR_KEY_HOSTS``) goes only to its own API: checked for
    the base URL and every replica, with the key each would use."""
    default_env, default_url = _VENDOR_DEFAULTS.get(kind, (None, ""))
    top = {k: v for k, v in settings.items() if k != "replicas"}
    replicas = settings.get("replicas")
    entries = [e for e in replicas if isinstance(e, dict)] if isinstance(replicas, list) else [{}]
    problems = []
    for entry in entries:
        conf = {**top, **entry}
        env = conf.get("api_key_env") or (None if conf.get("api_key_file") else default_env)
        if problem := key_destination_problem(env, conf.get("base_url") or default_url):
            problems.append(f"'api_key_env': {problem}")
    return list(dict.fromkeys(problems))


def settings_help() -> str:
    """Each kind's settings keys, and the mock's misbehaviours: the model form's help."""
    kinds = "; ".join(f"{kind}: {', '.join(sorted(keys))}" for kind, keys in SCHEMAS.items())
    faults = ", ".join(MISBEHAVIOURS)
    return f"Keys each backend takes. {kinds}. The mock's misbehaviours: {faults}."


def settings_problems(kind: str, settings: dict) -> list[str]:
    """What is wrong with ``settings`` for a backend of ``kind``; empty when they are fine."""
    schema = SCHEMAS.get(kind)
    if schema is None:
        return []  # the kind itself is refused by the model field's choices
    problems = []
    for key, value in settings.items():
        if key.lower().endswith(("_env", "_file")):
            check = _text
        elif key in schema:
            check = schema[key]
        else:
            known = ", ".join(sorted(schema))
            problems.append(f"'{key}' is not a setting of this backend (it takes: {known}).")
            continue
        if should := check(value):
            problems.append(f"'{key}' must be {should}.")
        elif check is _url:
            problems += url_problems(value, key)
    if not settings.get("replicas") and "health" in settings:
        problems += health_problems(settings)
    return problems + replica_problems(settings) + _key_destinations(kind, settings)
