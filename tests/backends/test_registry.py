"""Every vendor kind is registered, with its vendor's defaults."""

from __future__ import annotations

import pytest

from arena.backends.anthropic import AnthropicBackend
from arena.backends.gemini import GeminiBackend
from arena.backends.openai import OpenAIBackend
from arena.backends.registry import (
    KINDS,
    UnknownBackend,
    backend_class,
    backend_for,
    installed_kinds,
    settings_problems,
)


def test_vendor_kinds_are_registered_with_vendor_defaults():
    assert {"openai", "anthropic", "gemini", "openai_compatible"} <= set(installed_kinds())
    assert isinstance(backend_for("openai", {}), OpenAIBackend)
    assert OpenAIBackend({}).base_url == "https://api.openai.com/v1"
    assert OpenAIBackend({}).settings["api_key_env"] == "OPENAI_API_KEY"
    assert OpenAIBackend({"api_key_file": "/run/secrets/k"}).settings.get("api_key_env") is None
    assert AnthropicBackend({}).base_url == "https://api.anthropic.com/v1"
    assert GeminiBackend({}).base_url == "https://generativelanguage.googleapis.com/v1beta"


def test_each_kind_says_whether_it_takes_a_json_schema():
    takes = {kind: backend_class(kind).takes_json_schema for kind in installed_kinds()}
    assert takes == {
        "mock": False,
        "openai_compatible": True,
        "openai": True,
        "anthropic": False,
        "gemini": False,
    }
    with pytest.raises(UnknownBackend):
        backend_class("telegraph")


def test_the_model_fields_choices_and_settings_check_come_from_the_backend_classes():
    from arena.catalog.models import ModelEntry

    assert ModelEntry.Backend.choices == [(cls.kind, cls.label) for cls in KINDS]
    assert ModelEntry.Backend.OPENAI_COMPATIBLE == "openai_compatible"
    # A kind's own key, and a pool's key every kind takes.
    assert settings_problems("anthropic", {"max_tokens": 1024, "queue": "gpu"}) == []
    assert settings_problems("gemini", {"max_tokens": 1024}) == [
        "'max_tokens' is not a setting of this backend (it takes: base_url, fail_threshold, "
        "first_token_timeout_s, headers, health, max_concurrency, probe_interval_s, queue, "
        "replicas, slow_start_s, timeout_s)."
    ]
