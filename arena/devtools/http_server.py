"""The small asyncio HTTP/1.1 core the local test servers share (the mock and the fixture server).

One request per connection: the request line, headers and a ``Content-Length`` body are read,
``respond`` writes whatever it likes, and the connection is closed. Closing is part of the
protocol here: the end of a body is the end of the connection, which is also how a cut stream
looks in real life. One exception, for a server fault real servers have: ``respond`` may keep
the connection open (it returns True) as a keep-alive connection the client will reuse, and the
server then drops it, unanswered, when the next request comes on it. Nothing else of HTTP
(chunked uploads, pipelining) is needed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Self


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on just now (the OS picks it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def response_head(status: int, headers: list[tuple[str, str]], reasons: Mapping[int, str]) -> bytes:
    """The status line, the header lines in the order given, and the blank line after them.

    Each server names the statuses it knows in ``reasons``; any other says "Error".
    """
    lines = [f"HTTP/1.1 {status} {reasons.get(status, 'Error')}"]
    lines += [f"{name}: {value}" for name, value in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


@dataclass
class Request:
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


async def read_request(reader: asyncio.StreamReader) -> Request:
    """One request off the wire; ValueError or IncompleteReadError when it is malformed."""
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
    return Request(method, target, headers, body)


@dataclass
class HTTPServer:
    """Listens on ``host:port`` (port 0: any free one, known after ``start``)."""

    host: str = "127.0.0.1"
    port: int = 0
    _server: asyncio.Server | None = field(default=None, init=False, repr=False)
    _tasks: set[asyncio.Task] = field(default_factory=set, init=False, repr=False)

    @property
    def origin(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def respond(self, request: Request, writer: asyncio.StreamWriter) -> bool | None:
        """Answer; True keeps the connection open (see the module's docstring)."""
        raise NotImplementedError

    async def start(self) -> Self:
        self._server = await asyncio.start_server(self._connection, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            # A stalled or paused answer would otherwise outlive the server (and its loop).
            for task in list(self._tasks):
                task.cancel()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 1)

    async def serve_forever(self) -> None:
        await self.start()
        assert self._server is not None
        await self._server.serve_forever()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            if await self.respond(await read_request(reader), writer):
                await read_request(reader)  # reused: dropped unanswered, as uvicorn's are
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass  # a client that hung up or sent garbage gets no answer
        except asyncio.CancelledError:
            pass  # stop() ends what is still being served
        finally:
            with contextlib.suppress(Exception):
                writer.close()
            if task is not None:
                self._tasks.discard(task)
