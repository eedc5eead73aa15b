"""The mock server sees images in all three protocols: the openai, anthropic and google-genai
SDKs send one in their own form and get the answer the in-process mock gives for the same bytes
and text; a model configured without vision refuses it with the 400 its vendor sends, which
our adapters read as a request fault (a battle then voids, as on any backend error)."""

from __future__ import annotations

import pytest

from arena.backends.base import ChatRequest, Image, Message
from arena.backends.mock import MockSettings, answer_text
from arena.backends.registry import backend_for
from arena.devtools.fixture_server import FIXTURES
from arena.devtools.mock_server import MockServer
from arena.generation.runner import discard, stream_answer

PNG = (FIXTURES / "image_requests" / "red.png").read_bytes()
IMAGE = Image.of("image/png", PNG)
SEES, BLIND = "mock-eye-1", "mock-text-1"
PROMPT = "What colour is this?"
REFUSED = "does not support image input"
FAST = {"ttft_ms": 0, "tokens_per_s": 0}


@pytest.fixture
async def server():
    models = {SEES: {**FAST, "vision": True}, BLIND: dict(FAST)}
    server = await MockServer(models=models, api_key="sdk-key").start()
    yield server
    await server.stop()


def expected(**params) -> str:
    """What the in-process mock answers the same image and text."""
    request = ChatRequest(SEES, (Message("user", PROMPT, (IMAGE,)),), params)
    return answer_text(SEES, request, MockSettings(vision=True, **FAST))


async def test_the_openai_sdk_sends_an_image_url_and_the_mock_sees_it(server):
    from openai import AsyncOpenAI, BadRequestError

    client = AsyncOpenAI(base_url=server.url, api_key="sdk-key", max_retries=0)
    content = [{"type": "image_url", "image_url": {"url": IMAGE.data_url()}},
               {"type": "text", "text": PROMPT}]  # fmt: skip
    stream = await client.chat.completions.create(
        model=SEES, messages=[{"role": "user", "content": content}], stream=True,
        stream_options={"include_usage": True}, max_tokens=4096,
    )  # fmt: skip
    text, usage = "", None
    async for chunk in stream:
        text += "".join(c.delta.content or "" for c in chunk.choices)
        usage = chunk.usage or usage
    assert text == expected(max_tokens=4096) and "image" in text
    assert usage.prompt_tokens == len(PROMPT.split()) + 85
    with pytest.raises(BadRequestError) as refused:
        await client.chat.completions.create(
            model=BLIND, messages=[{"role": "user", "content": content}]
        )
    assert refused.value.status_code == 400 and REFUSED in refused.value.message
    assert refused.value.body["type"] == "invalid_request_error"
    await client.close()


async def test_the_anthropic_sdk_sends_an_image_block_and_the_mock_sees_it(server):
    from anthropic import AsyncAnthropic, BadRequestError

    client = AsyncAnthropic(base_url=server.origin, api_key="sdk-key", max_retries=0)
    source = {"type": "base64", "media_type": "image/png", "data": IMAGE.base64()}
    content = [{"type": "image", "source": source}, {"type": "text", "text": PROMPT}]
    async with client.messages.stream(
        model=SEES, max_tokens=4096, messages=[{"role": "user", "content": content}]
    ) as stream:
        text = "".join([piece async for piece in stream.text_stream])
        message = await stream.get_final_message()
    assert text == expected(max_tokens=4096) and message.stop_reason == "end_turn"
    with pytest.raises(BadRequestError) as refused:
        await client.messages.create(
            model=BLIND, max_tokens=64, messages=[{"role": "user", "content": content}]
        )
    assert refused.value.status_code == 400 and REFUSED in str(refused.value)
    await client.close()


async def test_the_google_genai_sdk_sends_inline_data_and_the_mock_sees_it(server):
    from google import genai
    from google.genai import errors, types

    client = genai.Client(api_key="sdk-key", http_options=types.HttpOptions(base_url=server.origin))
    contents = [types.Part.from_bytes(data=PNG, mime_type="image/png"), PROMPT]
    text = ""
    async for chunk in await client.aio.models.generate_content_stream(
        model=SEES, contents=contents
    ):
        text += chunk.text or ""
    assert text == expected()
    with pytest.raises(errors.ClientError) as refused:
        async for _ in await client.aio.models.generate_content_stream(
            model=BLIND, contents=contents
        ):
            pass
    assert refused.value.code == 400 and refused.value.status == "INVALID_ARGUMENT"
    assert REFUSED in refused.value.message


@pytest.mark.parametrize(
    ("kind", "path"), [("openai_compatible", "/v1"), ("anthropic", "/v1"), ("gemini", "/v1beta")]
)
async def test_our_adapters_get_the_image_seen_or_refused_as_a_request_fault(
    server, monkeypatch, kind, path
):
    monkeypatch.setenv("MOCK_VENDOR_KEY", "sdk-key")
    adapter = backend_for(
        kind, {"base_url": server.origin + path, "api_key_env": "MOCK_VENDOR_KEY"}
    )

    async def ask(model: str):
        request = ChatRequest(model, (Message("user", PROMPT, (IMAGE,)),), {"max_tokens": 4096})
        return await stream_answer(adapter, request, on_delta=discard, max_chars=10_000,
                                   timeout_s=10)  # fmt: skip

    seen = await ask(SEES)
    assert (seen.status, seen.text) == ("ok", expected(max_tokens=4096))
    refused = await ask(BLIND)
    assert (refused.status, refused.error_kind, refused.text) == ("error", "bad_request", "")
    assert refused.error_message.startswith("HTTP 400: the backend refused the request")
