"""How errors are classified, once for every adapter: a request's own faults (bad parameters,
an unknown model, a prompt over the context window, a key) are not the replica's, are not
retried on another replica and never mark one down; server faults and timeouts are."""

from __future__ import annotations

import json

import pytest

from arena.backends.pools import pools_forget
from arena.backends.registry import backend_for
from arena.devtools.fixture_server import Canned, FixtureServer, stream_fixture
from tests.helpers import run

pytestmark = pytest.mark.django_db  # a pool publishes replica state through the cache


def error_chunk(error: dict) -> bytes:
    """A 200 stream that fails at once, as vLLM, OpenRouter and LiteLLM report errors."""
    return f"data: {json.dumps({'id': 'x', 'choices': [], 'error': error})}\n\n".encode()


CHUNK_ERRORS = [
    ({"code": 400, "message": "temperature must be at most 2"}, "bad_request"),
    ({"code": 404, "message": "The model `llama-9` does not exist."}, "bad_request"),
    ({"type": "invalid_request_error", "message": "unknown field top_q"}, "bad_request"),
    ({"code": "BadRequestError", "message": "extra fields not permitted"}, "bad_request"),
    (
        {"code": 400, "message": "This model's maximum context length is 8192 tokens"},
        "context_length",
    ),  # fmt: skip
    ({"type": "authentication_error", "message": "invalid x-api-key"}, "auth"),
    ({"code": 429, "message": "slow down"}, "rate_limited"),
    ({"code": 502, "message": "Provider returned error: upstream connection reset"}, "server"),
    ({"message": "something broke"}, "server"),
]


@pytest.mark.parametrize(("error", "kind"), CHUNK_ERRORS)
async def test_an_error_inside_a_stream_is_classified_by_its_code_and_type(server, error, kind):
    server.response = Canned(body=error_chunk(error))
    result, _ = await run(backend_for("openai_compatible", {"base_url": server.url}))
    assert (result.status, result.error_kind) == ("error", kind)


@pytest.mark.parametrize(
    "body",
    [
        {"error": {"message": "prompt is too long: 210000 tokens > 200000 maximum"}},
        {"error": {"message": "the request exceeds the available context size"}},
        {
            "error": "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. "
            "Given: 5000 (too many tokens)"
        },
    ],  # fmt: skip
)
async def test_over_long_prompts_are_context_length_in_every_servers_wording(server, body):
    server.response = Canned.json(400, body)
    result, _ = await run(backend_for("openai_compatible", {"base_url": server.url}))
    assert result.error_kind == "context_length"


async def test_a_request_fault_is_not_retried_on_another_replica_nor_marks_one_down():
    replicas = [await FixtureServer().start() for _ in range(2)]
    try:
        for replica in replicas:
            replica.response = Canned(
                body=error_chunk({"code": 404, "message": "The model `llama-9` does not exist."})
            )
        settings = {"replicas": [{"base_url": r.url} for r in replicas], "fail_threshold": 1}
        pooled = backend_for("openai_compatible", settings)
        for _ in range(4):
            result, _ = await run(pooled)
            assert result.error_kind == "bad_request"
        assert sum(len(r.requests) for r in replicas) == 4  # each once, never a second replica
        assert not any(pooled.pool.is_down(r) for r in pooled.pool.replicas)
    finally:
        for replica in replicas:
            await replica.stop()
        pools_forget([r.url for r in replicas])


async def test_a_connection_the_server_dropped_after_an_error_does_not_fail_the_next_answer(
    server,
):
    # uvicorn-based servers keep the connection after a 500 (no "Connection: close") and
    # then drop it: the next, unrelated request must not fail on it.
    server.queued = [
        Canned(
            status=500,
            body=b'{"error": "boom"}',
            content_type="application/json",
            framing="length",
            split=None,
            poisoned=True,
        )  # fmt: skip
    ]
    server.response = Canned.sse("vllm.sse")
    adapter = backend_for("openai_compatible", {"base_url": server.url})
    first, _ = await run(adapter)
    assert first.error_kind == "server"
    second, _ = await run(adapter)
    assert second.status == "ok" and second.text.startswith("Seven")
    assert len(server.requests) == 2  # the dropped try is never answered; the fresh one is


# What servers send that is not quite a stream ------------------------------------------------

COMPLETION = {
    "id": "chatcmpl-9x", "object": "chat.completion", "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Seven is prime."},
                 "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 12, "completion_tokens": 4, "total_tokens": 16},
}  # fmt: skip


async def test_one_json_answer_to_a_streamed_request_is_read_as_the_answer_it_is(server):
    server.response = Canned.json(200, COMPLETION)
    result, _ = await run(backend_for("openai_compatible", {"base_url": server.url}))
    assert (result.status, result.text, result.finish_reason) == ("ok", "Seven is prime.", "stop")
    assert (result.input_tokens, result.output_tokens, result.request_id) == (12, 4, "chatcmpl-9x")


async def test_a_json_error_in_a_200_is_classified_and_other_json_is_named_for_what_it_is(server):
    server.response = Canned.json(200, {"error": {"code": 404, "message": "no model llama-9"}})
    result, _ = await run(backend_for("openai_compatible", {"base_url": server.url}))
    assert (result.status, result.error_kind) == ("error", "bad_request")
    server.response = Canned.json(200, {"hello": "world"})
    result, _ = await run(backend_for("openai_compatible", {"base_url": server.url}))
    assert result.error_kind == "protocol" and "one JSON body" in result.error_message


async def test_a_cut_stream_keeps_the_request_id_that_arrived(server):
    body = (
        b'data: {"id":"chatcmpl-cut","choices":[{"index":0,"delta":{"content":"Seven"}}]}\n\n'
        b'data: {"id":"chatcmpl-cut","choices":[{"index":0,"delta":{"content":" is"}}]}\n\n'
    )
    server.response = Canned(body=body, headers={"x-request-id": "req-7"}, cut_at=len(body))
    result, _ = await run(backend_for("openai_compatible", {"base_url": server.url}))
    assert (result.status, result.text) == ("partial", "Seven is")
    assert result.request_id == "chatcmpl-cut"  # the chunks' id, over the header's


async def test_only_the_first_choice_is_the_answer(server):
    body = (
        b'data: {"id":"c","choices":[{"index":1,"delta":{"content":"Other. "}}]}\n\n'
        b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"Seven."}}]}\n\n'
        b'data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
        b"data: [DONE]\n\n"
    )
    server.response = Canned(body=body)
    result, _ = await run(backend_for("openai_compatible", {"base_url": server.url}))
    assert (result.status, result.text) == ("ok", "Seven.")


async def test_no_first_token_in_time_is_a_timeout_even_while_the_server_keeps_writing(server):
    # Keep-alive comments every 50 ms, the answer only after them: no read ever times out.
    body = b": ping\n\n" * 6 + stream_fixture("vllm.sse")
    server.response = Canned(body=body, pause_s=0.05)
    adapter = backend_for("openai_compatible", {"base_url": server.url,
                                                "first_token_timeout_s": 0.1})  # fmt: skip
    result, _ = await run(adapter)
    assert (result.status, result.error_kind) == ("error", "timeout")
    patient = backend_for("openai_compatible", {"base_url": server.url,
                                                "first_token_timeout_s": 30})  # fmt: skip
    result, _ = await run(patient)
    assert result.status == "ok"
