"""A deterministic mock model: the only thing faked in the product, standing in for a remote API.

The answer is derived from SHA-256 of (model id, conversation), so the same question always gets
the same answer from the same model; speed, length and style come from the model's settings.
Misbehaviours can be switched on per model to drive the runner's failure branches.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

from arena.backends.base import ChatRequest, Event, Finished, StreamError, TextDelta

WORDS = (
    "the answer depends on context and the data we have consider first what is being asked "
    "then weigh each option carefully a simple approach often works best in practice we can "
    "check the result against a small example before relying on it more broadly this keeps "
    "the reasoning honest and easy to follow note that edge cases matter here as well since "
    "inputs vary one useful habit is to state assumptions clearly and test them early"
).split()

STYLES = ("plain", "markdown", "terse", "lists")
MISBEHAVIOURS = (
    "stall",
    "error",
    "error_midstream",
    "missing_terminal",
    "no_usage",
    "empty",
    "refused",
    "blocked",
    "incomplete",
    "slow_first_token",
)


@dataclass(frozen=True)
class MockSettings:
    ttft_ms: float = 200.0
    tokens_per_s: float = 50.0
    answer_tokens: int = 120
    style: str = "plain"
    misbehaviour: str = ""
    prefix: str = ""  # literal text the answer starts with, e.g. markup to test sanitising
    # Benchmarks only: each chunk carries its emit time, so a client can measure the delay.
    timestamps: bool = False

    @classmethod
    def from_dict(cls, data: dict) -> MockSettings:
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)


def _rng(model_id: str, request: ChatRequest) -> random.Random:
    key = model_id + "\x00" + "\x00".join(m.content for m in request.messages)
    return random.Random(hashlib.sha256(key.encode("utf-8")).digest())


def _sentence(rng: random.Random, n_words: int) -> str:
    words = [rng.choice(WORDS) for _ in range(max(2, n_words))]
    return " ".join(words).capitalize() + "."


def answer_text(model_id: str, request: ChatRequest, settings: MockSettings) -> str:
    """The whole answer, deterministically; styles differ the way real models' answers do."""
    rng = _rng(model_id, request)
    budget = int(request.params.get("max_tokens") or settings.answer_tokens)
    n_words = max(3, min(settings.answer_tokens, budget))
    sentences: list[str] = []
    while sum(len(s.split()) for s in sentences) < n_words:
        sentences.append(_sentence(rng, rng.randint(6, 14)))
    return settings.prefix + _styled(sentences, settings.style)


def _styled(sentences: list[str], style: str) -> str:
    if style == "terse":
        return " ".join(sentences[:2])
    if style == "markdown":
        head, rest = sentences[:2], sentences[2:]
        parts = ["## Overview", " ".join(head), "## Details"]
        parts += [f"- **{s.split()[0]}** {' '.join(s.split()[1:])}" for s in rest[:4]]
        parts += [" ".join(rest[4:])] if rest[4:] else []
        return "\n\n".join(parts[:3]) + "\n\n" + "\n".join(parts[3:])
    if style == "lists":
        return (
            sentences[0] + "\n\n" + "\n".join(f"{i}. {s}" for i, s in enumerate(sentences[1:], 1))
        )
    return " ".join(sentences)


def word_chunks(text: str) -> Iterator[str]:
    """Word-sized chunks, the way a tokenizer-backed stream arrives."""
    start = 0
    for i, ch in enumerate(text):
        if ch in " \n" and i > start:
            yield text[start : i + 1]
            start = i + 1
    if start < len(text):
        yield text[start:]


class MockBackend:
    def __init__(self, settings: dict | None = None) -> None:
        self.settings = MockSettings.from_dict(settings or {})

    async def stream(self, request: ChatRequest) -> AsyncIterator[Event]:
        s = self.settings
        text = answer_text(request.model_id, request, s)
        chunks = list(word_chunks(text))
        prompt_tokens = sum(len(m.content.split()) for m in request.messages)
        ttft = s.ttft_ms * (20 if s.misbehaviour == "slow_first_token" else 1)
        await asyncio.sleep(ttft / 1000)
        if s.misbehaviour == "stall":
            await asyncio.Event().wait()
        if s.misbehaviour == "error":
            yield StreamError("server", "The mock backend failed on purpose.")
            return
        if s.misbehaviour == "refused":
            yield Finished("refusal", prompt_tokens, 0)
            return
        if s.misbehaviour == "blocked":
            yield StreamError("content_filter", "The mock backend blocked this request.")
            return
        if s.misbehaviour == "empty":
            yield Finished("stop", prompt_tokens, 0)
            return
        delay = 1.0 / s.tokens_per_s if s.tokens_per_s > 0 else 0.0
        for i, chunk in enumerate(chunks):
            if s.misbehaviour == "error_midstream" and i == len(chunks) // 2:
                yield StreamError("server", "The mock backend failed mid-stream on purpose.")
                return
            if s.misbehaviour == "missing_terminal" and i == len(chunks) // 2:
                return
            yield TextDelta(f"⟨{time.time():.6f}⟩{chunk}" if s.timestamps else chunk)
            await asyncio.sleep(delay)
        if s.misbehaviour == "no_usage":
            yield Finished("stop", None, None, request_id="mock-no-usage")
        elif s.misbehaviour == "incomplete":
            yield Finished("length", prompt_tokens, len(chunks))
        else:
            yield Finished("stop", prompt_tokens, len(chunks), request_id="mock")
