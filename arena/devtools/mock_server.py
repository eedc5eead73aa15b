"""The mock model served as a real OpenAI-compatible HTTP server (SSE streaming).

The same deterministic answers and misbehaviours as ``MockBackend``, but over the wire, so the
real httpx adapter, pools and failover are what tests and compose exercise. Endpoints:
``GET /v1/models``, ``POST /v1/chat/completions`` (streamed or not), ``GET /health``.

Every response closes its connection: the end of a body is the end of the connection, which is
also how a cut stream looks in real life.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from dataclasses import dataclass, field

from arena.backends.base import ChatRequest, Finished, StreamError, TextDelta
from arena.backends.mock import IMAGES_REFUSED, MockBackend
from arena.catalog.models import standard_params
from arena.devtools.http_server import HTTPServer, Request, response_head
from arena.devtools.mock_vendors import (
    anthropic_messages,
    gemini_stream,
    images_refused,
    message_read,
)

REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    405: "Method Not Allowed",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
}
STATUS_FOR = {
    "auth": 401,
    "rate_limited": 429,
    "bad_request": 400,
    "content_filter": 400,
    "context_length": 400,
    "server": 500,
    "timeout": 504,
    "protocol": 502,
    "refused": 400,
}


@dataclass
class MockServer(HTTPServer):
    models: dict[str, dict] = field(default_factory=dict)  # model id -> mock settings
    default: dict = field(default_factory=lambda: {"ttft_ms": 50, "tokens_per_s": 200})
    api_key: str | None = None
    # Switches for pool tests: a replica that is down, or that fails every request.
    healthy: bool = True
    fail_with: int | None = None
    # As llama.cpp's server: answers whatever model id it is sent, though it lists its own.
    accepts_any_model: bool = False
    attempts: int = 0  # chat requests received, served or refused
    requests: int = 0  # chat requests served
    in_flight: int = 0
    max_in_flight: int = 0

    @property
    def url(self) -> str:
        return f"{self.origin}/v1"

    # HTTP ----------------------------------------------------------------------------------

    async def _send(
        self,
        writer: asyncio.StreamWriter,
        status: int,
        payload: object,
        extra: dict[str, str] | None = None,
    ) -> None:
        data = json.dumps(payload).encode()
        head = [
            ("Content-Type", "application/json"),
            ("Content-Length", str(len(data))),
            ("Connection", "close"),
            *(extra or {}).items(),
        ]
        writer.write(response_head(status, head, REASONS) + data)
        await writer.drain()

    async def respond(self, request: Request, writer: asyncio.StreamWriter) -> None:
        method, path = request.method, request.path
        if path == "/health" and method == "GET":
            status = 200 if self.healthy else 503
            return await self._send(writer, status, {"status": "ok" if self.healthy else "down"})
        if not self.healthy and method == "GET":  # a replica that is down answers nothing
            return await self._send(writer, 503, {"error": {"message": "Replica unavailable."}})
        if self.api_key and request.headers.get("authorization") != f"Bearer {self.api_key}":
            if method == "GET" and path.startswith("/v1/"):  # no model list without the key
                return await self._send(writer, 401, {"error": {"message": "Invalid API key."}})
        if path == "/v1/models" and method == "GET":
            data = [{"id": m, "object": "model", "owned_by": "mock"} for m in sorted(self.models)]
            return await self._send(writer, 200, {"object": "list", "data": data})
        if path == "/v1/messages" and method == "POST":
            self.attempts += 1
            return await anthropic_messages(self, request, writer)
        if path.endswith(":streamGenerateContent") and method == "POST":
            self.attempts += 1  # /v1beta/models/{model}:... (or /v1/, as the SDK may ask)
            model = path.split("/models/", 1)[-1].removesuffix(":streamGenerateContent")
            return await gemini_stream(self, request, writer, model)
        if path != "/v1/chat/completions":
            return await self._send(writer, 404, {"error": {"message": f"No route {path}"}})
        if method != "POST":
            return await self._send(writer, 405, {"error": {"message": "Use POST."}})
        self.attempts += 1
        if self.api_key and request.headers.get("authorization") != f"Bearer {self.api_key}":
            return await self._send(writer, 401, {"error": {"message": "Invalid API key."}})
        if not self.healthy or self.fail_with:
            status = self.fail_with or 503
            return await self._send(writer, status, {"error": {"message": "Replica unavailable."}})
        try:
            payload = json.loads(request.body)
            messages = tuple(message_read(m["role"], m["content"]) for m in payload["messages"])
            model = str(payload["model"])
        except (ValueError, KeyError, TypeError, AttributeError):
            return await self._send(writer, 400, {"error": {"message": "Malformed request."}})
        if self.models and model not in self.models and not self.accepts_any_model:
            # As vLLM and OpenAI answer a model id they do not serve.
            return await self._send(writer, 404, {"error": {
                "message": f"The model `{model}` does not exist.", "type": "NotFoundError",
                "code": 404,
            }})  # fmt: skip
        settings = {**self.default, **self.models.get(model, {})}
        if settings.get("misbehaviour") == "rate_limited":
            return await self._send(
                writer, 429, {"error": {"message": "Slow down."}}, {"Retry-After": "1"}
            )
        params = {k: payload[k] for k in standard_params() if k in payload}
        chat = ChatRequest(model_id=model, messages=messages, params=params)
        if images_refused(self, chat):
            # OpenAI's answer to an image sent to a text-only model: a request fault.
            return await self._send(writer, 400, {"error": {
                "message": IMAGES_REFUSED.format(model=model), "type": "invalid_request_error",
                "param": "messages", "code": None,
            }})  # fmt: skip
        self.requests += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if payload.get("stream"):
                usage = bool((payload.get("stream_options") or {}).get("include_usage"))
                await self._stream(writer, model, chat, settings, usage)
            else:
                await self._complete(writer, model, chat, settings)
        finally:
            self.in_flight -= 1

    async def _complete(self, writer, model: str, request: ChatRequest, settings: dict) -> None:
        parts: list[str] = []
        async for event in MockBackend(settings).stream(request):
            if isinstance(event, TextDelta):
                parts.append(event.text)
            elif isinstance(event, StreamError):
                status = STATUS_FOR.get(event.kind, 500)
                return await self._send(writer, status, {"error": {"message": event.message}})
            elif isinstance(event, Finished):
                return await self._send(
                    writer,
                    200,
                    {
                        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
                        "object": "chat.completion",
                        "model": model,
                        "created": int(time.time()),
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": event.finish_reason,
                                "message": {"role": "assistant", "content": "".join(parts)},
                            }
                        ],
                        "usage": {
                            "prompt_tokens": event.input_tokens,
                            "completion_tokens": event.output_tokens,
                        },
                    },
                )
        # A truncated body is how a missing terminal looks without streaming.
        writer.write(
            response_head(200, [("Content-Type", "application/json")], REASONS) + b'{"id":'
        )

    async def _stream(
        self, writer, model: str, request: ChatRequest, settings: dict, usage: bool
    ) -> None:
        cid = f"chatcmpl-{uuid.uuid4().hex[:12]}"
        started = False

        def chunk(delta: dict, finish: str | None = None) -> bytes:
            data = {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            return f"data: {json.dumps(data)}\n\n".encode()

        async def begin() -> None:
            nonlocal started
            if not started:
                started = True
                head = [
                    ("Content-Type", "text/event-stream"),
                    ("Cache-Control", "no-cache"),
                    ("Connection", "close"),
                    ("X-Request-Id", cid),
                ]
                writer.write(response_head(200, head, REASONS))
                writer.write(chunk({"role": "assistant", "content": ""}))

        async for event in MockBackend(settings).stream(request):
            if isinstance(event, StreamError):
                if not started and event.kind != "content_filter":
                    status = STATUS_FOR.get(event.kind, 500)
                    return await self._send(writer, status, {"error": {"message": event.message}})
                await begin()
                if event.kind == "content_filter":
                    writer.write(chunk({}, "content_filter") + b"data: [DONE]\n\n")
                else:
                    err = {"error": {"message": event.message, "code": 502}}
                    writer.write(f"data: {json.dumps(err)}\n\n".encode())
                await writer.drain()
                return
            await begin()
            if isinstance(event, TextDelta):
                writer.write(chunk({"content": event.text}))
                await writer.drain()
            elif isinstance(event, Finished):
                if event.finish_reason == "refusal":
                    writer.write(chunk({"refusal": "I can't help with that."}, "stop"))
                else:
                    writer.write(chunk({}, event.finish_reason))
                if usage and event.output_tokens is not None:
                    data = {
                        "id": cid,
                        "object": "chat.completion.chunk",
                        "model": model,
                        "choices": [],
                        "usage": {
                            "prompt_tokens": event.input_tokens,
                            "completion_tokens": event.output_tokens,
                        },
                    }
                    writer.write(f"data: {json.dumps(data)}\n\n".encode())
                writer.write(b"data: [DONE]\n\n")
                await writer.drain()
                return
        # The mock ended without a terminal event: close mid-stream, as a dropped server would.
        await begin()
        await writer.drain()
