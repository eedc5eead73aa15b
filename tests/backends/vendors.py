"""The vendor table: how to reach each adapter and what it must make of each vendor's bytes.

One ``Vendor`` a kind: its base path and key variable, the streams captured from it (in
``tests/fixtures/streams``) with the exact result each must give, where those streams are cut
and the text that must survive, and the error bodies it sends for each HTTP status. The shared
behaviours in ``test_contracts.py`` run once per row; a new vendor is a new row here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple


@dataclass(frozen=True)
class Stream:
    """A captured stream and the exact result the adapter must make of it."""

    fixture: str
    status: str
    text: str
    finish_reason: str = ""
    usage: tuple[int, int] | None = None  # (input, output) as reported; None: estimated
    request_id: str | None = None
    error_kind: str = ""
    first: str = ""  # the first text the rater must see
    headers: dict = field(default_factory=dict)
    thinks: bool = False  # the vendor streams thinking before ``first``
    reasoning: str = ""  # that thinking, kept apart from the answer


class Cut(NamedTuple):
    """A captured stream cut before ``before``: ``text`` is what the rater keeps."""

    fixture: str
    before: str
    text: str


@dataclass(frozen=True)
class Vendor:
    base_path: str  # what base_url adds to the server's address
    key_env: str  # the variable the adapter reads the key from
    settings: dict = field(default_factory=dict)
    requires_key: bool = True  # False: local servers run without one, so none is demanded
    streams: tuple[Stream, ...] = ()
    cuts: tuple[Cut, ...] = ()
    # By status, or "context" for a 400 about an over-long prompt.
    error_bodies: dict[int | str, object] = field(default_factory=dict)


OPENAI_COMPATIBLE = Vendor(
    "/v1",
    "VLLM_API_KEY",
    {"api_key_env": "VLLM_API_KEY"},
    requires_key=False,
    streams=(
        # vLLM with a reasoning parser (DeepSeek-R1 style): reasoning_content, then content.
        Stream(
            "vllm_reasoning.sse",
            "ok",
            "Forty-one is prime.",
            "stop",
            (12, 28),
            "chatcmpl-r41b7c2e9d0f4a6b8c3e5d7f9a1b2c4d6",
            first="Forty-one",
            thinks=True,
            reasoning="Forty-one: check 2, 3 and 5; none divide it.",
        ),
        Stream(
            "vllm.sse",
            "ok",
            "Seven is prime: its only divisors are 1 and 7.",
            "stop",
            (31, 13),
            "chatcmpl-8f2c1e6a9b7d4f0e93a1c5d7b2e4f6a8",
            first="Seven",
        ),
        Stream(
            "tgi.sse",
            "ok",
            "Two is the only even prime — divisible by 1 and itself.",
            "stop",
            (27, 14),
            None,  # TGI sends an empty id
            first="Two",
        ),
        Stream(
            "ollama.sse",
            "ok",
            "Eleven is prime; nothing between 2 and 10 divides it.",
            "stop",
            None,
            "chatcmpl-412",
            first="Eleven",
        ),
        Stream(
            "openrouter_error.sse",
            "partial",
            "Seventeen is prime",
            error_kind="server",
            first="Seventeen",
            request_id="gen-1751900000-q9ZtS2kVbN4xWc7YhL1m",  # kept on an error
        ),
    ),
    cuts=(Cut("vllm.sse", '" divisors"', "Seven is prime: its only"),),
    # vLLM, and what gateways in front of it say
    error_bodies={
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
)

OPENAI = Vendor(
    "/v1",
    "OPENAI_API_KEY",
    streams=(
        Stream(
            "openai.sse",
            "ok",
            "Thirteen is prime — no whole number from 2 to 12 divides it evenly.",
            "stop",
            (29, 16),
            "chatcmpl-BqXk3hZ9vT1mN7pQ2rS5uW8yA0cE",
            first="Thirteen",
            headers={"x-request-id": "req_5f0c4f3b8d2a4e1c9b7a6d5e4f3c2b1a"},
        ),
    ),
    cuts=(
        Cut(
            "openai.sse", '" evenly"', "Thirteen is prime — no whole number from 2 to 12 divides it"
        ),
    ),
    error_bodies={
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
)

ANTHROPIC = Vendor(
    "/v1",
    "ANTHROPIC_API_KEY",
    streams=(
        Stream(
            "anthropic.sse",
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
            "partial",
            "Twenty-three is prime because",
            error_kind="server",
            first="Twenty-three",
            request_id="msg_01Hq7yZ3cV8bN2mK5pL9rT4w",  # kept on an error
        ),
        Stream(
            "anthropic_thinking.sse",
            "ok",
            "Thirty-one is prime: no prime up to its square root divides it.",
            "stop",
            (41, 96),
            "msg_01Tk9wQ4eR7yU2iO5pA8sD3f",
            first="Thirty-one",
            thinks=True,
            reasoning="The user wants a prime. 31: check 2, 3, 5 — none divide it, so 31 is prime.",
        ),
    ),
    cuts=(
        Cut("anthropic.sse", '" it"', "Nineteen is prime — only 1 and 19 divide"),
        # message_stop is Anthropic's terminal: a stop reason alone does not finish the answer.
        Cut("anthropic.sse", "event: message_stop", "Nineteen is prime — only 1 and 19 divide it."),
        Cut("anthropic.sse", "event: content_block_delta", ""),
    ),
    error_bodies={
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
)

GEMINI = Vendor(
    "/v1beta",
    "GEMINI_API_KEY",
    streams=(
        Stream(
            "gemini.sse",
            "ok",
            "Twenty-nine is prime: none of 2, 3 or 5 divides it — and 5² > 29.",
            "stop",
            (14, 17 + 120),  # thinking tokens count as output, as they are billed
            "Fq5raJ-4NYKUz7IPpM2mqAc",
            first="Twenty-nine",
        ),
        Stream(
            "gemini_safety.sse",
            "partial",
            "Here is an overview",
            error_kind="content_filter",
            first="Here is an overview",
            request_id="Kx8rbLm2O6u1qtsPz5eBiA0",  # kept on an error
        ),
        Stream(
            "gemini_thinking.sse",
            "ok",
            "Thirty-seven is prime.",
            "stop",
            (9, 6 + 52),
            "Ab3cDe4fGh5iJk6lMn7oPq8",
            first="Thirty-seven is prime.",
            thinks=True,
            reasoning="**Finding a prime**\n\nI'll check 37 against 2, 3 and 5.",
        ),
    ),
    cuts=(
        Cut("gemini.sse", '" divides it', "Twenty-nine is prime: none of 2, 3 or 5"),
        # Gemini's terminal is a chunk with a finish reason; without it the answer is not finished.
        Cut(
            "gemini.sse",
            'data: {"candidates": [{"content": {"parts": [{"text": " divides',
            "Twenty-nine is prime: none of 2, 3 or 5",
        ),
    ),
    error_bodies={
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
)

VENDORS = {
    "openai_compatible": OPENAI_COMPATIBLE,
    "openai": OPENAI,
    "anthropic": ANTHROPIC,
    "gemini": GEMINI,
}


# What the test settings allow backends (the autouse fixture in tests/conftest.py, and every
# server or worker subprocess through helpers.subprocess_env): the test servers listen on
# loopback, and the key variables tests set are named in the allowed prefixes.
TEST_ALLOW_HOSTS = ("127.0.0.1", "localhost", "::1")
TEST_SECRET_ENV_PREFIXES = (
    "ARENA_KEY_", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "VLLM_API_KEY",
    "PROBE_TEST_", "CHECK_TEST_", "MOCK_VENDOR_", "POOL_TEST_",
)  # fmt: skip
BACKEND_TEST_ENV = {
    "ARENA_BACKEND_ALLOW_HOSTS": ",".join(TEST_ALLOW_HOSTS),
    "ARENA_SECRET_ENV_PREFIXES": ",".join(TEST_SECRET_ENV_PREFIXES),
}
