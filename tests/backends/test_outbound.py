"""Backends reach public addresses, and inward ones only where an operator allowed them.

Checked when settings are saved (the model form's schema check) and on every connection (the
host resolved, each address checked), against a real listener on loopback that records what
reaches it. An upstream error body is never passed on, only its status and kind.
"""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from arena.backends.http import shared_client
from arena.backends.outbound import AddressRefused, GuardedSyncTransport, refused_cause
from arena.backends.pools import health_check, probe
from arena.backends.registry import settings_problems
from arena.devtools.fixture_server import Canned
from tests.helpers import backend, run

pytestmark = pytest.mark.usefixtures("vendor_keys")

INWARD = [
    "http://127.0.0.1:6379/v1",
    "http://localhost:8000/v1",
    "http://app.localhost/v1",
    "http://10.1.2.3/v1",
    "http://172.16.0.9/v1",
    "http://192.168.1.20:8000/v1",
    "http://169.254.169.254/latest",
    "http://[fd00:ec2::254]/latest",
    "http://[::1]:8000/v1",
    "http://[::ffff:127.0.0.1]/v1",
    "http://100.100.100.200/latest",
    "http://0.0.0.0:8000/v1",
    "http://127.1:6379/v1",
    "http://2130706433/v1",
    "http://0x7f000001/v1",
    "http://[::7f00:1]:6379/v1",  # IPv4-compatible 127.0.0.1
    "http://[64:ff9b:1::a9fe:a9fe]/latest",  # local-use NAT64 of the metadata address
    "http://[64:ff9b::a9fe:a9fe]/latest",  # well-known NAT64 of it
    "http://metadata.google.internal/computeMetadata/v1",
]


@pytest.mark.parametrize("url", INWARD)
def test_an_inward_model_url_is_refused_unless_an_operator_allows_it(settings, url):
    settings.ARENA_BACKEND_ALLOW_HOSTS = []
    for conf in ({"base_url": url}, {"replicas": [{"base_url": url}]}):
        said = " ".join(settings_problems("openai_compatible", conf))
        assert "ARENA_BACKEND_ALLOW_HOSTS" in said, conf

    host = httpx.URL(url).host
    settings.ARENA_BACKEND_ALLOW_HOSTS = [host, "127.0.0.0/8", "::1"]
    assert settings_problems("openai_compatible", {"base_url": url}) == []


def test_public_hosts_and_allowed_networks_pass(settings):
    settings.ARENA_BACKEND_ALLOW_HOSTS = ["10.0.0.0/8", ".gpu.internal"]
    for url in (
        "https://api.openai.com/v1",
        "http://8.8.8.8/v1",
        "http://10.20.30.40:8000/v1",
        "http://vllm-1.gpu.internal:8000/v1",
        "http://vllm:8000/v1",  # a name: checked when it is resolved, at request time
    ):
        assert settings_problems("openai_compatible", {"base_url": url}) == [], url
    assert settings_problems("openai_compatible", {"base_url": "http://10.0.0.1.nip.io"}) == []
    assert settings_problems("openai_compatible", {"base_url": "http://11.0.0.1"}) == []
    assert settings_problems("openai_compatible", {"base_url": "http://192.168.0.1"})


async def test_a_request_to_a_loopback_address_not_allowed_sends_nothing(server, settings):
    settings.ARENA_BACKEND_ALLOW_HOSTS = []
    server.response = Canned.sse("vllm.sse")
    result, _ = await run(backend(server, "openai_compatible"))
    assert (result.status, result.error_kind) == ("error", "bad_request")
    assert "ARENA_BACKEND_ALLOW_HOSTS" in result.error_message
    assert server.requests == []


async def test_a_name_that_resolves_to_loopback_is_refused_when_its_addresses_are_not_allowed(
    server, settings
):
    """The name is resolved when the connection is made and every address it resolves to is
    checked: what a row written around the form, or DNS that changed since, would meet."""
    by_name = server.url.replace("127.0.0.1", "localhost") + "/v1/models"
    settings.ARENA_BACKEND_ALLOW_HOSTS = ["10.0.0.0/8"]
    with pytest.raises(httpx.ConnectError) as refused:
        await shared_client().get(by_name)
    assert isinstance(refused_cause(refused.value), AddressRefused)
    assert server.requests == []

    # Allowed by the addresses it resolves to (not by its name), it is reached.
    settings.ARENA_BACKEND_ALLOW_HOSTS = ["127.0.0.0/8", "::1"]
    server.response = Canned.json(200, {"data": []})
    assert (await shared_client().get(by_name)).status_code == 200
    assert len(server.requests) == 1


