"""A battle's delta frames written straight to daphne's websocket, when the server is daphne.

A crowd's frames are most of what a web process sends: one per battle per frame period. Through
ASGI, each goes from the consumer's send to daphne's ``Server.handle_reply`` (a coroutine), its
protocol's ``handle_reply`` and ``serverSend``, then autobahn's ``sendMessage``, ``sendFrame``
and ``sendData`` (which formats a debug line's arguments whether or not it is logged), before
the transport's write. A delta frame needs none of that: it is a short text message on an
open, uncompressed socket. ``writer`` finds daphne's protocol behind a send callable and
returns a function that writes such a message's websocket frame to the transport itself, the
bytes autobahn would have written; anything else (not daphne, a socket not open, a queue of
writes waiting, compression or fragmentation configured, autobahn's frame logging) is left to
the ASGI send, as before. On a plain TCP transport with nothing waiting, the frame goes to the
socket at once (``write_through``) rather than through Twisted's buffer and the reactor.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

# FIN set, opcode 1: a whole text message in one frame (RFC 6455 5.2).
_TEXT_FIN = 0x81


def frame_header(size: int) -> bytes:
    """An unmasked (server to client) text frame's header for a payload of ``size`` bytes."""
    if size <= 125:
        return bytes((_TEXT_FIN, size))
    if size <= 0xFFFF:
        return struct.pack("!BBH", _TEXT_FIN, 126, size)
    return struct.pack("!BBQ", _TEXT_FIN, 127, size)


def _daphne_protocol(send: Any) -> Any | None:
    """The autobahn protocol daphne's send callable replies through
    (``functools.partial(server.handle_reply, protocol)``), or None for any other send."""
    func = getattr(send, "func", None)
    args = getattr(send, "args", ())
    if getattr(func, "__qualname__", None) != "Server.handle_reply" or len(args) != 1:
        return None
    if not getattr(func, "__module__", "").startswith("daphne."):
        return None
    try:
        from autobahn.websocket.protocol import WebSocketProtocol
    except ImportError:
        return None
    protocol = args[0]
    return protocol if isinstance(protocol, WebSocketProtocol) else None


def writer(send: Any) -> Callable[[bytes], bool] | None:
    """For an ASGI send callable: a function that writes a UTF-8 text message straight to the
    socket and says whether it did (False: send it through ``send`` instead); None when the
    send is not daphne's."""
    protocol = _daphne_protocol(send)
    if protocol is None:
        return None
    server = send.func.__self__
    open_state = type(protocol).STATE_OPEN
    try:
        from twisted.internet.tcp import Server as tcp_server
    except ImportError:
        tcp_server = None

    def write(payload: bytes) -> bool:
        # What daphne's and autobahn's send paths would check first, each a reason to take them.
        connection = server.connections.get(protocol)
        if (
            connection is None
            or connection.get("disconnected")
            or protocol.state != open_state
            or protocol.send_queue
            or protocol._perMessageCompress is not None
            or protocol.maskServerFrames
            or protocol.logFrames
            or protocol.logOctets
            or protocol.trackedTimings
            or 0 < protocol.autoFragmentSize < len(payload)
            or 0 < protocol.maxMessagePayloadSize < len(payload)
        ):
            return False
        data = frame_header(len(payload)) + payload
        transport = protocol.transport
        if not (type(transport) is tcp_server and write_through(transport, data)):
            transport.write(data)
        return True

    return write


def write_through(transport: Any, data: bytes) -> bool:
    """Send ``data`` on a plain (not TLS) Twisted TCP transport's socket at once, the part the
    socket does not take left to the transport's own write, in order; False (nothing sent)
    where the transport has writes waiting or is closing, for its write to take it all.

    Twisted's write only buffers, and asks the reactor to say when the socket can take it, so
    each frame cost two changes to the event loop's epoll set (and a call back) besides the
    send; a socket with nothing waiting takes a frame at once, as asyncio's transports
    send."""
    try:
        idle = (
            transport.connected
            and not transport.disconnecting
            and not transport._writeDisconnected
            and not transport.TLS
            # A producer (twisted.web's HTTP channel registers itself) is paused only while
            # writes wait, and a write that waits for nothing leaves it as it is.
            and not transport.producerPaused
            and not transport._tempDataBuffer
            and transport.offset == len(transport.dataBuffer)
        )
    except AttributeError:  # a Twisted whose transport keeps its state otherwise
        return False
    if not idle:
        return False
    try:
        sent = transport.socket.send(data)
    except (BlockingIOError, InterruptedError):
        sent = 0
    except OSError:
        return False  # the transport's own write meets the error and closes as it does
    if sent < len(data):
        transport.write(data[sent:])
    return True
