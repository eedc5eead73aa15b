"""The runner's rules, driven by the mock model's deliberate misbehaviours."""

from __future__ import annotations

import pytest

from arena.backends.base import ChatRequest, Message
from arena.backends.mock import MockBackend, MockSettings, answer_text
from arena.generation.runner import discard, stream_answer

REQUEST = ChatRequest(
    model_id="mock-test", messages=(Message("user", "Say something."),), params={"max_tokens": 60}
)


async def run(misbehaviour: str = "", *, max_chars: int = 100_000, timeout_s: float = 5, **mock):
    backend = MockBackend({"ttft_ms": 0, "tokens_per_s": 0, "misbehaviour": misbehaviour, **mock})
    seen: list[str] = []

    async def on_delta(text: str) -> None:
        seen.append(text)

    result = await stream_answer(
        backend, REQUEST, on_delta=on_delta, max_chars=max_chars, timeout_s=timeout_s
    )
    return result, "".join(seen)


def test_mock_answers_are_deterministic_and_differ_by_model():
    settings = MockSettings(answer_tokens=50)
    same = answer_text("m1", REQUEST, settings)
    assert same == answer_text("m1", REQUEST, settings)
    assert same != answer_text("m2", REQUEST, settings)


async def test_a_clean_stream_is_ok_with_usage_and_timings():
    result, shown = await run(answer_tokens=40)  # shorter than max_tokens: it ends by itself
    assert result.status == "ok"
    assert result.text == shown and result.text
    assert result.finish_reason == "stop"
    assert result.output_tokens and not result.tokens_estimated
    assert result.ttft_ms is not None and result.total_ms >= result.ttft_ms


async def test_missing_terminal_event_is_partial_protocol_error_keeping_text():
    result, shown = await run("missing_terminal")
    assert result.status == "partial"
    assert result.error_kind == "protocol"
    assert result.text == shown and result.text


async def test_error_midstream_fails_the_answer_and_keeps_the_text():
    result, _ = await run("error_midstream")
    assert result.status == "partial" and result.error_kind == "server" and result.text


async def test_error_before_any_text_is_an_error_without_ttft():
    result, _ = await run("error")
    assert result.status == "error" and result.ttft_ms is None and result.text == ""


@pytest.mark.parametrize(
    ("misbehaviour", "kind"),
    [("refused", "refused"), ("blocked", "content_filter"), ("empty", "protocol")],
)
async def test_refusals_blocks_and_empty_answers_fail(misbehaviour, kind):
    result, _ = await run(misbehaviour)
    assert result.status == "error" and result.error_kind == kind


async def test_missing_usage_is_estimated_and_marked():
    result, _ = await run("no_usage")
    assert result.status == "ok"
    assert result.tokens_estimated and result.output_tokens > 0


async def test_answers_are_capped_and_flagged_truncated():
    result, shown = await run(max_chars=30)
    assert result.truncated and len(result.text) == 30 and shown == result.text


async def test_a_stalled_stream_times_out():
    result, _ = await run("stall", timeout_s=0.05)
    assert result.status == "error" and result.error_kind == "timeout"


async def test_a_stop_ends_a_stalled_stream_at_once_as_stopped():
    import asyncio

    stop = asyncio.Event()
    backend = MockBackend({"ttft_ms": 0, "tokens_per_s": 0, "misbehaviour": "stall"})
    running = asyncio.ensure_future(
        stream_answer(backend, REQUEST, on_delta=discard, max_chars=1000, timeout_s=3600, stop=stop)
    )
    await asyncio.sleep(0)
    assert not running.done()
    stop.set()
    result = await running  # well before its hour-long deadline
    assert result.status == "error" and result.error_kind == "stopped"


async def test_a_stop_keeps_the_text_streamed_so_far():
    import asyncio

    stop = asyncio.Event()
    seen: list[str] = []

    async def on_delta(text: str) -> None:
        seen.append(text)
        if len(seen) == 3:
            stop.set()

    backend = MockBackend({"ttft_ms": 0, "tokens_per_s": 200, "answer_tokens": 400})
    result = await stream_answer(
        backend, REQUEST, on_delta=on_delta, max_chars=100_000, timeout_s=3600, stop=stop
    )
    assert result.status == "partial" and result.error_kind == "stopped"
    assert result.text == "".join(seen) and len(seen) >= 3


async def test_the_coalescer_sends_a_lone_delta_at_once():
    import asyncio

    from arena.generation.runner import Coalescer

    sent: list[str] = []

    async def send(text: str) -> None:
        sent.append(text)

    coalescer = Coalescer(send)
    await coalescer.add("Hello")
    await asyncio.sleep(0)  # one turn of the loop: no timer is involved

    assert sent == ["Hello"]


async def test_deltas_arriving_during_a_send_go_together_in_order():
    import asyncio

    from arena.generation.runner import Coalescer

    sent: list[str] = []
    gate = asyncio.Event()

    async def send(text: str) -> None:
        sent.append(text)
        await gate.wait()

    coalescer = Coalescer(send)
    await coalescer.add("one ")
    await asyncio.sleep(0)
    for text in ("two ", "three ", "four"):
        await coalescer.add(text)
    gate.set()
    await coalescer.flush()

    assert sent == ["one ", "two three four"]


async def test_nul_bytes_and_lone_surrogates_from_a_model_are_cleaned_before_anything_else():
    result, shown = await run(prefix="Nul\x00 here, half \ud800 there. ")
    assert result.status == "ok"
    assert result.text.startswith("Nul here, half \ufffd there. ")
    assert shown == result.text
