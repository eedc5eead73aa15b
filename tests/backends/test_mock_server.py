"""The project's mock server behaves as real inference servers do, so what passes against it
holds against them: it lists what it serves, keeps to max_tokens, and refuses model ids it
does not serve with the status vLLM uses."""

from __future__ import annotations

import httpx
import pytest

from arena.backends.base import ChatRequest, Message
from arena.backends.registry import backend_for
from arena.devtools.demo import demo_mock_config
from arena.devtools.mock_server import MockServer
from arena.generation.runner import discard, stream_answer


@pytest.fixture
async def demo_server():
    server = await MockServer(models=demo_mock_config(), default={"ttft_ms": 0}).start()
    for settings in server.models.values():
        settings.update(ttft_ms=0, tokens_per_s=0)
    yield server
    await server.stop()


async def answer(server: MockServer, model: str, **params):
    request = ChatRequest(model, (Message("user", "Explain recursion."),), params)
    adapter = backend_for("openai_compatible", {"base_url": server.url})
    return await stream_answer(adapter, request, on_delta=discard, max_chars=10_000, timeout_s=10)


async def test_it_lists_the_models_it_serves(demo_server):
    async with httpx.AsyncClient() as client:
        listed = (await client.get(demo_server.url + "/models")).json()
    assert [m["id"] for m in listed["data"]] == sorted(demo_mock_config())


async def test_it_never_sends_more_than_max_tokens_and_says_it_cut_the_answer(demo_server):
    result = await answer(demo_server, "mock-owl-2", max_tokens=64)
    assert (result.output_tokens, result.finish_reason) == (64, "length")
    whole = await answer(demo_server, "mock-owl-2", max_tokens=4096)
    assert whole.finish_reason == "stop" and whole.output_tokens > 64


async def test_a_model_id_it_does_not_serve_is_refused_as_a_request_fault(demo_server):
    result = await answer(demo_server, "mock-owl-3")
    assert (result.status, result.error_kind) == ("error", "bad_request")
    # The status and the error's type, never the server's own words.
    assert result.error_message == "HTTP 404: the backend refused the request (NotFoundError)"


@pytest.mark.parametrize(
    ("kind", "path", "conf"),
    [
        ("anthropic", "/v1", {"api_key_env": "MOCK_VENDOR_KEY", "max_tokens": 4096}),
        ("gemini", "/v1beta", {"api_key_env": "MOCK_VENDOR_KEY"}),
    ],
)
async def test_it_speaks_anthropics_and_geminis_streams_to_their_adapters(
    demo_server, monkeypatch, kind, path, conf
):
    monkeypatch.setenv("MOCK_VENDOR_KEY", "vendor-key")
    demo_server.api_key = "vendor-key"
    adapter = backend_for(kind, {"base_url": demo_server.origin + path, **conf})
    want = await answer_openai(demo_server, "mock-falcon-1")
    for params, finish in (({}, "stop"), ({"max_tokens": 16}, "length")):
        request = ChatRequest("mock-falcon-1", (Message("user", "Explain recursion."),), params)
        got = await stream_answer(adapter, request, on_delta=discard, max_chars=10_000,
                                  timeout_s=10)  # fmt: skip
        assert (got.status, got.finish_reason) == ("ok", finish)
        assert not got.tokens_estimated and got.request_id
        if finish == "stop":
            assert (got.text, got.output_tokens) == (want.text, want.output_tokens)
        else:
            assert got.output_tokens == 16 and want.text.startswith(got.text)
    unknown = ChatRequest("mock-owl-3", (Message("user", "hi"),), {})
    got = await stream_answer(adapter, unknown, on_delta=discard, max_chars=100, timeout_s=10)
    assert got.error_kind == "bad_request"


async def answer_openai(server: MockServer, model: str):
    key = server.api_key
    server.api_key = None
    try:
        return await answer(server, model)
    finally:
        server.api_key = key


async def test_the_vendor_streams_refuse_in_each_vendors_own_status_and_name():
    server = await MockServer(models={"mock-a": {}}, api_key="k").start()
    gemini = server.url.removesuffix("/v1") + "/v1beta/models/{}:streamGenerateContent?alt=sse"
    body = {"contents": [{"role": "user", "parts": [{"text": "Hi"}]}]}

    async def gemini_error(model: str, key: str, content: object) -> tuple[int, str]:
        sent = {"json": content} if isinstance(content, dict) else {"content": content}
        got = await client.post(gemini.format(model), headers={"x-goog-api-key": key}, **sent)
        return got.status_code, got.json()["error"]["status"]

    try:
        async with httpx.AsyncClient() as client:
            assert await gemini_error("mock-a", "wrong", body) == (400, "INVALID_ARGUMENT")
            assert await gemini_error("mock-a", "k", b"{") == (400, "INVALID_ARGUMENT")
            assert await gemini_error("mock-b", "k", body) == (404, "NOT_FOUND")
            got = await client.post(
                server.url + "/messages",
                headers={"x-api-key": "k"},
                json={"model": "mock-b", "max_tokens": 9, "messages": []},
            )
            assert (got.status_code, got.json()["error"]["type"]) == (404, "not_found_error")
    finally:
        await server.stop()
