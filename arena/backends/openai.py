"""OpenAI's own Chat Completions API: the OpenAI-compatible adapter, with OpenAI's names.

Settings: as for ``openai_compatible``, except that ``base_url`` defaults to
https://api.openai.com/v1, the key to the environment variable OPENAI_API_KEY, and usage is
always requested.
"""

from __future__ import annotations

from arena.backends.base import ChatRequest
from arena.backends.http import with_default_key
from arena.backends.openai_compatible import OpenAICompatibleBackend

DEFAULT_KEY_ENV = "OPENAI_API_KEY"


class OpenAIBackend(OpenAICompatibleBackend):
    default_base_url = "https://api.openai.com/v1"

    def __init__(self, settings: dict) -> None:
        super().__init__(with_default_key(settings, DEFAULT_KEY_ENV))

    def _body(self, request: ChatRequest) -> dict:
        body = super()._body(request)
        # OpenAI deprecated max_tokens, and its reasoning models reject it outright.
        if "max_tokens" in body:
            body["max_completion_tokens"] = body.pop("max_tokens")
        # Cost accounting reads the usage chunk, and OpenAI always accepts stream_options.
        body["stream_options"] = {"include_usage": True}
        return body
