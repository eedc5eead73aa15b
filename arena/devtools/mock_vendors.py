"""The mock model over Anthropic's Messages and Gemini's ``streamGenerateContent`` streaming
protocols, beside the mock server's OpenAI-compatible one: the same deterministic answers, in
the events each vendor sends (as their captured streams in tests/fixtures/streams show), so
those adapters and the vendors' own SDKs are tried against a live server, not only replays.

Images come in each vendor's form (OpenAI's image_url data URLs, Anthropic's base64 image
blocks, Gemini's inlineData parts) and are read back into the same ``Image`` the adapters sent;
a model whose settings lack ``vision`` refuses them with the 400 its vendor sends."""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import uuid

from arena.backends.base import ChatRequest, Finished, Image, Message, StreamError, TextDelta
from arena.backends.mock import IMAGES_REFUSED, MockBackend, images_of, prompt_tokens
from arena.devtools.http_server import Request, response_head

STOP_REASONS = {"stop": "end_turn", "length": "max_tokens"}  # ours -> Anthropic's
FINISH_REASONS = {"stop": "STOP", "length": "MAX_TOKENS"}  # ours -> Gemini's
# An error's kind -> its HTTP status, Anthropic's type and Gemini's status; a kind not listed
# (a timeout, a refused context) goes out as a server fault.
ERRORS = {
    "bad_request": (400, "invalid_request_error", "INVALID_ARGUMENT"),
    "auth": (401, "authentication_error", "INVALID_ARGUMENT"),
    "not_found": (404, "not_found_error", "NOT_FOUND"),
    "rate_limited": (429, "rate_limit_error", "RESOURCE_EXHAUSTED"),
    "server": (500, "api_error", "INTERNAL"),
}


def _sse(writer: asyncio.StreamWriter, name: str | None, data: dict) -> None:
    head = f"event: {name}\n" if name else ""
    writer.write(f"{head}data: {json.dumps(data)}\n\n".encode())


def _begin(writer: asyncio.StreamWriter, request_id: str, header: str, reasons) -> None:
    head = [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"),
            ("Connection", "close"), (header, request_id)]  # fmt: skip
    writer.write(response_head(200, head, reasons))


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content blocks / parts
        return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""


def _image(content_type: object, data: object) -> Image:
    """An image as a vendor's request carries it (base64); ValueError when it is not one."""
    try:
        raw = base64.b64decode(str(data), validate=True)
    except binascii.Error:
        raise ValueError("image data is not base64") from None
    return Image.of(str(content_type), raw)


def _images(content: object) -> tuple[Image, ...]:
    """The images among a message's blocks or parts, in order, in any of the three forms."""
    found = []
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        if block.get("type") == "image_url":  # OpenAI: a data URL; the mock fetches nothing
            head, _, data = str(block["image_url"]["url"]).partition(",")
            if not (head.startswith("data:") and head.endswith(";base64")):
                raise ValueError("only data URLs are read")
            found.append(_image(head.removeprefix("data:").removesuffix(";base64"), data))
        elif block.get("type") == "image":  # Anthropic
            source = block["source"]
            if source.get("type") != "base64":
                raise ValueError("only base64 image sources are read")
            found.append(_image(source["media_type"], source["data"]))
        elif blob := block.get("inlineData") or block.get("inline_data"):  # Gemini, either spelling
            found.append(_image(blob.get("mimeType") or blob.get("mime_type"), blob["data"]))
    return tuple(found)


def message_read(role: str, content: object) -> Message:
    """One message of a vendor's request: its text and its images."""
    return Message(role, _text(content), _images(content))  # type: ignore[arg-type]


def images_refused(server, chat: ChatRequest) -> bool:
    """Whether the model asked for refuses this request's images (its settings lack
    ``vision``), as a text-only model's server does."""
    settings = {**server.default, **server.models.get(chat.model_id, {})}
    return bool(images_of(chat)) and not settings.get("vision")


