"""A probe's clock starts with the request, not with making the HTTP client: a cold client
(its CA bundle loaded) is paid before, as a worker pays it once, long before any answer."""

from __future__ import annotations

import asyncio

from arena.backends import http
from arena.generation import probes


def test_the_client_is_made_before_the_probe_runs():
    async def probe_like() -> bool:
        # What the probe would find when it starts its clock.
        return asyncio.get_running_loop() in http._clients

    assert probes.run(probe_like()) is True


def test_every_client_shares_one_tls_context_loaded_once():
    async def two_loops_clients():
        return http.shared_client()

    first = asyncio.run(two_loops_clients())
    second = asyncio.run(two_loops_clients())
    assert first is not second  # one client a loop
    assert http._tls() is http._tls()
    assert first._transport._pool._ssl_context is second._transport._pool._ssl_context
