"""Delta frames written straight to daphne's socket (battles.frames) are the bytes autobahn's own
send would have written, and whatever that write cannot do is left to the ASGI send."""

from __future__ import annotations

from functools import partial

import pytest
from autobahn.twisted.websocket import WebSocketServerFactory, WebSocketServerProtocol
from daphne.server import Server
from twisted.internet.testing import StringTransport

from arena.battles.frames import write_through, writer


@pytest.fixture
def daphne_send():
    """An open websocket protocol on a transport that keeps what is written, and daphne's send
    callable for it, as daphne makes it for each application instance."""
    factory = WebSocketServerFactory()
    factory.protocol = WebSocketServerProtocol
    protocol = factory.buildProtocol(None)
    protocol.makeConnection(StringTransport())
    protocol.state = protocol.STATE_OPEN
    server = Server(application=None, endpoints=["tcp:port=0"])
    server.connections = {protocol: {}}
    return protocol, partial(server.handle_reply, protocol)


def autobahn_bytes(protocol, payload: bytes) -> bytes:
    protocol.transport.clear()
    protocol.sendMessage(payload, False)
    return protocol.transport.value()


@pytest.mark.parametrize("size", [0, 1, 125, 126, 127, 65_535, 65_536, 70_000])
def test_the_frame_written_is_autobahns_own(daphne_send, size):
    protocol, send = daphne_send
    payload = ('{"a":"' + "é" * (size // 2) + "x" * (size % 2) + '"}').encode()
    write = writer(send)
    expected = autobahn_bytes(protocol, payload)
    protocol.transport.clear()

    assert write(payload) is True
    assert protocol.transport.value() == expected


def test_a_send_that_is_not_daphnes_gets_no_writer():
    async def send(message: dict) -> None:
        pass

    assert writer(send) is None
    assert writer(partial(print, "x")) is None


@pytest.mark.parametrize(
    "state",
    [
        "closing",
        "closed",
        "disconnected",
        "gone",
        "queued",
        "fragmented",
        "masked",
        "logged",
    ],
)
def test_what_the_write_cannot_do_is_left_to_the_asgi_send(daphne_send, state):
    protocol, send = daphne_send
    write = writer(send)
    if state == "closing":
        protocol.state = protocol.STATE_CLOSING
    elif state == "closed":
        protocol.state = protocol.STATE_CLOSED
    elif state == "disconnected":
        send.func.__self__.connections[protocol]["disconnected"] = True
    elif state == "gone":
        send.func.__self__.connections.clear()
    elif state == "queued":
        protocol.send_queue.append((b"earlier", False))
    elif state == "fragmented":
        protocol.autoFragmentSize = 4
    elif state == "masked":
        protocol.maskServerFrames = True
    elif state == "logged":
        protocol.logFrames = True
    protocol.transport.clear()

    assert write(b'{"type":"delta"}') is False
    assert protocol.transport.value() == b""


class Transport:
    """What write_through reads of a Twisted TCP transport, on a real socket; its own write
    keeps what it is given."""

    TLS = False

    def __init__(self, sock) -> None:
        self.socket = sock
        self.connected = 1
        self.disconnecting = False
        self._writeDisconnected = False
        self.producer = object()  # twisted.web's HTTP channel, which daphne's sockets have
        self.producerPaused = False
        self._tempDataBuffer: list[bytes] = []
        self.dataBuffer = b""
        self.offset = 0
        self.written: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.written.append(data)


@pytest.fixture
def socket_pair():
    import socket

    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    theirs.setblocking(False)
    yield ours, theirs
    ours.close()
    theirs.close()


def received(sock) -> bytes:
    got = b""
    while True:
        try:
            chunk = sock.recv(1 << 20)
        except BlockingIOError:
            return got
        if not chunk:
            return got
        got += chunk


def test_a_frame_on_an_idle_transport_goes_to_the_socket_at_once(socket_pair):
    ours, theirs = socket_pair
    transport = Transport(ours)
    assert write_through(transport, b"\x81\x02{}") is True
    assert received(theirs) == b"\x81\x02{}"
    assert transport.written == []


def test_what_the_socket_does_not_take_goes_to_the_transports_write_in_order(socket_pair):
    import socket

    ours, theirs = socket_pair
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    transport = Transport(ours)
    data = bytes(range(256)) * 8192  # 2 MiB: more than the socket takes at once
    assert write_through(transport, data) is True
    sent = received(theirs)
    assert 0 < len(sent) < len(data)
    assert sent + b"".join(transport.written) == data


@pytest.mark.parametrize("state", ["waiting", "buffered", "closing", "tls", "paused"])
def test_a_transport_with_writes_waiting_or_closing_keeps_its_own_write(socket_pair, state):
    ours, theirs = socket_pair
    transport = Transport(ours)
    if state == "waiting":
        transport._tempDataBuffer.append(b"earlier")
    elif state == "buffered":
        transport.dataBuffer = b"earlier"
    elif state == "closing":
        transport.disconnecting = True
    elif state == "tls":
        transport.TLS = True
    elif state == "paused":
        transport.producerPaused = True
    assert write_through(transport, b"\x81\x02{}") is False
    assert received(theirs) == b""
