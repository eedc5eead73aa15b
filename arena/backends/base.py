"""The small protocol every model backend speaks, and the events it yields.

A backend turns its vendor's stream into three kinds of event: text deltas, one terminal
``Finished`` event, or a typed ``StreamError``. Everything above it (the runner, pacing, the
database) sees only these.
"""

from __future__ import annotations

import base64
import hashlib
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


# The types an image reaches a backend in: what the images room re-encodes every upload to,
# and what OpenAI, Anthropic and Gemini all read.
IMAGE_TYPES = ("image/png", "image/jpeg", "image/webp")


@dataclass(frozen=True)
class Image:
    """An image in a user message: bytes the images room has already decoded and re-encoded
    (no metadata left), named by their SHA-256. Every backend sends these same bytes, each in
    its vendor's form, so both sides of a battle see the same image."""

    content_type: str
    data: bytes = field(repr=False)
    sha256: str

    def __post_init__(self) -> None:
        if self.content_type not in IMAGE_TYPES:
            raise ValueError(f"An image is sent as one of {', '.join(IMAGE_TYPES)}.")

    @classmethod
    def of(cls, content_type: str, data: bytes) -> Image:
        return cls(content_type, data, hashlib.sha256(data).hexdigest())

    def base64(self) -> str:
        return base64.b64encode(self.data).decode("ascii")

    def data_url(self) -> str:
        return f"data:{self.content_type};base64,{self.base64()}"


@dataclass(frozen=True)
class Message:
    role: Literal["system", "user", "assistant"]
    content: str
    # Shown to the model before the text, in each vendor's own form; only a user's message
    # carries any (no vendor takes an image in a system message or a model's own turn).
    images: tuple[Image, ...] = ()

    def __post_init__(self) -> None:
        if self.images and self.role != "user":
            raise ValueError("Only a user's message carries images.")


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
    # Whether it can carry a user message's images (``Message.images``) in its vendor's form.
    # A model is drawn for an image battle only when its row says it reads images
    # (``ModelEntry.takes_images``), which the admin allows only where this is true.
    takes_images: ClassVar[bool]
