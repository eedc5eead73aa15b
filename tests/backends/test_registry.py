"""Every vendor kind is registered, with its vendor's defaults."""

from __future__ import annotations

import pytest

from arena.backends.anthropic import AnthropicBackend
from arena.backends.gemini import GeminiBackend
from arena.backends.openai import OpenAIBackend
from arena.backends.registry import UnknownBackend, backend_class, backend_for, installed_kinds


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
