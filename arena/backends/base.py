"""The small protocol every model backend speaks, and the events it yields.

A backend turns its vendor's stream into three kinds of event: text deltas, one terminal
``Finished`` event, or a typed ``StreamError``. Everything above it (the runner, pacing, the
database) sees only these.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import ClassVar, Literal, Protocol

from arena.backends.checks import Check

ErrorKind = Literal[
    "auth",
    "rate_limited",
    "timeout",
    "server",
    "bad_request",
    "protocol",
    "refused",
    "content_filter",
    "context_length",
    "stopped",  # the battle ended first; set by the runner, never by a backend
]


@dataclass(frozen=True)
class Message:
    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class ChatRequest:
    model_id: str
    messages: tuple[Message, ...]
    params: dict[str, float | int] = field(default_factory=dict)


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ReasoningDelta:
    """A reasoning model's thinking (vLLM's ``reasoning_content``, OpenRouter's ``reasoning``,
    Anthropic's thinking blocks, Gemini's thoughts): kept apart from the answer, never shown
    to raters, never in a vote's style counts."""

    text: str


@dataclass(frozen=True)
class Finished:
    finish_reason: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    request_id: str | None = None


@dataclass(frozen=True)
class StreamError:
    kind: ErrorKind
    message: str
    retry_after_s: float | None = None


@dataclass(frozen=True)
class Routed:
    """Which replica serves this attempt; recorded for admins, never shown to raters."""

    replica: str


@dataclass(frozen=True)
class Identified:
    """The server's id for this request, when it is first known (a header, a chunk's id):
    kept with the answer even when it ends in an error or is cut."""

    request_id: str


Event = TextDelta | ReasoningDelta | Finished | StreamError | Routed | Identified
TERMINAL = (Finished, StreamError)  # a stream's last event


class Backend(Protocol):
    def stream(self, request: ChatRequest) -> AsyncIterator[Event]: ...


class BackendKind(Backend, Protocol):
    """A backend class the registry lists (one module each): ``ModelEntry.backend``'s value
    and label, the settings it takes, and what it can do."""

    kind: ClassVar[str]
    label: ClassVar[str]
    # Its own settings keys and their checks; a pool's keys (backends.pools.SETTINGS) come
    # with every kind. Keys ending _env or _file name where a secret is read from.
    settings_schema: ClassVar[dict[str, Check]]
    # Whether it takes OpenAI's response_format {"type": "json_schema", ...} (where its
    # settings also say "structured_output": true): a judge's reply is then held to a schema.
    takes_json_schema: ClassVar[bool]
