"""OpenAI-compatible chat completions, streamed: vLLM, TGI's Messages API, SGLang, Ollama,
llama.cpp server, LM Studio, OpenRouter, xAI, and OpenAI itself.

Settings: ``base_url`` (up to and including ``/v1``), ``api_key_env`` or ``api_key_file``,
``headers`` (extra, non-secret), ``timeout_s``, ``include_usage`` (default true: ask for the
final usage chunk; set false for servers that reject ``stream_options``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx

from arena.backends import base, checks
from arena.backends.http import HTTPBackend, JSONStream

FINISH_ERRORS = {"content_filter": "content_filter", "refusal": "refused"}


class OpenAICompatibleBackend(HTTPBackend):
    # No default base URL, and no key required: local servers (vLLM, Ollama...) often run
    # without one.
    kind = "openai_compatible"
    label = "OpenAI-compatible (vLLM, TGI, Ollama, ...)"
    settings_schema = {
        **HTTPBackend.settings_schema,
        "include_usage": checks.flag,
        "structured_output": checks.flag,
    }
    takes_json_schema = True  # OpenAI's response_format, which vLLM and others accept too
    # image_url parts with data URLs: OpenAI, OpenRouter, vLLM and Ollama's vision models.
    takes_images = True

    def url(self, request: base.ChatRequest) -> str:
        return f"{self.base_url}/chat/completions"

    def auth_headers(self, key: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"} if key else {}

    def body(self, request: base.ChatRequest) -> dict:
        body: dict = {
            "model": request.model_id,
            "messages": [{"role": m.role, "content": _content(m)} for m in request.messages],
            "stream": True,
            **request.params,
        }
        if self.settings.get("include_usage", True):
            body["stream_options"] = {"include_usage": True}
        return body

    async def parse(self, response: httpx.Response) -> AsyncIterator[base.Event]:
        finish: str | None = None
        # OpenRouter and others report failures in a 200 stream: JSONStream ends it with them.
        stream = JSONStream(
            response,
            id_key="id",
            usage_key="usage",
            request_id=response.headers.get("x-request-id"),
            end="[DONE]",
        )
        async for chunk in stream.chunks():
            if not isinstance(chunk, dict):
                yield chunk  # the id, or the error that ends the stream
                if isinstance(chunk, base.StreamError):
                    return
                continue
            for choice in chunk.get("choices") or []:
                if choice.get("index", 0) != 0:
                    continue  # one answer was asked for; a server sending more, the first
                delta = choice.get("delta") or {}
                # vLLM and DeepSeek send reasoning_content, OpenRouter reasoning.
                thinking = delta.get("reasoning_content") or delta.get("reasoning")
                if thinking and isinstance(thinking, str):
                    yield base.ReasoningDelta(thinking)
                text = delta.get("content")
                if text:
                    yield base.TextDelta(text)
                if delta.get("refusal"):
                    yield base.StreamError("refused", "The model refused to answer.")
                    return
                if choice.get("finish_reason"):
                    finish = choice["finish_reason"]
        # [DONE] or the stream's end: the finish is terminal (some servers send no [DONE]);
        # without a finish reason the stream was cut, which the caller reports.
        if finish is not None:
            yield _finished(finish, stream.usage, stream.request_id)

    def complete(self, data: object) -> list[base.Event]:
        """A ``chat.completion`` object: servers and proxies that ignore ``stream: true``."""
        if not isinstance(data, dict):
            return []
        choices = [c for c in data.get("choices") or [] if c.get("index", 0) == 0]
        if not choices:
            return []
        text = (choices[0].get("message") or {}).get("content") or ""
        finish = choices[0].get("finish_reason") or "stop"
        events: list[base.Event] = [base.Identified(data["id"])] if data.get("id") else []
        if text:
            events.append(base.TextDelta(text))
        return [*events, _finished(finish, data.get("usage"), data.get("id"))]


def _content(message: base.Message) -> str | list[dict]:
    """A message's content: its text as a string, as ever, unless it carries images; then
    content parts, the images (as data URLs) before the text they come with."""
    if not message.images:
        return message.content
    parts: list[dict] = [
        {"type": "image_url", "image_url": {"url": image.data_url()}} for image in message.images
    ]
    if message.content:
        parts.append({"type": "text", "text": message.content})
    return parts


def _finished(finish: str, usage: dict | None, request_id: str | None) -> base.Event:
    if finish in FINISH_ERRORS:
        kind = FINISH_ERRORS[finish]
        return base.StreamError(kind, f"The backend stopped the answer ({finish}).")  # type: ignore[arg-type]
    usage = usage or {}
    return base.Finished(
        finish_reason=finish,
        input_tokens=usage.get("prompt_tokens"),
        output_tokens=usage.get("completion_tokens"),
        request_id=request_id,
    )
