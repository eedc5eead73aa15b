"""Fixtures for the adapter tests: the vendors' keys in the environment, and a fixture server."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from arena.devtools.fixture_server import FixtureServer
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
