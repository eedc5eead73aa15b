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
the ASGI send, as before.
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
        protocol.transport.write(frame_header(len(payload)) + payload)
        return True

    return write
