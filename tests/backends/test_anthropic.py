"""What only the Anthropic adapter does: its stop reasons, error events and request shape.

Its recorded streams, cuts and error bodies run in ``test_contracts.py``.
"""

from __future__ import annotations

import pytest

from arena.backends.base import ChatRequest, Message
from arena.devtools.fixture_server import Canned
from tests.helpers import KEYS, QUESTION, SYSTEM, backend, run, variant

pytestmark = pytest.mark.usefixtures("vendor_keys")

# Variants of the recorded streams -----------------------------------------------------------


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


# Outgoing requests --------------------------------------------------------------------------


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
        ({}, {}, 8192),  # the API requires max_tokens: seed 001's default, 8192, is sent
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
