"""The pure runner: one backend stream in, one ``StreamResult`` out.

``stream_answer`` applies the rules every backend shares (TTFT at the first non-empty delta, a
stream without a terminal event is partial, caps and deadlines) and touches no database; its
status is the one every answer-like row keeps (``core.answers.AnswerStatus``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass

from arena.backends.base import (
    Backend,
    ChatRequest,
    Finished,
    Identified,
    ReasoningDelta,
    Routed,
    StreamError,
    TextDelta,
)
from arena.core.answers import AnswerStatus
from arena.core.text import estimate_tokens, text_clean

log = logging.getLogger(__name__)


@dataclass
class StreamResult:
    status: str  # AnswerStatus: OK, PARTIAL or ERROR
    text: str
    finish_reason: str = ""
    input_tokens: int | None = None
    output_tokens: int | None = None
    tokens_estimated: bool = False
    ttft_ms: float | None = None
    total_ms: float = 0.0
    truncated: bool = False
    error_kind: str = ""
    error_message: str = ""
    request_id: str | None = None
    replica: str = ""
    reasoning: str = ""  # a reasoning model's thinking, apart from the answer
    reasoning_ttft_ms: float | None = None  # to its first thinking token, beside ttft_ms

    def as_dict(self) -> dict:
        return asdict(self)


async def discard(_text: str) -> None:
    """An ``on_delta`` for a stream nobody watches as it arrives (probes, judges, evaluations)."""
    return None


async def stream_answer(
    backend: Backend,
    request: ChatRequest,
    *,
    on_delta: Callable[[str], Awaitable[None]],
    max_chars: int,
    timeout_s: float,
    stop: asyncio.Event | None = None,
    on_first: Callable[[float], Awaitable[None]] | None = None,
) -> StreamResult:
    """``stop``, once set, ends the stream as the deadline would (its HTTP response closed at
    once, even while the model sends nothing), with the error kind ``stopped``."""
    started = time.perf_counter()
    parts: list[str] = []
    size = 0
    ttft_ms: float | None = None
    finished: Finished | None = None
    error: StreamError | None = None
    truncated = False
    replica = ""
    request_id: str | None = None
    reasoning: list[str] = []
    reasoning_size = 0
    reasoning_ms: float | None = None
    try:
        # aclosing: a stream left early (cap, error) closes its HTTP response now, not at GC.
        async with (
            asyncio.timeout(timeout_s) as deadline,
            contextlib.aclosing(backend.stream(request)) as events,
            _stopping(stop, deadline),
        ):
            async for event in events:
                if isinstance(event, Routed):
                    replica = event.replica
                elif isinstance(event, Identified):
                    request_id = event.request_id
                elif isinstance(event, ReasoningDelta):
                    if reasoning_ms is None:
                        reasoning_ms = (time.perf_counter() - started) * 1000
                    if reasoning_size < max_chars:
                        reasoning.append(event.text[: max_chars - reasoning_size])
                        reasoning_size += len(reasoning[-1])
                elif isinstance(event, TextDelta):
                    text = text_clean(event.text)[: max_chars - size]
                    if not text:
                        continue
                    if ttft_ms is None:
                        ttft_ms = (time.perf_counter() - started) * 1000
                        if on_first is not None:  # the figure kept, for a live page
                            await on_first(ttft_ms)
                    parts.append(text)
                    size += len(text)
                    await on_delta(text)
                    if size >= max_chars:
                        truncated = True
                        finished = Finished("length")
                        break
                elif isinstance(event, Finished):
                    finished = event
                    break
                elif isinstance(event, StreamError):
                    error = event
                    break
    except TimeoutError:
        if stop is not None and stop.is_set():
            error = StreamError("stopped", "Stopped: the battle ended before the answer did.")
        else:
            error = StreamError("timeout", f"No complete answer within {timeout_s:g} s.")
    except Exception as exc:  # a backend bug must fail the answer, never hang the battle
        log.exception("backend stream failed")
        error = StreamError("protocol", f"The backend stream failed: {type(exc).__name__}.")
    total_ms = (time.perf_counter() - started) * 1000
    text = "".join(parts)

    if error is None and finished is None:
        error = StreamError("protocol", "The stream ended without a terminal event.")
    if error is None and finished is not None:
        if finished.finish_reason in {"refusal", "refused"}:
            error = StreamError("refused", "The model refused to answer.")
        elif finished.finish_reason == "content_filter":
            error = StreamError("content_filter", "The answer was blocked by a content filter.")
        elif not text:
            error = StreamError("protocol", "The model returned an empty answer.")

    result = StreamResult(
        status=AnswerStatus.OK, text=text, ttft_ms=ttft_ms, total_ms=total_ms, replica=replica
    )
    result.truncated = truncated
    if finished is not None:
        result.finish_reason = finished.finish_reason
        # Zero tokens for text that is there is no count (LiteLLM's Gemini route reports 0/0):
        # it is estimated like a count never sent, never priced as $0 "known".
        result.input_tokens = finished.input_tokens or None
        result.output_tokens = (finished.output_tokens or None) if text else finished.output_tokens
        result.request_id = finished.request_id or request_id
    if result.output_tokens is None:
        result.output_tokens = estimate_tokens(text)
        result.tokens_estimated = True
    if result.input_tokens is None:
        result.input_tokens = estimate_tokens("".join(m.content for m in request.messages))
        result.tokens_estimated = True
    result.request_id = result.request_id or request_id
    result.reasoning, result.reasoning_ttft_ms = "".join(reasoning), reasoning_ms
    if error is not None:
        result.status = AnswerStatus.PARTIAL if text else AnswerStatus.ERROR
        result.error_kind = error.kind
        result.error_message = error.message
    return result


@contextlib.asynccontextmanager
async def _stopping(stop: asyncio.Event | None, deadline: asyncio.Timeout):
    """While the block runs, ``stop`` being set brings its deadline forward to now."""
    if stop is None:
        yield
        return

    async def watch() -> None:
        await stop.wait()
        if not deadline.expired():  # a deadline already under way ends the stream anyway
            deadline.reschedule(asyncio.get_running_loop().time())

    watcher = asyncio.get_running_loop().create_task(watch())
    try:
        yield
    finally:
        watcher.cancel()


class Coalescer:
    """Sends each delta at once when no send is in flight; what arrives meanwhile goes in the
    next send, together. A lone answer costs no added wait, and a fast model or a busy channel
    layer costs a few messages, not one per token."""

    def __init__(self, send: Callable[[str], Awaitable[None]]) -> None:
        self._send = send
        self._buf: list[str] = []
        self._sender: asyncio.Task | None = None

    async def add(self, text: str) -> None:
        self._buf.append(text)
        if self._sender is None or self._sender.done():
            if self._sender is not None:
                self._sender.result()  # an earlier send's failure surfaces here
            self._sender = asyncio.create_task(self._drain())

    async def _drain(self) -> None:
        while self._buf:
            text = "".join(self._buf)
            self._buf.clear()
            await self._send(text)

    async def flush(self) -> None:
        """Everything added so far, sent, in order."""
        if self._sender is not None:
            await self._sender
        await self._drain()
