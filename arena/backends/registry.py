"""Backend kinds by name: one module per kind, looked up here."""

from __future__ import annotations

from collections.abc import Callable

from arena.backends.anthropic import AnthropicBackend
from arena.backends.base import Backend
from arena.backends.gemini import GeminiBackend
from arena.backends.mock import MockBackend
from arena.backends.openai import OpenAIBackend
from arena.backends.openai_compatible import OpenAICompatibleBackend

_KINDS: dict[str, Callable[[dict], Backend]] = {
    "mock": MockBackend,
    "openai_compatible": OpenAICompatibleBackend,
    "openai": OpenAIBackend,
    "anthropic": AnthropicBackend,
    "gemini": GeminiBackend,
}


def register(kind: str, factory: Callable[[dict], Backend]) -> None:
    _KINDS[kind] = factory


def backend_for(kind: str, settings: dict) -> Backend:
    try:
        factory = _KINDS[kind]
    except KeyError:
        raise LookupError(f"No backend of kind {kind!r} is installed.") from None
    if settings.get("replicas"):
        from arena.backends.pools import PooledBackend

        return PooledBackend(settings, factory)
    return factory(settings)


def installed_kinds() -> list[str]:
    return sorted(_KINDS)
