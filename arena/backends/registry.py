"""Backend kinds: the one list of them, which also supplies the model field's choices.

Each kind is one module; adding one means one line here (name, label, class).
"""

from __future__ import annotations

from django.db import models

from arena.backends.anthropic import AnthropicBackend
from arena.backends.base import Backend
from arena.backends.gemini import GeminiBackend
from arena.backends.mock import MockBackend
from arena.backends.openai import OpenAIBackend
from arena.backends.openai_compatible import OpenAICompatibleBackend
from arena.backends.pools import PooledBackend

_KINDS: tuple[tuple[str, str, type[Backend]], ...] = (
    ("mock", "Mock (deterministic, in-process)", MockBackend),
    ("openai_compatible", "OpenAI-compatible (vLLM, TGI, Ollama, ...)", OpenAICompatibleBackend),
    ("openai", "OpenAI", OpenAIBackend),
    ("anthropic", "Anthropic Messages", AnthropicBackend),
    ("gemini", "Google Gemini", GeminiBackend),
)
_FACTORIES = {name: factory for name, _, factory in _KINDS}

# ModelEntry.backend's choices: Kind.MOCK == "mock", and so on.
Kind = models.TextChoices("Kind", [(name.upper(), (name, label)) for name, label, _ in _KINDS])


class UnknownBackend(LookupError):
    """A model names a kind this installation does not have."""


def backend_class(kind: str) -> type[Backend]:
    """The class of ``kind``: what it takes and can do (``takes_json_schema``)."""
    try:
        return _FACTORIES[kind]
    except KeyError:
        raise UnknownBackend(f"No backend of kind {kind!r} is installed.") from None


def backend_for(kind: str, settings: dict) -> Backend:
    factory = backend_class(kind)
    if settings.get("replicas"):
        return PooledBackend(settings, factory)
    return factory(settings)


def installed_kinds() -> list[str]:
    return sorted(_FACTORIES)
