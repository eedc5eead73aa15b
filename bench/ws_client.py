"""A websocket client for the benches that open the battle socket of a server they started."""

from __future__ import annotations

import asyncio
import base64
import json
import os

FRAME_TIMEOUT_S = 30


def unmask(payload: bytes, mask: bytes) -> bytes:
    """XOR with the 4-byte mask: masking and unmasking are the same operation."""
    return bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


class Socket:
    """Just enough of a websocket client (RFC 6455: text frames, ping, close) for a bench:
    autobahn's asyncio flavour cannot load in a process where Django has loaded daphne."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, port: int, headers: dict[str, str]) -> Socket:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        lines = [
            "GET /ws/battle/ HTTP/1.1",
            f"Host: 127.0.0.1:{port}",
            "Upgrade: websocket",
            "Connection: Upgrade",
            f"Sec-WebSocket-Key: {base64.b64encode(os.urandom(16)).decode()}",
            "Sec-WebSocket-Version: 13",
            f"Origin: http://127.0.0.1:{port}",
            *(f"{name}: {value}" for name, value in headers.items()),
        ]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        response = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), FRAME_TIMEOUT_S)
        if not response.startswith(b"HTTP/1.1 101"):
            writer.close()
            status = response.split(b"\r\n", 1)[0].decode("latin-1")
            raise ConnectionError(f"handshake refused: {status}")
        return cls(reader, writer)

    def _write(self, opcode: int, payload: bytes) -> None:
        # Client frames are masked (the protocol requires it), one frame per message.
        header = bytearray([0x80 | opcode])
        size = len(payload)
        if size < 126:
            header.append(0x80 | size)
        elif size < 1 << 16:
            header += bytes([0x80 | 126]) + size.to_bytes(2, "big")
        else:
            header += bytes([0x80 | 127]) + size.to_bytes(8, "big")
        mask = os.urandom(4)
        self.writer.write(bytes(header) + mask + unmask(payload, mask))

    def send(self, message: dict) -> None:
        self._write(0x1, json.dumps(message).encode())

    async def _message(self) -> dict | None:
        """The next text message; None once the server closes."""
        data = b""
        while True:
            first, second = await self.reader.readexactly(2)
            size = second & 0x7F
            if size >= 126:
                size = int.from_bytes(await self.reader.readexactly(2 if size == 126 else 8))
            mask = await self.reader.readexactly(4) if second & 0x80 else b""
            payload = await self.reader.readexactly(size)
            if mask:
                payload = unmask(payload, mask)
            opcode = first & 0x0F
            if opcode == 0x8:
                return None
            if opcode == 0x9:
                self._write(0xA, payload)
            elif opcode in (0x0, 0x1):
                data += payload
                if first & 0x80:
                    return json.loads(data)

    async def receive(self, timeout: float = FRAME_TIMEOUT_S) -> dict | None:
        """The next frame; None once the socket closes, TimeoutError after ``timeout`` s."""
        try:
            return await asyncio.wait_for(self._message(), timeout)
        except asyncio.IncompleteReadError:
            return None

    async def until(self, *types: str) -> dict:
        """The first frame whose type is one of ``types``; ConnectionError if the socket closes."""
        while True:
            frame = await self.receive()
            if frame is None:
                raise ConnectionError("websocket closed")
            if frame["type"] in types:
                return frame

    async def close(self) -> None:
        try:
            self._write(0x8, (1000).to_bytes(2, "big"))
            await self.writer.drain()
        except OSError:
            pass
        self.writer.close()


async def connect(port: int, headers: dict[str, str], attempts: int = 5) -> Socket:
    """A battle socket, retried with a growing pause: a burst of handshakes can overrun the
    listen backlog, and real browsers retry too. The last failure is raised."""
    for attempt in range(attempts):
        try:
            return await Socket.open(port, headers)
        except (TimeoutError, OSError):
            if attempt == attempts - 1:
                raise
            await asyncio.sleep(0.5 * (attempt + 1))
    raise AssertionError("unreachable")
