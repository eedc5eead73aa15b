"""Every vendor adapter, through a real HTTP server replaying that vendor's wire format.

Each test runs the adapter the way production does, under ``stream_answer``, so what is checked
is the contract the rest of the arena relies on: the exact text, a terminal event or a typed
error, usage, request ids, TTFT at the first real text, and a key that never leaks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest

from arena.backends.anthropic import AnthropicBackend
from arena.backends.base import ChatRequest, Message
from arena.backends.gemini import GeminiBackend
from arena.backends.openai import OpenAIBackend
from arena.backends.registry import backend_for, installed_kinds
from arena.core.text import estimate_tokens
from arena.generation.runner import StreamResult, stream_answer
from tests.arena.backends.fixture_server import Canned, FixtureServer, stream_fixture

KEYS = {
    "OPENAI_API_KEY": "sk-proj-test-7Hq2vN9xK4mP1wR8sT3u",
    "ANTHROPIC_API_KEY": "sk-ant-api03-test-Zt5Yb2Lq9Nc6Vx1Mw4Ks",
    "GEMINI_API_KEY": "AIzaSyTest-3fG8hJ1kL6mN9pQ2rS5tU",
    "VLLM_API_KEY": "vllm-test-key-Qe4Rt7Yu1Io3Pa6Sd9",
}
SYSTEM = "Answer in one sentence."
QUESTION = "Name a prime number and say why it is prime."
REQUEST = ChatRequest(
    model_id="test-model",
    messages=(Message("system", SYSTEM), Message("user", QUESTION)),
    params={"temperature": 0.7, "top_p": 0.9, "max_tokens": 256},
)


@dataclass(frozen=True)
class Vendor:
    base_path: str  # what base_url adds to the server's address
    key_env: str  # the variable the adapter reads the key from
    settings: dict = field(default_factory=dict)


VENDORS = {
    "openai_compatible": Vendor("/v1", "VLLM_API_KEY", {"api_key_env": "VLLM_API_KEY"}),
    "openai": Vendor("/v1", "OPENAI_API_KEY"),
    "anthropic": Vendor("/v1", "ANTHROPIC_API_KEY"),
    "gemini": Vendor("/v1beta", "GEMINI_API_KEY"),
}


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
async def server():
    srv = await FixtureServer().start()
    yield srv
    await srv.stop()


def backend(server: FixtureServer, kind: str, **settings):
    vendor = VENDORS[kind]
    base = {"base_url": server.url + vendor.base_path, "timeout_s": 5, **vendor.settings}
    return backend_for(kind, {**base, **settings})


async def run(adapter, request: ChatRequest = REQUEST) -> tuple[StreamResult, list[str]]:
    seen: list[str] = []

    async def on_delta(text: str) -> None:
        seen.append(text)

    result = await stream_answer(
        adapter, request, on_delta=on_delta, max_chars=100_000, timeout_s=10
    )
    assert "".join(seen) == result.text
    assert (result.ttft_ms is not None) == bool(result.text)
    leaked = json.dumps(result.as_dict())
    assert not any(key in leaked for key in KEYS.values())
    return result, seen


def estimated_input(request: ChatRequest = REQUEST) -> int:
    return estimate_tokens("x" * sum(len(m.content) for m in request.messages))


# Whole streams ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Stream:
    fixture: str
    kind: str
    status: str
    text: str
    finish_reason: str = ""
    usage: tuple[int, int] | None = None  # (input, output) as reported; None: estimated
    request_id: str | None = None
    error_kind: str = ""
    first: str = ""  # the first text the rater must see
    headers: dict = field(default_factory=dict)


STREAMS = [
    Stream(
        "vllm.sse",
        "openai_compatible",
        "ok",
        "Seven is prime: its only divisors are 1 and 7.",
        "stop",
        (31, 13),
        "chatcmpl-8f2c1e6a9b7d4f0e93a1c5d7b2e4f6a8",
        first="Seven",
    ),
    Stream(
        "tgi.sse",
        "openai_compatible",
        "ok",
        "Two is the only even prime — divisible by 1 and itself.",
        "stop",
        (27, 14),
        None,  # TGI sends an empty id
        first="Two",
    ),
    Stream(
        "ollama.sse",
        "openai_compatible",
        "ok",
        "Eleven is prime; nothing between 2 and 10 divides it.",
        "stop",
        None,
        "chatcmpl-412",
        first="Eleven",
    ),
    Stream(
        "openai.sse",
        "openai",
        "ok",
        "Thirteen is prime — no whole number from 2 to 12 divides it evenly.",
        "stop",
        (29, 16),
        "chatcmpl-BqXk3hZ9vT1mN7pQ2rS5uW8yA0cE",
        first="Thirteen",
        headers={"x-request-id": "req_5f0c4f3b8d2a4e1c9b7a6d5e4f3c2b1a"},
    ),
    Stream(
        "openrouter_error.sse",
        "openai_compatible",
        "partial",
        "Seventeen is prime",
        error_kind="server",
        first="Seventeen",
    ),
    Stream(
        "anthropic.sse",
        "anthropic",
        "ok",
        "Nineteen is prime — only 1 and 19 divide it.",
        "stop",
        (24, 17),
        "msg_01XFDUDYJgAACzvnptvVoYEL",
        first="Nineteen",
        headers={"request-id": "req_011CSHoEeqs5C35K2UUqR7Fy"},
    ),
    Stream(
        "anthropic_error.sse",
        "anthropic",
        "partial",
        "Twenty-three is prime because",
        error_kind="server",
        first="Twenty-three",
    ),
    Stream(
        "anthropic_thinking.sse",
        "anthropic",
        "ok",
        "Thirty-one is prime: no prime up to its square root divides it.",
        "stop",
        (41, 96),
        "msg_01Tk9wQ4eR7yU2iO5pA8sD3f",
        first="Thirty-one",
    ),
    Stream(
        "gemini.sse",
        "gemini",
        "ok",
        "Twenty-nine is prime: none of 2, 3 or 5 divides it — and 5² > 29.",
        "stop",
        (14, 17 + 120),  # thinking tokens count as output, as they are billed
        "Fq5raJ-4NYKUz7IPpM2mqAc",
        first="Twenty-nine",
    ),
    Stream(
        "gemini_safety.sse",
        "gemini",
        "partial",
        "Here is an overview",
        error_kind="content_filter",
        first="Here is an overview",
    ),
    Stream(
        "gemini_thinking.sse",
        "gemini",
        "ok",
        "Thirty-seven is prime.",
        "stop",
        (9, 6 + 52),
        "Ab3cDe4fGh5iJk6lMn7oPq8",
        first="Thirty-seven is prime.",
    ),
]


@pytest.mark.parametrize("split", ["events", 7], ids=["per-event", "7-byte-writes"])
@pytest.mark.parametrize("case", STREAMS, ids=[s.fixture for s in STREAMS])
async def test_a_recorded_stream_gives_the_exact_result(server, case: Stream, split):
    # 7-byte writes split JSON, lines and multi-byte characters across reads.
    server.response = Canned.sse(case.fixture, headers=case.headers, split=split)
    result, seen = await run(backend(server, case.kind))

    assert result.status == case.status
    assert result.text == case.text
    assert seen[0] == case.first
    assert result.finish_reason == case.finish_reason
    assert result.error_kind == case.error_kind
    assert result.request_id == case.request_id
    assert not result.truncated
    if case.usage is None:
        assert result.tokens_estimated
        assert result.input_tokens == estimated_input()
        assert result.output_tokens == estimate_tokens(case.text)
    else:
        assert not result.tokens_estimated
        assert (result.input_tokens, result.output_tokens) == case.usage
    if case.error_kind:
        assert result.error_message


@pytest.mark.parametrize(
    ("fixture", "kind", "first"),
    [
        ("anthropic_thinking.sse", "anthropic", "Thirty-one"),
        ("gemini_thinking.sse", "gemini", "Thirty-seven is prime."),
    ],
)
async def test_ttft_starts_at_the_first_answer_text_not_at_thinking(server, fixture, kind, first):
    pause = 0.02
    body = stream_fixture(fixture)
    writes_until_text = body[: body.index(first.encode())].count(b"data:") + 1
    server.response = Canned.sse(fixture, pause_s=pause)
    result, seen = await run(backend(server, kind))

    assert seen[0] == first
    assert "check" not in result.text  # the thinking text stays out of the answer
    assert result.ttft_ms is not None
    assert result.ttft_ms >= writes_until_text * pause * 1000 * 0.8


# Variants of the recorded streams -----------------------------------------------------------


def variant(fixture: str, old: str, new: str) -> bytes:
    body = stream_fixture(fixture)
    assert old.encode() in body
    return body.replace(old.encode(), new.encode())


async def test_anthropic_max_tokens_is_a_length_finish(server):
    server.response = Canned(body=variant("anthropic.sse", '"end_turn"', '"max_tokens"'))
    result, _ = await run(backend(server, "anthropic"))
    assert (result.status, result.finish_reason) == ("ok", "length")


async def test_anthropic_refusal_stop_reason_is_a_refusal(server):
    server.response = Canned(body=variant("anthropic.sse", '"end_turn"', '"refusal"'))
    result, _ = await run(backend(server, "anthropic"))
    assert (result.status, result.error_kind) == ("partial", "refused")


async def test_anthropic_error_events_are_typed(server):
    body = variant("anthropic_error.sse", "overloaded_error", "rate_limit_error")
    server.response = Canned(body=body)
    result, _ = await run(backend(server, "anthropic"))
    assert result.error_kind == "rate_limited"


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


# Cut streams --------------------------------------------------------------------------------

CUTS = [
    # (fixture, kind, cut before this, text so far)
    ("vllm.sse", "openai_compatible", '" divisors"', "Seven is prime: its only"),
    (
        "openai.sse",
        "openai",
        '" evenly"',
        "Thirteen is prime — no whole number from 2 to 12 divides it",
    ),
    ("anthropic.sse", "anthropic", '" it"', "Nineteen is prime — only 1 and 19 divide"),
    # message_stop is Anthropic's terminal: a stop reason alone does not finish the answer.
    (
        "anthropic.sse",
        "anthropic",
        "event: message_stop",
        "Nineteen is prime — only 1 and 19 divide it.",
    ),
    ("anthropic.sse", "anthropic", "event: content_block_delta", ""),
    ("gemini.sse", "gemini", '" divides it', "Twenty-nine is prime: none of 2, 3 or 5"),
    # Gemini's terminal is a chunk with a finish reason; without it the answer is not finished.
    (
        "gemini.sse",
        "gemini",
        'data: {"candidates": [{"content": {"parts": [{"text": " divides',
        "Twenty-nine is prime: none of 2, 3 or 5",
    ),
]


@pytest.mark.parametrize("framing", ["chunked", "close"])
@pytest.mark.parametrize(("fixture", "kind", "before", "text"), CUTS)
async def test_a_cut_stream_is_partial_protocol_keeping_the_text(
    server, fixture, kind, before, text, framing
):
    body = stream_fixture(fixture)
    server.response = Canned(body=body, cut_at=body.index(before.encode()), framing=framing)
    result, _ = await run(backend(server, kind))
    assert result.status == ("partial" if text else "error")
    assert result.error_kind == "protocol"
    assert result.text == text
    assert result.finish_reason == ""


# HTTP errors --------------------------------------------------------------------------------

ERROR_BODIES: dict[str, dict[int | str, object]] = {
    "openai_compatible": {  # vLLM, and what gateways in front of it say
        401: {"error": "Unauthorized"},
        403: {"error": "Forbidden"},
        429: {"error": {"message": "Too many requests", "code": 429}},
        500: {
            "object": "error",
            "message": "The engine died unexpectedly.",
            "type": "InternalServerError",
            "param": None,
            "code": 500,
        },
        "context": {
            "object": "error",
            "message": "This model's maximum context length is 8192 tokens. However, you "
            "requested 9216 tokens (8192 in the messages, 1024 in the completion).",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    },
    "openai": {
        401: {
            "error": {
                "message": "Incorrect API key provided: sk-proj-****8sT3u. You can find your "
                "API key at https://platform.openai.com/account/api-keys.",
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_api_key",
            }
        },
        403: {
            "error": {
                "message": "Project does not have access to model gpt-4o-mini",
                "type": "invalid_request_error",
                "param": None,
                "code": "model_not_found",
            }
        },
        429: {
            "error": {
                "message": "Rate limit reached for gpt-4o-mini on tokens per min (TPM): "
                "Limit 200000, Used 199000, Requested 2000. Please try again in 7s.",
                "type": "tokens",
                "param": None,
                "code": "rate_limit_exceeded",
            }
        },
        500: {
            "error": {
                "message": "The server had an error while processing your request.",
                "type": "server_error",
                "param": None,
                "code": None,
            }
        },
        "context": {
            "error": {
                "message": "This model's maximum context length is 128000 tokens. However, "
                "your messages resulted in 131072 tokens.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        },
    },
    "anthropic": {
        401: {
            "type": "error",
            "error": {"type": "authentication_error", "message": "invalid x-api-key"},
            "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy",
        },
        403: {
            "type": "error",
            "error": {
                "type": "permission_error",
                "message": "Your API key does not have permission to use the specified resource.",
            },
        },
        429: {
            "type": "error",
            "error": {
                "type": "rate_limit_error",
                "message": "This request would exceed the rate limit for your organization of "
                "50 requests per minute.",
            },
        },
        500: {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}},
        "context": {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "prompt is too long: 208310 tokens > 200000 maximum",
            },
        },
    },
    "gemini": {
        401: {
            "error": {
                "code": 401,
                "message": "Request had invalid authentication credentials.",
                "status": "UNAUTHENTICATED",
            }
        },
        403: {
            "error": {
                "code": 403,
                "message": "Method doesn't allow unregistered callers (callers without "
                "established identity). Please use API Key or other form of API consumer "
                "identity to call this API.",
                "status": "PERMISSION_DENIED",
            }
        },
        429: {
            "error": {
                "code": 429,
                "message": "Resource has been exhausted (e.g. check quota).",
                "status": "RESOURCE_EXHAUSTED",
            }
        },
        500: {
            "error": {
                "code": 500,
                "message": "An internal error has occurred. Please retry or report in "
                "https://developers.generativeai.google/guide/troubleshooting",
                "status": "INTERNAL",
            }
        },
        "context": {
            "error": {
                "code": 400,
                "message": "The input token count (1200000) exceeds the maximum number of "
                "tokens allowed (1048576).",
                "status": "INVALID_ARGUMENT",
            }
        },
    },
}
STATUSES = [
    (401, "auth", None),
    (403, "auth", None),
    (429, "rate_limited", 7.0),
    (500, "server", None),
    ("context", "context_length", None),
]


@pytest.mark.parametrize("kind", list(VENDORS))
@pytest.mark.parametrize(("status", "error_kind", "retry_after"), STATUSES)
async def test_http_errors_are_typed(server, kind, status, error_kind, retry_after):
    headers = {"Retry-After": "7"} if status == 429 else {}
    code = 400 if status == "context" else status
    server.response = Canned.json(code, ERROR_BODIES[kind][status], headers)
    result, _ = await run(backend(server, kind))
    assert (result.status, result.error_kind, result.text) == ("error", error_kind, "")
    assert result.error_message.startswith(f"HTTP {code}")
    assert result.ttft_ms is None
    if retry_after is not None:
        adapter = backend(server, kind)
        events = [e async for e in adapter.stream(REQUEST)]
        assert events[-1].retry_after_s == retry_after


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


@pytest.mark.parametrize("kind", ["openai", "anthropic", "gemini"])
async def test_a_key_echoed_in_an_error_is_redacted(server, kind):
    key = KEYS[VENDORS[kind].key_env]
    server.response = Canned.json(401, {"error": {"message": f"Invalid API key: {key}"}})
    result, _ = await run(backend(server, kind))  # run() asserts no key in the result
    assert result.error_kind == "auth"
    assert "[redacted]" in result.error_message


@pytest.mark.parametrize("kind", ["openai", "anthropic", "gemini"])
async def test_a_missing_key_is_an_auth_error_naming_the_variable(server, kind, monkeypatch):
    monkeypatch.delenv(VENDORS[kind].key_env)
    result, _ = await run(backend(server, kind))
    assert (result.status, result.error_kind) == ("error", "auth")
    assert VENDORS[kind].key_env in result.error_message
    assert server.requests == []

    result, _ = await run(backend(server, kind, api_key_env="ARENA_UNSET_KEY_VAR"))
    assert result.error_kind == "auth" and "ARENA_UNSET_KEY_VAR" in result.error_message


# Outgoing requests --------------------------------------------------------------------------


async def test_openai_request(server):
    server.response = Canned.sse("openai.sse")
    # include_usage cannot be switched off: OpenAI always accepts it and cost needs it.
    await run(backend(server, "openai", include_usage=False))
    sent = server.last
    assert (sent.method, sent.path) == ("POST", "/v1/chat/completions")
    assert sent.headers["authorization"] == f"Bearer {KEYS['OPENAI_API_KEY']}"
    assert sent.json() == {
        "model": "test-model",
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": 0.7,
        "top_p": 0.9,
        "max_completion_tokens": 256,
    }


async def test_openai_compatible_request_keeps_max_tokens(server):
    server.response = Canned.sse("vllm.sse")
    await run(backend(server, "openai_compatible"))
    body = server.last.json()
    assert server.last.headers["authorization"] == f"Bearer {KEYS['VLLM_API_KEY']}"
    assert body["max_tokens"] == 256 and "max_completion_tokens" not in body


async def test_anthropic_request(server):
    server.response = Canned.sse("anthropic.sse")
    await run(backend(server, "anthropic", headers={"anthropic-beta": "test-beta"}))
    sent = server.last
    assert (sent.method, sent.path) == ("POST", "/v1/messages")
    assert sent.headers["x-api-key"] == KEYS["ANTHROPIC_API_KEY"]
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert sent.headers["anthropic-beta"] == "test-beta"
    assert "authorization" not in sent.headers
    assert sent.json() == {
        "model": "test-model",
        "system": SYSTEM,
        "messages": [{"role": "user", "content": QUESTION}],
        "max_tokens": 256,
        "temperature": 0.7,
        "top_p": 0.9,
        "stream": True,
    }


@pytest.mark.parametrize(
    ("model_settings", "params", "max_tokens"),
    [
        ({}, {}, 4096),  # the API requires max_tokens: the default ceiling is sent
        ({"max_tokens": 8192}, {"temperature": 0.5}, 8192),
        ({"max_tokens": 1000}, {"max_tokens": 2000}, 1000),  # never above the model's ceiling
    ],
)
async def test_anthropic_always_sends_max_tokens(server, model_settings, params, max_tokens):
    server.response = Canned.sse("anthropic.sse")
    request = ChatRequest("test-model", (Message("user", QUESTION),), params)
    await run(backend(server, "anthropic", **model_settings), request)
    body = server.last.json()
    assert body["max_tokens"] == max_tokens
    assert "system" not in body


async def test_anthropic_conversation_alternates_and_drops_a_neutral_top_p(server):
    server.response = Canned.sse("anthropic.sse")
    request = ChatRequest(
        "test-model",
        (
            Message("system", "Be brief."),
            Message("system", "Use plain words."),
            Message("user", "Hi."),
            Message("assistant", ""),  # an earlier answer that came back empty
            Message("user", "Name a prime."),
            Message("assistant", "Seven."),
            Message("user", "Why?"),
        ),
        {"temperature": 0.7, "top_p": 1.0},
    )
    await run(backend(server, "anthropic"), request)
    body = server.last.json()
    assert body["system"] == "Be brief.\n\nUse plain words."
    assert body["messages"] == [
        {"role": "user", "content": "Hi.\n\nName a prime."},
        {"role": "assistant", "content": "Seven."},
        {"role": "user", "content": "Why?"},
    ]
    # Recent Claude models refuse temperature and top_p together; top_p = 1 changes nothing.
    assert body["temperature"] == 0.7 and "top_p" not in body


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


def test_vendor_kinds_are_registered_with_vendor_defaults():
    assert {"openai", "anthropic", "gemini", "openai_compatible"} <= set(installed_kinds())
    assert isinstance(backend_for("openai", {}), OpenAIBackend)
    assert OpenAIBackend({}).base_url == "https://api.openai.com/v1"
    assert OpenAIBackend({}).settings["api_key_env"] == "OPENAI_API_KEY"
    assert OpenAIBackend({"api_key_file": "/run/secrets/k"}).settings.get("api_key_env") is None
    assert AnthropicBackend({}).base_url == "https://api.anthropic.com/v1"
    assert GeminiBackend({}).base_url == "https://generativelanguage.googleapis.com/v1beta"
