"""Backend kinds: the one list of them. Each kind is one module whose class declares its kind,
label, settings schema and capabilities (``base.BackendKind``); adding one means one line in
``KINDS``. From that list come the model field's choices, ``backend_for`` and the model
form's settings check.

The check runs when settings are saved, so a typo ("timeout"), a wrong type ("timeout_s":
"soon") or a bad URL is a form error then, not a failed battle later. Keys ending ``_env`` or
``_file`` name where a secret is read from (``secrets.secret``) and are strings. URLs are held
to ``outbound.url_problems`` (no credentials in them, no inward addresses unless an operator
allowed them); a pool's health check to ``health_problems``.
"""

from __future__ import annotations

from django.db import models

from arena.backends import checks, pools
from arena.backends.anthropic import AnthropicBackend
from arena.backends.base import Backend, BackendKind
from arena.backends.gemini import GeminiBackend
from arena.backends.mock import MISBEHAVIOURS, MockBackend
from arena.backends.openai import OpenAIBackend
from arena.backends.openai_compatible import OpenAICompatibleBackend
from arena.backends.outbound import url_problems
from arena.backends.secrets import key_destination_problem

KINDS: tuple[type[BackendKind], ...] = (
    MockBackend,
    OpenAICompatibleBackend,
    OpenAIBackend,
    AnthropicBackend,
    GeminiBackend,
)
_CLASSES = {cls.kind: cls for cls in KINDS}

# ModelEntry.backend's choices: Kind.MOCK == "mock", and so on.
Kind = models.TextChoices("Kind", [(cls.kind.upper(), (cls.kind, cls.label)) for cls in KINDS])


class UnknownBackend(LookupError):
    """A model names a kind this installation does not have."""


def backend_class(kind: str) -> type[BackendKind]:
    """The class of ``kind``: what it takes and can do (``takes_json_schema``,
    ``takes_images``)."""
    try:
        return _CLASSES[kind]
    except KeyError:
        raise UnknownBackend(f"No backend of kind {kind!r} is installed.") from None


def images_problem(kind: str) -> str:
    """Why a model of ``kind`` may not be marked as reading images (its class cannot carry
    them: ``takes_images``); "" when it may."""
    cls = _CLASSES.get(kind)
    if cls is None or cls.takes_images:
        return ""  # an unknown kind is refused by the model field's choices
    return (
        f"The {cls.label} backend cannot send images to a model, so a model it serves cannot "
        "be marked as reading images."
    )


def backend_for(kind: str, settings: dict) -> Backend:
    factory = backend_class(kind)
    if settings.get("replicas"):
        return pools.PooledBackend(settings, factory)
    return factory(settings)


def installed_kinds() -> list[str]:
    return sorted(_CLASSES)


def _schema(cls: type[BackendKind]) -> dict[str, checks.Check]:
    return {**pools.SETTINGS, **cls.settings_schema}


def settings_help() -> str:
    """Each kind's settings keys, and the mock's misbehaviours: the model form's help."""
    kinds = "; ".join(f"{cls.kind}: {', '.join(sorted(_schema(cls)))}" for cls in KINDS)
    faults = ", ".join(MISBEHAVIOURS)
    return f"Keys each backend takes. {kinds}. The mock's misbehaviours: {faults}."


def settings_problems(kind: str, settings: dict) -> list[str]:
    """What is wrong with ``settings`` for a backend of ``kind``; empty when they are fine."""
    cls = _CLASSES.get(kind)
    if cls is None:
        return []  # the kind itself is refused by the model field's choices
    schema = _schema(cls)
    problems = []
    for key, value in settings.items():
        if key.lower().endswith(("_env", "_file")):
            check = checks.text
        elif key in schema:
            check = schema[key]
        else:
            known = ", ".join(sorted(schema))
            problems.append(f"'{key}' is not a setting of this backend (it takes: {known}).")
            continue
        if should := check(value):
            problems.append(f"'{key}' must be {should}.")
        elif check is checks.url:
            problems += url_problems(value, key)
    if not settings.get("replicas") and "health" in settings:
        problems += pools.health_problems(settings)
    return problems + pools.replica_problems(settings) + _key_destinations(cls, settings)


def _key_destinations(cls: type[BackendKind], settings: dict) -> list[str]:
    """A vendor's key (``secrets.VENDOR_KEY_HOSTS``) goes only to its own API: checked for
    the base URL and every replica, with the key each would use."""
    default_env = getattr(cls, "default_key_env", None)
    default_url = getattr(cls, "default_base_url", "")
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
