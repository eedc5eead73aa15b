"""A real HTTP server on 127.0.0.1 that replays one canned response and records the request.

Adapters are tested through the wire, as they run in production: httpx, its pool, chunked
framing and partial reads are all real. Only the remote vendor is replaced, by bytes captured
in its own format. A response can be written in pieces with pauses (for time-to-first-token),
and cut short by closing the connection (for a dropped stream).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

STREAMS = Path(__file__).resolve().parents[2] / "fixtures" / "streams"
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


def stream_fixture(name: str) -> bytes:
    return (STREAMS / name).read_bytes()


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

    def pieces(self) -> list[bytes]:
        body = self.body if self.cut_at is None else self.body[: self.cut_at]
        if self.split == "events":
            return [m.group(0) for m in _EVENT.finditer(body) if m.group(0)]
        if isinstance(self.split, int):
            return [body[i : i + self.split] for i in range(0, len(body), self.split)]
        return [body] if body else []


@dataclass
class Recorded:
    method: str
    target: str  # path and query, as sent
    headers: dict[str, str]  # names in lower case
    body: bytes

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]

    @property
    def query(self) -> str:
        return self.target.partition("?")[2]

    def json(self) -> dict:
        return json.loads(self.body)


@dataclass
class FixtureServer:
    response: Canned = field(default_factory=Canned)
    requests: list[Recorded] = field(default_factory=list)
    host: str = "127.0.0.1"
    port: int = 0
    _server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def last(self) -> Recorded:
        assert self.requests, "the backend sent no request"
        return self.requests[-1]

    async def start(self) -> FixtureServer:
        self._server = await asyncio.start_server(self._handle, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 1)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, target, _ = lines[0].split(" ", 2)
            headers: dict[str, str] = {}
            for line in lines[1:]:
                if ":" in line:
                    name, value = line.split(":", 1)
                    headers[name.strip().lower()] = value.strip()
            length = int(headers.get("content-length") or 0)
            body = await reader.readexactly(length) if length else b""
            self.requests.append(Recorded(method, target, headers, body))
            await self._reply(writer)
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()
                await writer.wait_closed()

    async def _reply(self, writer: asyncio.StreamWriter) -> None:
        r = self.response
        head = [
            f"HTTP/1.1 {r.status} {REASONS.get(r.status, 'Error')}",
            f"Content-Type: {r.content_type}",
            "Connection: close",
            *(f"{k}: {v}" for k, v in r.headers.items()),
        ]
        if r.framing == "chunked":
            head.append("Transfer-Encoding: chunked")
        elif r.framing == "length":
            head.append(f"Content-Length: {len(r.body)}")
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
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
