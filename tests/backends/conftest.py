"""Fixtures for the adapter tests: the vendors' keys in the environment, and a fixture server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from arena.backends.pools import pools_forget
from arena.devtools.fixture_server import FixtureServer
from arena.devtools.mock_server import MockServer
from tests.helpers import KEYS


@pytest.fixture
def vendor_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
async def server() -> AsyncIterator[FixtureServer]:
    srv = await FixtureServer().start()
    try:
        yield srv
    finally:
        await srv.stop()


Servers = Callable[..., Awaitable[list[MockServer]]]


@pytest.fixture
async def servers() -> AsyncIterator[Servers]:
    """Start one mock replica per settings; every one is stopped, even when a test fails."""
    started: list[MockServer] = []

    async def start(*model_settings: dict, **kwargs) -> list[MockServer]:
        batch = []
        for settings in model_settings:
            server = await MockServer(models={"m": settings}, **kwargs).start()
            # A port an earlier test or run left state for (down, failures) starts afresh.
            pools_forget([server.url.rstrip("/")])
            started.append(server)
            batch.append(server)
        return batch

    try:
        yield start
    finally:
        for server in started:
            await server.stop()
        pools_forget([s.url.rstrip("/") for s in started])