async def anthropic_messages(server, request: Request, writer: asyncio.StreamWriter) -> None:
    """``POST /v1/messages`` with ``stream: true``: message_start, a text block's deltas,
    message_delta (stop reason, output tokens), message_stop."""
    bearer = request.headers.get("authorization", "").removeprefix("Bearer ")
    if server.api_key and server.api_key not in (request.headers.get("x-api-key"), bearer):
        return await _error(server, writer, "auth", "invalid x-api-key", anthropic=True)
    try:
        body = json.loads(request.body)
        model, max_tokens = str(body["model"]), int(body["max_tokens"])
        messages = [message_read(m["role"], m["content"]) for m in body["messages"]]
    except (ValueError, KeyError, TypeError, AttributeError):
        return await _error(server, writer, "bad_request", "malformed request", anthropic=True)
    if body.get("system"):
        messages.insert(0, Message("system", _text(body["system"])))
    if server.models and model not in server.models:
        return await _error(server, writer, "not_found", f"model: {model}", anthropic=True)
    params = {"max_tokens": max_tokens, **{k: body[k] for k in ("temperature", "top_p")
                                          if k in body}}  # fmt: skip
    chat = ChatRequest(model, tuple(messages), params)
    if images_refused(server, chat):
        refusal = IMAGES_REFUSED.format(model=model)
        return await _error(server, writer, "bad_request", refusal, anthropic=True)
    msg_id = f"msg_{uuid.uuid4().hex[:24]}"
    started = False
    async for event in MockBackend({**server.default, **server.models.get(model, {})}).stream(chat):
        if isinstance(event, StreamError) and not started:
            return await _error(server, writer, event.kind, event.message, anthropic=True)
        if not started:
            started = True
            _begin(writer, msg_id, "request-id", {200: "OK"})
            prompt = prompt_tokens(chat)
            _sse(writer, "message_start", {"type": "message_start", "message": {
                "id": msg_id, "type": "message", "role": "assistant", "model": model,
                "content": [], "stop_reason": None,
                "usage": {"input_tokens": prompt, "output_tokens": 1}}})  # fmt: skip
            _sse(writer, "content_block_start", {"type": "content_block_start", "index": 0,
                 "content_block": {"type": "text", "text": ""}})  # fmt: skip
        if isinstance(event, TextDelta):
            _sse(writer, "content_block_delta", {"type": "content_block_delta", "index": 0,
                 "delta": {"type": "text_delta", "text": event.text}})  # fmt: skip
        elif isinstance(event, StreamError):
            _sse(writer, "error", _error_body(event.kind, event.message, anthropic=True)[1])
            break
        elif isinstance(event, Finished):
            _sse(writer, "content_block_stop", {"type": "content_block_stop", "index": 0})
            _sse(
                writer,
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {
                        "stop_reason": STOP_REASONS.get(event.finish_reason, "end_turn"),
                        "stop_sequence": None,
                    },
                    "usage": {"output_tokens": event.output_tokens or 0},
                },
            )
            _sse(writer, "message_stop", {"type": "message_stop"})
            break
        await writer.drain()
    await writer.drain()


async def gemini_stream(server, request: Request, writer: asyncio.StreamWriter,
                        model: str) -> None:  # fmt: skip
    """``POST /v1beta/models/{model}:streamGenerateContent?alt=sse``: one candidate chunk per
    piece of text, the last with the finish reason and the usage."""
    key = request.headers.get("x-goog-api-key") or dict(
        p.split("=", 1) for p in request.query.split("&") if "=" in p
    ).get("key")
    if server.api_key and key != server.api_key:
        return await _error(server, writer, "auth", "API key not valid.")
    try:
        body = json.loads(request.body)
        messages = [
            message_read("assistant" if c.get("role") == "model" else "user", c["parts"])
            for c in body["contents"]
        ]
    except (ValueError, KeyError, TypeError, AttributeError):
        return await _error(server, writer, "bad_request", "malformed request")
    system = body.get("systemInstruction") or body.get("system_instruction")
    if system:
        messages.insert(0, Message("system", _text(system.get("parts"))))
    if server.models and model not in server.models:
        return await _error(server, writer, "not_found", f"models/{model} is not found")
    config = body.get("generationConfig") or body.get("generation_config") or {}
    params = {k: config[v] for k, v in (("max_tokens", "maxOutputTokens"),
              ("temperature", "temperature"), ("top_p", "topP")) if v in config}  # fmt: skip
    chat = ChatRequest(model, tuple(messages), params)
    if images_refused(server, chat):
        return await _error(server, writer, "bad_request", IMAGES_REFUSED.format(model=model))
    response_id = uuid.uuid4().hex[:22]
    prompt = prompt_tokens(chat)
    started, pending = False, None

    def chunk(text: str, finish: Finished | None = None) -> dict:
        candidate: dict = {"content": {"parts": [{"text": text}], "role": "model"}, "index": 0}
        usage = {"promptTokenCount": prompt}
        if finish is not None:
            candidate["finishReason"] = FINISH_REASONS.get(finish.finish_reason, "STOP")
            usage.update(candidatesTokenCount=finish.output_tokens or 0,
                         totalTokenCount=prompt + (finish.output_tokens or 0))  # fmt: skip
        return {"candidates": [candidate], "usageMetadata": usage, "modelVersion": model,
                "responseId": response_id}  # fmt: skip

    async for event in MockBackend({**server.default, **server.models.get(model, {})}).stream(chat):
        if isinstance(event, StreamError) and not started:
            return await _error(server, writer, event.kind, event.message)
        if not started:
            started = True
            _begin(writer, response_id, "x-request-id", {200: "OK"})
        if isinstance(event, TextDelta):
            if pending is not None:  # the last piece goes out with the finish reason
                _sse(writer, None, chunk(pending))
                await writer.drain()
            pending = event.text
        elif isinstance(event, StreamError):
            _sse(writer, None, _error_body("server", event.message)[1])
            break
        elif isinstance(event, Finished):
            _sse(writer, None, chunk(pending or "", event))
            break
    await writer.drain()


def _error_body(kind: str, message: str, *, anthropic: bool = False) -> tuple[int, dict]:
    """The status and the body of an error in the vendor's shape, as it answers a request with
    it or sends it inside a stream."""
    code, type_, status = ERRORS.get(kind, ERRORS["server"])
    if anthropic:
        return code, {"type": "error", "error": {"type": type_, "message": message}}
    # Gemini answers a wrong key as any invalid argument: a 400.
    code = 400 if status == "INVALID_ARGUMENT" else code
    return code, {"error": {"code": code, "message": message, "status": status}}


async def _error(server, writer, kind: str, message: str, *, anthropic: bool = False) -> None:
    await server._send(writer, *_error_body(kind, message, anthropic=anthropic))
