"""What only the Gemini adapter does: its finish reasons, error shapes and request shape.

Its recorded streams, cuts and error bodies run in ``test_contracts.py``.
"""

from __future__ import annotations

import json

import pytest

from arena.backends.base import ChatRequest, Message
from arena.devtools.fixture_server import Canned, stream_fixture
from tests.helpers import KEYS, REQUEST, SYSTEM, backend, run, variant

pytestmark = pytest.mark.usefixtures("vendor_keys")

# Variants of the recorded streams -----------------------------------------------------------


async def test_gemini_max_tokens_is_a_length_finish(server):
    server.response = Canned(body=variant("gemini.sse", '"STOP"', '"MAX_TOKENS"'))
    result, _ = await run(backend(server, "gemini"))
    assert (result.status, result.finish_reason, result.output_tokens) == ("ok", "length", 137)


async def test_gemini_blocked_prompt_is_a_content_filter_error(server):
    chunk = {
        "promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
        "usageMetadata": {"promptTokenCount": 12, "totalTokenCount": 12},
        "modelVersion": "gemini-2.5-flash",
        "responseId": "Zz1yY2xX3wW4vV5uU6tT7sS",
    }
    server.response = Canned(body=f"data: {json.dumps(chunk)}\r\n\r\n".encode())
    result, _ = await run(backend(server, "gemini"))
    assert (result.status, result.error_kind, result.text) == ("error", "content_filter", "")
    assert "PROHIBITED_CONTENT" in result.error_message


async def test_gemini_error_object_mid_stream_is_typed(server):
    error = {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}
    body = stream_fixture("gemini.sse").split(b"\r\n\r\n")[0] + b"\r\n\r\n"
    server.response = Canned(body=body + f"data: {json.dumps(error)}\r\n\r\n".encode())
    result, _ = await run(backend(server, "gemini"))
    assert (result.status, result.error_kind, result.text) == ("partial", "server", "Twenty-nine")


async def test_gemini_rejects_a_wrong_key_with_400_and_that_is_auth(server):
    body = {
        "error": {
            "code": 400,
            "message": "API key not valid. Please pass a valid API key.",
            "status": "INVALID_ARGUMENT",
            "details": [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "API_KEY_INVALID",
                    "domain": "googleapis.com",
                }
            ],
        }
    }
    server.response = Canned.json(400, body)
    result, _ = await run(backend(server, "gemini"))
    assert result.error_kind == "auth"


async def test_gemini_retry_delay_in_the_body_is_the_retry_after(server):
    body = {
        "error": {
            "code": 429,
            "message": "You exceeded your current quota.",
            "status": "RESOURCE_EXHAUSTED",
            "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "17s"}],
        }
    }
    server.response = Canned.json(429, body)
    events = [e async for e in backend(server, "gemini").stream(REQUEST)]
    assert (events[-1].kind, events[-1].retry_after_s) == ("rate_limited", 17.0)


# Outgoing requests --------------------------------------------------------------------------


async def test_gemini_request(server):
    server.response = Canned.sse("gemini.sse")
    request = ChatRequest(
        "models/gemini-2.5-flash",
        (
            Message("system", SYSTEM),
            Message("user", "Name a prime."),
            Message("assistant", "Seven."),
            Message("user", "Why?"),
        ),
        {"temperature": 0.7, "top_p": 0.9, "max_tokens": 256},
    )
    await run(backend(server, "gemini"), request)
    sent = server.last
    assert sent.method == "POST"
    assert sent.path == "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
    assert sent.query == "alt=sse"
    assert sent.headers["x-goog-api-key"] == KEYS["GEMINI_API_KEY"]
    assert KEYS["GEMINI_API_KEY"] not in sent.target
    assert sent.json() == {
        "contents": [
            {"role": "user", "parts": [{"text": "Name a prime."}]},
            {"role": "model", "parts": [{"text": "Seven."}]},
            {"role": "user", "parts": [{"text": "Why?"}]},
        ],
        "systemInstruction": {"parts": [{"text": SYSTEM}]},
        "generationConfig": {"temperature": 0.7, "topP": 0.9, "maxOutputTokens": 256},
    }
