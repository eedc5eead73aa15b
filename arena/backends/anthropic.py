"""Anthropic's Messages API, streamed.

Settings: ``base_url`` (default https://api.anthropic.com/v1), ``api_key_env`` (default
ANTHROPIC_API_KEY) or ``api_key_file``, ``headers`` (extra, non-secret, e.g. anthropic-beta),
``timeout_s``, ``max_tokens`` (the model's maximum output, as the admin gives it: sent when a
run sets none, since the API requires one, and never exceeded; where the admin gives none,
8192, as seed 001 says).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx

from arena.backends import base, checks
from arena.backends.errors import mid_stream_error
from arena.backends.http import HTTPBackend, sse_events, stream_chunk

DEFAULT_BASE_URL = "https://api.anthropic.com/v1"
DEFAULT_KEY_ENV = "ANTHROPIC_API_KEY"
DEFAULT_MAX_TOKENS = 8192  # seed 001: the model's maximum where given, else 8192
API_VERSION = "2023-06-01"

STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
}


class AnthropicBackend(HTTPBackend):
    kind = "anthropic"
    label = "Anthropic Messages"
    settings_schema = {**HTTPBackend.settings_schema, "max_tokens": checks.count}
    default_base_url = DEFAULT_BASE_URL
    default_key_env = DEFAULT_KEY_ENV
    requires_key = True
    takes_images = True  # base64 image blocks

    def url(self, request: base.ChatRequest) -> str:
        return f"{self.base_url}/messages"

    def auth_headers(self, key: str | None) -> dict[str, str]:
        return {"x-api-key": key or "", "anthropic-version": API_VERSION}

    def body(self, request: base.ChatRequest) -> dict:
        system = [m.content for m in request.messages if m.role == "system" and m.content]
        turns: list[dict] = []
        for m in request.messages:
            # Anthropic rejects empty text blocks; skipping one can leave two turns of a role
            # side by side, and those are merged because the API wants them alternating.
            if m.role == "system" or not (m.content or m.images):
                continue
            if turns and turns[-1]["role"] == m.role:
                turns[-1]["content"] = _joined(turns[-1]["content"], m)
            else:
                turns.append({"role": m.role, "content": _content(m)})
        params = request.params
        ceiling = int(self.settings.get("max_tokens") or DEFAULT_MAX_TOKENS)
        body: dict = {
            "model": request.model_id,
            "messages": turns,
            "max_tokens": min(int(params.get("max_tokens") or ceiling), ceiling),
            "stream": True,
        }
        if system:
            body["system"] = "\n\n".join(system)
        if "temperature" in params:
            body["temperature"] = params["temperature"]
        # top_p = 1 samples exactly as leaving it out does, and recent Claude models refuse a
        # request that sets both temperature and top_p.
        if "top_p" in params and not ("temperature" in params and float(params["top_p"]) >= 1):
            body["top_p"] = params["top_p"]
        return body

    async def parse(self, response: httpx.Response) -> AsyncIterator[base.Event]:
        request_id = response.headers.get("request-id")
        input_tokens: int | None = None
        output_tokens: int | None = None
        stop_reason: str | None = None
        async for name, data in sse_events(response):
            payload = stream_chunk(data)
            if isinstance(payload, base.StreamError):
                yield payload
                return
            kind = payload.get("type") or name
            if kind == "message_start":
                message = payload.get("message") or {}
                if message.get("id"):
                    request_id = message["id"]
                    yield base.Identified(request_id)
                input_tokens = _input_tokens(message.get("usage") or {}, input_tokens)
            elif kind == "content_block_start":
                block = payload.get("content_block") or {}
                if block.get("type") == "text" and block.get("text"):
                    yield base.TextDelta(block["text"])
            elif kind == "content_block_delta":
                # Thinking is kept apart; signature and tool-input deltas are not kept.
                delta = payload.get("delta") or {}
                if delta.get("type") == "text_delta" and delta.get("text"):
                    yield base.TextDelta(delta["text"])
                elif delta.get("type") == "thinking_delta" and delta.get("thinking"):
                    yield base.ReasoningDelta(delta["thinking"])
            elif kind == "message_delta":
                stop_reason = (payload.get("delta") or {}).get("stop_reason") or stop_reason
                usage = payload.get("usage") or {}
                # message_delta counts are cumulative, so the last one is the total.
                if usage.get("output_tokens") is not None:
                    output_tokens = usage["output_tokens"]
                input_tokens = _input_tokens(usage, input_tokens)
            elif kind == "message_stop":
                yield _finished(stop_reason, input_tokens, output_tokens, request_id)
                return
            elif kind == "error":
                yield mid_stream_error(payload.get("error"))
                return
            # ping, content_block_stop and event types added later carry nothing the answer needs.


def _content(message: base.Message) -> str | list[dict]:
    """A turn's content: its text as a string, unless it carries images; then blocks, the
    images first (Anthropic's advice: Claude reads an image best before the text about it)."""
    if not message.images:
        return message.content
    blocks: list[dict] = [
        {"type": "image", "source": {"type": "base64", "media_type": image.content_type,
                                     "data": image.base64()}}
        for image in message.images
    ]  # fmt: skip
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    return blocks


def _joined(content: str | list[dict], message: base.Message) -> str | list[dict]:
    """Two turns of one role as one: text joined as it always was, blocks once either carries
    an image."""
    if isinstance(content, str) and not message.images:
        return content + "\n\n" + message.content
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    added = _content(message)
    return blocks + ([{"type": "text", "text": added}] if isinstance(added, str) else added)


def _input_tokens(usage: dict, current: int | None) -> int | None:
    if usage.get("input_tokens") is None:
        return current
    # Cached prompt tokens are counted apart from input_tokens; the prompt is all of them.
    return sum(
        int(usage.get(k) or 0)
        for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )


def _finished(
    stop_reason: str | None,
    input_tokens: int | None,
    output_tokens: int | None,
    request_id: str | None,
) -> base.Event:
    if stop_reason == "refusal":
        return base.StreamError("refused", "The model declined to answer (stop reason refusal).")
    return base.Finished(
        finish_reason=STOP_REASONS.get(stop_reason or "end_turn", stop_reason or "stop"),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        request_id=request_id,
    )
