"""probe_backend against the real mock OpenAI-compatible server, over HTTP."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import pytest
from django.core.management import CommandError, call_command

from arena.devtools.mock_server import MockServer
from tests.helpers import serving

DOCUMENTED_KEYS = {
    "status",
    "text",
    "ttft_ms",
    "total_ms",
    "finish_reason",
    "usage",
    "error",
    "request_id",
}
MODELS = {
    "good": {"answer_tokens": 12},  # ends by itself, within --max-tokens
    "cut": {"misbehaviour": "missing_terminal"},
    "busy": {"misbehaviour": "rate_limited"},
    "quiet": {"misbehaviour": "no_usage"},
}


@pytest.fixture
def server() -> Iterator[MockServer]:
    with serving(models=MODELS) as running:
        yield running


def probe(*args: str) -> tuple[int, str]:
    """(exit status, stdout) of one probe_backend run."""
    out = io.StringIO()
    try:
        call_command("probe_backend", *args, stdout=out, stderr=io.StringIO())
    except SystemExit as exc:
        return int(exc.code), out.getvalue()
    return 0, out.getvalue()


def probe_json(server: MockServer, model: str, *extra: str) -> tuple[int, dict]:
    code, out = probe(
        "--kind",
        "openai_compatible",
        "--url",
        server.url,
        "--model",
        model,
        "--prompt",
        "Say something short.",
        "--max-tokens",
        "30",
        "--timeout",
        "10",
        "--json",
        *extra,
    )
    return code, json.loads(out)


def test_ok_answer_is_reported_with_usage_timings_and_request_id(server):
    code, report = probe_json(server, "good")

    assert code == 0
    assert report["status"] == "ok"
    assert report["text"]
    assert report["finish_reason"] == "stop"
    assert report["error"] is None
    assert report["usage"]["estimated"] is False
    assert report["usage"]["output_tokens"] > 0 and report["usage"]["input_tokens"] == 3
    assert isinstance(report["ttft_ms"], float)
    assert report["total_ms"] >= report["ttft_ms"]
    assert report["request_id"].startswith("chatcmpl-")


def test_json_output_is_exactly_one_object_with_exactly_the_documented_keys(server):
    _, out = probe(
        *("--kind", "openai_compatible", "--url", server.url, "--model", "good"),
        *("--prompt", "Hi", "--json"),
    )

    decoder = json.JSONDecoder()
    report, end = decoder.raw_decode(out)
    assert out[end:].strip() == ""  # nothing but the one object
    assert isinstance(report, dict)
    assert set(report) == DOCUMENTED_KEYS
    assert set(report["usage"]) == {"input_tokens", "output_tokens", "estimated"}


def test_error_object_has_exactly_kind_and_message(server):
    _, report = probe_json(server, "busy")

    assert set(report) == DOCUMENTED_KEYS
    assert set(report["error"]) == {"kind", "message"}


def test_stream_cut_before_its_terminal_event_is_partial_with_the_text_so_far(server):
    code, report = probe_json(server, "cut")

    assert code == 1
    assert report["status"] == "partial"
    assert report["error"]["kind"] == "protocol"
    assert report["text"]
    assert report["finish_reason"] is None


def test_http_429_is_rate_limited(server):
    code, report = probe_json(server, "busy")

    assert code == 1
    assert report["status"] == "error"
    assert report["error"]["kind"] == "rate_limited"
    assert "429" in report["error"]["message"]
    assert report["text"] == "" and report["ttft_ms"] is None


def test_missing_usage_is_estimated(server):
    code, report = probe_json(server, "quiet")

    assert code == 0
    assert report["status"] == "ok"
    assert report["usage"]["estimated"] is True
    assert report["usage"]["output_tokens"] > 0


@pytest.mark.parametrize("key", [None, "wrong-key"])
def test_missing_or_wrong_api_key_is_auth(monkeypatch, key):
    extra: tuple[str, ...] = ()
    if key is not None:
        monkeypatch.setenv("PROBE_TEST_KEY", key)
        extra = ("--api-key-env", "PROBE_TEST_KEY")
    with serving(models=MODELS, api_key="right-key") as server:
        code, report = probe_json(server, "good", *extra)

    assert code == 1
    assert report["status"] == "error"
    assert report["error"]["kind"] == "auth"


def test_the_right_api_key_from_the_environment_is_sent(monkeypatch):
    monkeypatch.setenv("PROBE_TEST_KEY", "right-key")
    with serving(models=MODELS, api_key="right-key") as server:
        code, report = probe_json(server, "good", "--api-key-env", "PROBE_TEST_KEY")

    assert code == 0 and report["status"] == "ok"


def test_readable_summary_without_json(server):
    code, out = probe(
        *("--kind", "openai_compatible", "--url", server.url, "--model", "busy"),
        *("--prompt", "Hi"),
    )

    assert code == 1
    assert "status:        error" in out
    assert "error:         rate_limited: HTTP 429" in out
    with pytest.raises(json.JSONDecodeError):
        json.loads(out)


def test_unknown_kind_lists_the_installed_kinds():
    with pytest.raises(CommandError) as excinfo:
        probe("--kind", "carrier_pigeon", "--model", "m", "--prompt", "Hi")

    assert "carrier_pigeon" in str(excinfo.value)
    assert "openai_compatible" in str(excinfo.value) and "mock" in str(excinfo.value)


def test_unreachable_server_is_an_error_not_a_crash():
    with serving(models=MODELS) as server:
        url = server.url
    code, out = probe(
        *("--kind", "openai_compatible", "--url", url, "--model", "good"),
        *("--prompt", "Hi", "--timeout", "5", "--json"),
    )

    report = json.loads(out)
    assert code == 1
    assert report["status"] == "error" and report["error"]["kind"] == "server"
