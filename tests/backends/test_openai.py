"""What only the OpenAI adapter does: the request it sends.

Its recorded stream and error bodies run in ``test_contracts.py``.
"""

from __future__ import annotations

import pytest

from arena.devtools.fixture_server import Canned
from tests.helpers import KEYS, QUESTION, SYSTEM, backend, run

pytestmark = pytest.mark.usefixtures("vendor_keys")


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
