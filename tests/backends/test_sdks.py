"""The vendors' official SDKs stream from the project's mock server as from their own APIs:
text, usage and finish reasons, so what an integrator builds against the mock will hold."""

from __future__ import annotations

import pytest

from arena.devtools.demo import demo_mock_config
from arena.devtools.mock_server import MockServer

MODEL = "mock-falcon-1"
PROMPT = "Explain recursion."


@pytest.fixture
async def server():
    server = await MockServer(models=demo_mock_config(), api_key="sdk-key").start()
    for settings in server.models.values():
        settings.update(ttft_ms=0, tokens_per_s=0)
    yield server
    await server.stop()


async def test_the_openai_sdk_streams_text_usage_and_finish(server):
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=server.url, api_key="sdk-key", max_retries=0)
    stream = await client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": PROMPT}], stream=True,
        stream_options={"include_usage": True}, max_tokens=16,
    )  # fmt: skip
    text, finish, usage = "", None, None
    async for chunk in stream:
        for choice in chunk.choices:
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
        usage = chunk.usage or usage
    assert text and finish == "length"
    assert usage.completion_tokens == 16 and usage.prompt_tokens > 0
    models = await client.models.list()
    assert MODEL in [m.id async for m in models]
    await client.close()


async def test_the_anthropic_sdk_streams_text_usage_and_stop_reason(server):
    from anthropic import AsyncAnthropic

    client = AsyncAnthropic(base_url=server.origin, api_key="sdk-key", max_retries=0)
    async with client.messages.stream(
        model=MODEL, max_tokens=4096, messages=[{"role": "user", "content": PROMPT}]
    ) as stream:
        text = "".join([piece async for piece in stream.text_stream])
        message = await stream.get_final_message()
    assert text and message.stop_reason == "end_turn"
    assert message.usage.output_tokens > 0 and message.usage.input_tokens > 0
    assert message.content[0].text == text
    await client.close()


async def test_the_google_genai_sdk_streams_text_usage_and_finish(server):
    from google import genai
    from google.genai import types

    client = genai.Client(api_key="sdk-key", http_options=types.HttpOptions(base_url=server.origin))
    text, last = "", None
    async for chunk in await client.aio.models.generate_content_stream(
        model=MODEL, contents=PROMPT, config=types.GenerateContentConfig(max_output_tokens=16)
    ):
        text += chunk.text or ""
        last = chunk
    assert text
    assert last.candidates[0].finish_reason == types.FinishReason.MAX_TOKENS
    assert last.usage_metadata.candidates_token_count == 16
