"""A real HTTP server on 127.0.0.1 that replays one canned response and records the request.

Adapters are tested through the wire, as they run in production: httpx, its pool, chunked
framing and partial reads are all real. Only the remote vendor is replaced, by bytes captured
in its own format. A response can be written in pieces with pauses (for time-to-first-token),
and cut short by closing the connection (for a dropped stream).
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from arena.devtools.http_server import HTTPServer, Request, response_head

# The captured vendor streams, and recorded vendor documents (OpenRouter's models catalog),
# live with the tests that replay them.
FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures"
STREAMS = FIXTURES / "streams"
REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
}
# One server-sent event, separator included (vendors use LF or CRLF line ends).
_EVENT = re.compile(rb".*?(?:\r\n\r\n|\n\n)|.+$", re.DOTALL)


def stream_fixture(name: str, folder: Path = STREAMS) -> bytes:
    return (folder / name).read_bytes()


@dataclass
class Canned:
    status: int = 200
    body: bytes = b""
    content_type: str = "text/event-stream"
    headers: dict[str, str] = field(default_factory=dict)
    # chunked: as streaming servers send; close: the body ends when the connection does;
    # length: Content-Length, as error bodies are usually sent.
    framing: Literal["chunked", "close", "length"] = "chunked"
    split: Literal["events"] | int | None = "events"  # one write per event, per N bytes, or one
    pause_s: float = 0.0  # before each write
    cut_at: int | None = None  # close the connection after this many body bytes
    # Sent without "Connection: close" and the connection kept, then dropped unanswered when
    # the client reuses it: uvicorn-based servers (llama-cpp-python, transformers serve) after
    # an error.
    poisoned: bool = False

    @classmethod
    def sse(cls, name: str, **kw) -> Canned:
        return cls(body=stream_fixture(name), **kw)

    @classmethod
    def json(cls, status: int, payload: object, headers: dict[str, str] | None = None) -> Canned:
        return cls(
            status=status,
            body=json.dumps(payload).encode(),
            content_type="application/json",
            headers=headers or {},
            framing="length",
            split=None,
        )

    @classmethod
    def recorded(cls, name: str) -> Canned:
        """A recorded JSON document under tests/fixtures (e.g. "openrouter/models.json"),
        served as its vendor serves it."""
        return cls(
            body=(FIXTURES / name).read_bytes(),
            content_type="application/json",
            framing="length",
            split=None,
        )

    def pieces(self) -> list[bytes]:
        body = self.body if self.cut_at is None else self.body[: self.cut_at]
        if self.split == "events":
            return [m.group(0) for m in _EVENT.finditer(body) if m.group(0)]
        if isinstance(self.split, int):
            return [body[i : i + self.split] for i in range(0, len(body), self.split)]
        return [body] if body else []


@dataclass
class FixtureServer(HTTPServer):
    response: Canned = field(default_factory=Canned)
    # Responses for the next requests, in order, before ``response`` answers the rest.
    queued: list[Canned] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.origin

    @property
    def last(self) -> Request:
        assert self.requests, "the backend sent no request"
        return self.requests[-1]

    async def respond(self, request: Request, writer: asyncio.StreamWriter) -> bool:
        self.requests.append(request)
        r = self.queued.pop(0) if self.queued else self.response
        head = [("Content-Type", r.content_type), *r.headers.items()]
        if not r.poisoned:
            head.insert(1, ("Connection", "close"))
        if r.framing == "chunked":
            head.append(("Transfer-Encoding", "chunked"))
        elif r.framing == "length":
            head.append(("Content-Length", str(len(r.body))))
        writer.write(response_head(r.status, head, REASONS))
        await writer.drain()
        for piece in r.pieces():
            if r.pause_s:
                await asyncio.sleep(r.pause_s)
            writer.write(
                f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
                if r.framing == "chunked"
                else piece
            )
            await writer.drain()
        if r.framing == "chunked" and r.cut_at is None:
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        return r.poisoned