async def test_a_backend_named_by_a_loopback_name_is_refused_when_not_allowed(server, settings):
    server.response = Canned.sse("vllm.sse")
    by_name = server.url.replace("127.0.0.1", "localhost")
    settings.ARENA_BACKEND_ALLOW_HOSTS = ["10.0.0.0/8"]
    result, _ = await run(backend(server, "openai_compatible", base_url=by_name))
    assert result.error_kind == "bad_request"
    assert "ARENA_BACKEND_ALLOW_HOSTS" in result.error_message
    assert server.requests == []
    settings.ARENA_BACKEND_ALLOW_HOSTS = ["127.0.0.0/8", "::1"]
    result, _ = await run(backend(server, "openai_compatible", base_url=by_name))
    assert result.status == "ok"


async def test_the_pools_prober_is_held_to_the_same_addresses(server, settings):
    settings.ARENA_BACKEND_ALLOW_HOSTS = []
    server.response = Canned.json(200, {"data": []})
    check = health_check({"base_url": server.url, "health": {"auth": False}})
    with httpx.Client(timeout=2.0, transport=GuardedSyncTransport()) as client:
        assert await asyncio.to_thread(probe, client, check) is False
        assert server.requests == []
        settings.ARENA_BACKEND_ALLOW_HOSTS = ["127.0.0.1"]
        assert await asyncio.to_thread(probe, client, check) is True


# Upstream error bodies: their status and kind, never their words ------------------------------

REDIS_REPLY = b"-ERR unknown command 'POST', with args beginning with: '/v1/chat/completions'\r\n"


@pytest.mark.parametrize(
    ("response", "message"),
    [
        (
            Canned(status=500, body=REDIS_REPLY, content_type="text/plain", framing="length"),
            "HTTP 500: the backend failed",
        ),
        (
            Canned.json(400, {"error": {"message": "db-7.corp:5432 said: relation users ...",
                                        "type": "invalid_request_error"}}),
            "HTTP 400: the backend refused the request (invalid_request_error)",
        ),
        (
            Canned.json(401, {"error": {"message": "no", "type": "<script>alert(1)</script>"}}),
            "HTTP 401: the backend refused the credentials",
        ),
        (
            Canned.json(200, {"error": {"message": "internal trace at /srv/app.py:12"}}),
            "HTTP 200: the backend failed",
        ),
    ],
)  # fmt: skip
async def test_an_upstream_error_body_is_never_echoed(server, response, message):
    server.response = response
    result, _ = await run(backend(server, "openai_compatible"))
    assert result.status == "error"
    assert result.error_message == message


async def test_an_error_mid_stream_is_not_echoed_either(server):
    chunk = {"error": {"message": "upstream 10.0.0.7 reset: secret-ish detail", "code": 502}}
    server.response = Canned(body=f"data: {json.dumps(chunk)}\n\n".encode())
    result, _ = await run(backend(server, "openai_compatible"))
    assert result.error_kind == "server"
    assert result.error_message == "The backend failed mid-stream: the backend failed"


async def test_the_demo_allows_loopback_and_its_mock_replicas_explicitly(server, settings):
    from arena.management.commands.demo import allow_demo_hosts

    settings.ARENA_BACKEND_ALLOW_HOSTS = []
    server.response = Canned.sse("vllm.sse")
    assert settings_problems("openai_compatible", {"base_url": server.url})
    allow_demo_hosts(["http://mock:9100/v1", "http://mock:9101/v1"])
    assert settings.ARENA_BACKEND_ALLOW_HOSTS == ["127.0.0.1", "localhost", "::1", "mock"]
    assert settings_problems("openai_compatible", {"base_url": server.url}) == []
    result, _ = await run(backend(server, "openai_compatible"))
    assert result.status == "ok"
