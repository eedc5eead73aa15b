"""Run one answer: stream it from its backend, publish deltas, record the result once.

``stream_answer`` applies the rules every backend shares (TTFT at the first non-empty delta, a
stream without a terminal event is partial, caps and deadlines) and knows nothing of Django.
``answer_generate`` is the glue the Celery task and the in-process runner both call: the
database is touched once before the stream and once after it, never per token.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings

from arena.backends.base import Backend, ChatRequest, Finished, Routed, StreamError, TextDelta
from arena.text import estimate_tokens

log = logging.getLogger(__name__)

FLUSH_INTERVAL_S = 0.03
FLUSH_CHARS = 256


@dataclass
class StreamResult:
    status: str  # ok | partial | error
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

    def as_dict(self) -> dict:
        return asdict(self)


async def stream_answer(
    backend: Backend,
    request: ChatRequest,
    *,
    on_delta: Callable[[str], Awaitable[None]],
    max_chars: int,
    timeout_s: float,
) -> StreamResult:
    started = time.perf_counter()
    parts: list[str] = []
    size = 0
    ttft_ms: float | None = None
    finished: Finished | None = None
    error: StreamError | None = None
    truncated = False
    replica = ""
    try:
        # aclosing: a stream left early (cap, error) closes its HTTP response now, not at GC.
        async with (
            asyncio.timeout(timeout_s),
            contextlib.aclosing(backend.stream(request)) as events,
        ):
            async for event in events:
                if isinstance(event, Routed):
                    replica = event.replica
                elif isinstance(event, TextDelta):
                    if not event.text:
                        continue
                    if ttft_ms is None:
                        ttft_ms = (time.perf_counter() - started) * 1000
                    text = event.text[: max_chars - size]
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
        status="ok", text=text, ttft_ms=ttft_ms, total_ms=total_ms, replica=replica
    )
    result.truncated = truncated
    if finished is not None:
        result.finish_reason = finished.finish_reason
        result.input_tokens = finished.input_tokens
        result.output_tokens = finished.output_tokens
        result.request_id = finished.request_id
    if result.output_tokens is None:
        result.output_tokens = estimate_tokens(text)
        result.tokens_estimated = True
    if result.input_tokens is None:
        result.input_tokens = estimate_tokens("".join(m.content for m in request.messages))
        result.tokens_estimated = True
    if error is not None:
        result.status = "partial" if text else "error"
        result.error_kind = error.kind
        result.error_message = error.message
    return result


class _Coalescer:
    """Batches deltas so a fast model costs a few channel messages, not one per token."""

    def __init__(self, send: Callable[[str], Awaitable[None]]) -> None:
        self._send = send
        self._buf: list[str] = []
        self._size = 0
        self._last = time.monotonic()

    async def add(self, text: str) -> None:
        self._buf.append(text)
        self._size += len(text)
        now = time.monotonic()
        if self._size >= FLUSH_CHARS or now - self._last >= FLUSH_INTERVAL_S:
            await self.flush()

    async def flush(self) -> None:
        if self._buf:
            text = "".join(self._buf)
            self._buf.clear()
            self._size = 0
            await self._send(text)
        self._last = time.monotonic()


def battle_group(battle_id: object) -> str:
    return f"battle.{battle_id}"


async def answer_generate(answer_id: int) -> None:
    """Generate one answer end to end. Safe to call twice: a finished answer is left alone."""
    from arena import services

    job = await database_sync_to_async(services.answer_claim)(answer_id=answer_id)
    layer = get_channel_layer()
    if job is None:
        return
    group = battle_group(job.battle_id)
    if job.abandoned is not None:
        await layer.group_send(group, job.abandoned)
        return

    seq = 0

    async def publish(text: str) -> None:
        nonlocal seq
        seq += 1
        await layer.group_send(
            group, {"type": "answer.delta", "answer": answer_id, "seq": seq, "text": text}
        )

    coalescer = _Coalescer(publish)
    conf = settings.ARENA
    result = await stream_answer(
        job.backend,
        job.request,
        on_delta=coalescer.add,
        max_chars=conf["ANSWER_MAX_CHARS"],
        timeout_s=conf["TURN_DEADLINE_S"],
    )
    await coalescer.flush()
    done = await database_sync_to_async(services.answer_finish)(answer_id=answer_id, result=result)
    await layer.group_send(group, done)
