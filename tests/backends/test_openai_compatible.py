"""What only the OpenAI-compatible adapter does: its request keeps ``max_tokens``.

Its recorded vLLM, TGI, Ollama and OpenRouter streams run in ``test_contracts.py``.
"""

from __future__ import annotations

import pytest

from arena.devtools.fixture_server import Canned
from tests.helpers import KEYS, backend, run

pytestmark = pytest.mark.usefixtures("vendor_keys")


async def test_openai_compatible_request_keeps_max_tokens(server):
    server.response = Canned.sse("vllm.sse")
    await run(backend(server, "openai_compatible"))
    body = server.last.json()
    assert server.last.headers["authorization"] == f"Bearer {KEYS['VLLM_API_KEY']}"
    assert body["max_tokens"] == 256 and "max_completion_tokens" not in body
