"""Replays a stored answer as a stream: gold battles show known answers at a model's pace."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from arena.backends.base import ChatRequest, Event, Finished, TextDelta
from arena.backends.mock import word_chunks


class ReplayBackend:
    def __init__(self, settings: dict) -> None:
        self.text = str(settings.get("text", ""))
        self.ttft_ms = float(settings.get("ttft_ms") or 300.0)
        self.tokens_per_s = float(settings.get("tokens_per_s") or 40.0)
        self.output_tokens = settings.get("output_tokens")

    async def stream(self, request: ChatRequest) -> AsyncIterator[Event]:
        await asyncio.sleep(self.ttft_ms / 1000)
        delay = 1.0 / self.tokens_per_s if self.tokens_per_s > 0 else 0.0
        chunks = list(word_chunks(self.text))
        for chunk in chunks:
            yield TextDelta(chunk)
            await asyncio.sleep(delay)
        yield Finished("stop", None, self.output_tokens or len(chunks), request_id="replay")
