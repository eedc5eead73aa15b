"""OpenAI's own Chat Completions API: the OpenAI-compatible adapter, with OpenAI's names.

Settings: as for ``openai_compatible``, except that ``base_url`` defaults to
https://api.openai.com/v1, the key to the environment variable OPENAI_API_KEY, and usage is
always requested.
"""

from __future__ import annotations

from arena.backends import checks
from arena.backends.base import ChatRequest
from arena.backends.http import HTTPBackend
from arena.backends.openai_compatible import OpenAICompatibleBackend

DEFAULT_KEY_ENV = "OPENAI_API_KEY"


class OpenAIBackend(OpenAICompatibleBackend):
    kind = "openai"
    label = "OpenAI"
    # Usage is always asked for: no include_usage.
    settings_schema = {**HTTPBackend.settings_schema, "structured_output": checks.flag}
    default_base_url = "https://api.openai.com/v1"
    default_key_env = DEFAULT_KEY_ENV

    def body(self, request: ChatRequest) -> dict:
        body = super().body(request)
        # OpenAI deprecated max_tokens, and its reasoning models reject it outright.
        if "max_tokens" in body:
            body["max_completion_tokens"] = body.pop("max_tokens")
        # Cost accounting reads the usage chunk, and OpenAI always accepts stream_options.
        body["stream_options"] = {"include_usage": True}
        return body
