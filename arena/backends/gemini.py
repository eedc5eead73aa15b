"""Google's Gemini API (generativelanguage), streamed as server-sent events.

Settings: ``base_url`` (default https://generativelanguage.googleapis.com/v1beta),
``api_key_env`` (default GEMINI_API_KEY) or ``api_key_file``, ``headers`` (extra, non-secret),
``timeout_s``. The key travels in a header, never in the URL, so it cannot leak into logs or
exception text that quote the URL.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import AsyncIterator

import httpx

from arena.backends import base
from arena.backends.errors import safe_code
from arena.backends.http import HTTPBackend, JSONStream

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"
DEFAULT_KEY_ENV = "GEMINI_API_KEY"

FINISH_REASONS = {"STOP": "stop", "MAX_TOKENS": "length"}
BLOCKED = {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"}
PARAMS = {"temperature": "temperature", "top_p": "topP", "max_tokens": "maxOutputTokens"}
_RETRY_DELAY = re.compile(r'"retryDelay"\s*:\s*"(\d+(?:\.\d+)?)s"')


class GeminiBackend(HTTPBackend):
    kind = "gemini"
    label = "Google Gemini"
    default_base_url = DEFAULT_BASE_URL
    default_key_env = DEFAULT_KEY_ENV
    requires_key = True
    takes_images = True  # inlineData parts

    def auth_headers(self, key: str | None) -> dict[str, str]:
        return {"x-goog-api-key": key or ""}

    def body(self, request: base.ChatRequest) -> dict:
        contents: list[dict] = []
        system: list[dict] = []
        for m in request.messages:
            if not (m.content or m.images):
                continue  # Gemini rejects empty parts
            if m.role == "system":
                system.append({"text": m.content})
                continue
            role = "model" if m.role == "assistant" else "user"
            # The REST reference's spelling (inlineData, mimeType), images before their text.
            parts = [{"inlineData": {"mimeType": i.content_type, "data": i.base64()}}
                     for i in m.images]  # fmt: skip
            parts += [{"text": m.content}] if m.content else []
            if contents and contents[-1]["role"] == role:
                contents[-1]["parts"] += parts
            else:
                contents.append({"role": role, "parts": parts})
        body: dict = {"contents": contents}
        if system:
            body["systemInstruction"] = {"parts": system}
        config = {PARAMS[k]: v for k, v in request.params.items() if k in PARAMS}
        if config:
            body["generationConfig"] = config
        return body

    def url(self, request: base.ChatRequest) -> str:
        # Model ids are listed as "models/gemini-..."; either spelling is accepted here.
        model = request.model_id.removeprefix("models/")
        return f"{self.base_url}/models/{model}:streamGenerateContent"

    def query(self) -> dict[str, str] | None:
        return {"alt": "sse"}

    async def parse(self, response: httpx.Response) -> AsyncIterator[base.Event]:
        stream = JSONStream(response, id_key="responseId", usage_key="usageMetadata")
        async for chunk in stream.chunks():
            if not isinstance(chunk, dict):
                yield chunk  # the id, or the error that ends the stream
                continue
            blocked = (chunk.get("promptFeedback") or {}).get("blockReason")
            if blocked:
                named = safe_code(blocked) or "no reason given"
                yield base.StreamError("content_filter", f"The prompt was blocked ({named}).")
                return
            candidates = chunk.get("candidates") or []
            if not candidates:
                continue
            candidate = candidates[0]
            for part in (candidate.get("content") or {}).get("parts") or []:
                if part.get("thought"):
                    if part.get("text"):  # thought summaries: kept apart from the answer
                        yield base.ReasoningDelta(part["text"])
                    continue
                if part.get("text"):
                    yield base.TextDelta(part["text"])
            # The last chunk often carries text, the finish reason and the final usage together,
            # so the terminal event comes only after the whole chunk is read.
            reason = candidate.get("finishReason")
            if reason and reason != "FINISH_REASON_UNSPECIFIED":
                yield _finished(reason, stream.usage, stream.request_id)
                return

    def refine(self, error: base.StreamError, body: str) -> base.StreamError:
        """Gemini's quirks the shared status mapping cannot know."""
        if error.kind == "bad_request" and (
            "API_KEY_INVALID" in body or "API key not valid" in body
        ):
            # Gemini answers a wrong key with 400, not 401.
            return dataclasses.replace(error, kind="auth")
        if error.kind == "rate_limited" and error.retry_after_s is None:
            # Gemini puts the wait in the body (google.rpc.RetryInfo), not in Retry-After.
            delay = _RETRY_DELAY.search(body)
            if delay:
                return dataclasses.replace(error, retry_after_s=float(delay.group(1)))
        return error


def _finished(reason: str, usage: dict, request_id: str | None) -> base.Event:
    if reason in BLOCKED:
        return base.StreamError("content_filter", f"The answer was blocked ({reason}).")
    if reason == "LANGUAGE":
        return base.StreamError("bad_request", "The model does not support the prompt's language.")
    output = [usage.get(k) for k in ("candidatesTokenCount", "thoughtsTokenCount")]
    return base.Finished(
        finish_reason=FINISH_REASONS.get(reason, reason.lower()),
        input_tokens=usage.get("promptTokenCount"),
        # Thinking is billed as output, as OpenAI and Anthropic count it in theirs.
        output_tokens=sum(n for n in output if n) if any(n is not None for n in output) else None,
        request_id=request_id,
    )
