"""What every vendor adapter must do, each behaviour written once and run for every vendor.

The vendors' recorded streams, cuts and error bodies come from the table in ``vendors.py``;
what only one vendor does lives in its own ``test_<vendor>.py``.
"""

from __future__ import annotations

import pytest

from arena.core.text import estimate_tokens
from arena.devtools.fixture_server import Canned, stream_fixture
from tests.backends.vendors import VENDORS, Stream
from tests.helpers import KEYS, REQUEST, backend, estimated_input, run, variant

pytestmark = pytest.mark.usefixtures("vendor_keys")


def streams(*, thinking: bool = False) -> list:
    return [
        pytest.param(kind, case, id=f"{kind}-{case.fixture}")
        for kind, vendor in VENDORS.items()
        for case in vendor.streams
        if case.thinks or not thinking
    ]


CUTS = [(kind, *cut) for kind, vendor in VENDORS.items() for cut in vendor.cuts]
KEYED = [kind for kind, vendor in VENDORS.items() if vendor.requires_key]


# Whole streams ------------------------------------------------------------------------------


# 7-byte writes split JSON, lines and multi-byte characters across reads.
@pytest.mark.parametrize("split", ["events", 7], ids=["per-event", "7-byte-writes"])
@pytest.mark.parametrize(("kind", "case"), streams())
async def test_a_recorded_stream_gives_the_exact_result(server, kind, case: Stream, split):
    server.response = Canned.sse(case.fixture, headers=case.headers, split=split)
    result, seen = await run(backend(server, kind))

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


@pytest.mark.parametrize(("kind", "case"), streams(thinking=True))
async def test_ttft_starts_at_the_first_answer_text_not_at_thinking(server, kind, case: Stream):
    server.response = Canned.sse(case.fixture, pause_s=0.02)
    result, seen = await run(backend(server, kind))

    assert seen[0] == case.first
    assert "check" not in result.text  # the thinking text stays out of the answer
    assert result.reasoning == case.reasoning  # kept apart, whole
    # The first thinking came a pause or more before the first text: TTFT is at the text.
    assert result.reasoning_ttft_ms is not None and result.ttft_ms is not None
    assert result.ttft_ms > result.reasoning_ttft_ms


# Cut streams --------------------------------------------------------------------------------


@pytest.mark.parametrize("framing", ["chunked", "close"])
@pytest.mark.parametrize(("kind", "fixture", "before", "text"), CUTS)
async def test_a_cut_stream_is_partial_protocol_keeping_the_text(
    server, kind, fixture, before, text, framing
):
    body = stream_fixture(fixture)
    server.response = Canned(body=body, cut_at=body.index(before.encode()), framing=framing)
    result, _ = await run(backend(server, kind))
    assert result.status == ("partial" if text else "error")
    assert result.error_kind == "protocol"
    assert result.text == text
    assert result.finish_reason == ""


# HTTP errors and keys -----------------------------------------------------------------------


# (status, or "context" for a 400 about an over-long prompt; error kind; Retry-After seen)
@pytest.mark.parametrize(
    ("status", "error_kind", "retry_after"),
    [
        (401, "auth", None),
        (403, "auth", None),
        (429, "rate_limited", 7.0),
        (500, "server", None),
        ("context", "context_length", None),
    ],
)
@pytest.mark.parametrize("kind", VENDORS)
async def test_http_errors_are_typed(server, kind, status, error_kind, retry_after):
    """The vendor's error body for ``status`` is a typed error before any text."""
    headers = {"Retry-After": "7"} if status == 429 else {}
    code = 400 if status == "context" else status
    server.response = Canned.json(code, VENDORS[kind].error_bodies[status], headers)
    result, _ = await run(backend(server, kind))
    assert (result.status, result.error_kind, result.text) == ("error", error_kind, "")
    assert result.error_message.startswith(f"HTTP {code}")
    assert result.ttft_ms is None
    if retry_after is not None:
        adapter = backend(server, kind)
        events = [e async for e in adapter.stream(REQUEST)]
        assert events[-1].retry_after_s == retry_after


@pytest.mark.parametrize("kind", VENDORS)
async def test_an_error_body_is_not_echoed_so_a_key_in_it_cannot_leak(server, kind):
    key = KEYS[VENDORS[kind].key_env]
    server.response = Canned.json(401, {"error": {"message": f"Invalid API key: {key}"}})
    result, _ = await run(backend(server, kind))  # run() asserts no key in the result
    assert result.error_kind == "auth"
    assert result.error_message == "HTTP 401: the backend refused the credentials"


@pytest.mark.parametrize("kind", KEYED)
async def test_a_missing_key_is_an_auth_error_naming_the_variable(server, kind, monkeypatch):
    """A missing key is an auth error naming the variable, and nothing is sent."""
    monkeypatch.delenv(VENDORS[kind].key_env)
    result, _ = await run(backend(server, kind))
    assert (result.status, result.error_kind) == ("error", "auth")
    assert VENDORS[kind].key_env in result.error_message
    assert server.requests == []

    result, _ = await run(backend(server, kind, api_key_env="ARENA_UNSET_KEY_VAR"))
    assert result.error_kind == "auth" and "ARENA_UNSET_KEY_VAR" in result.error_message


async def test_zero_usage_for_an_answer_that_is_there_is_estimated_not_trusted(server):
    body = variant("vllm.sse", '"prompt_tokens":31,"total_tokens":44,"completion_tokens":13',
                   '"prompt_tokens":0,"total_tokens":0,"completion_tokens":0')  # fmt: skip
    server.response = Canned(body=body)
    result, _ = await run(backend(server, "openai_compatible"))
    assert result.status == "ok" and result.text
    assert result.tokens_estimated
    assert result.input_tokens == estimated_input()
    assert result.output_tokens == estimate_tokens(result.text)
