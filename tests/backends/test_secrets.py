"""Keys come only from where an operator allowed, and go only to the model's own host.

Each test runs a backend against a real HTTP listener on loopback (the fixture server, which
records every request), so "nothing sent" and "the key went there" are what the wire saw.
"""

from __future__ import annotations

import asyncio
import json
import os

import httpx
import pytest
from django.conf import settings as django_settings

from arena.backends.outbound import GuardedSyncTransport
from arena.backends.pools import health_check, probe
from arena.backends.registry import backend_for, settings_problems
from arena.backends.secrets import MAX_DEPTH, REDACTED, redacted, secret_problems
from arena.devtools.fixture_server import Canned
from arena.devtools.mock_server import MockServer
from tests.helpers import ask, backend, run

OPENAI_SSE = "vllm.sse"


def keyed_by_file(server, path: str):
    """The OpenAI-compatible adapter with its key in a file (no key variable named)."""
    return backend(server, "openai_compatible", api_key_env="", api_key_file=path)


def problems(kind: str, conf: dict) -> str:
    """What the model form says about these settings (its two checks), as one text."""
    return " ".join(secret_problems(conf) + settings_problems(kind, conf))


@pytest.mark.parametrize("name", ["PATH", "DATABASE_URL", "SECRET_KEY", "HOME"])
async def test_a_variable_outside_the_allowed_prefixes_is_refused_and_nothing_is_sent(
    server, name, monkeypatch
):
    monkeypatch.setenv(name, os.environ.get(name) or "a-value-that-must-stay-here")
    server.response = Canned.sse(OPENAI_SSE)
    said = problems("openai_compatible", {"base_url": server.url, "api_key_env": name})
    assert f"'api_key_env': The environment variable {name} is not one a backend may read" in said
    assert "ARENA_SECRET_ENV_PREFIXES" in said

    result, _ = await run(backend(server, "openai_compatible", api_key_env=name))
    assert (result.status, result.error_kind) == ("error", "auth")
    assert "ARENA_SECRET_ENV_PREFIXES" in result.error_message
    assert server.requests == []


async def test_the_servers_own_settings_never_qualify_whatever_the_prefixes_say(
    server, settings, monkeypatch
):
    settings.ARENA_SECRET_ENV_PREFIXES = ["DJANGO_", "SECRET_", "DATABASE_", "ARENA_", "PG"]
    monkeypatch.setenv("ARENA_KEY_OK", "allowed-key-1")
    for name in ("DJANGO_SETTINGS_MODULE", "SECRET_KEY", "DATABASE_URL", "ARENA_PACE_CHARS"):
        monkeypatch.setenv(name, os.environ.get(name) or "x")
        assert "is not one a backend may read" in problems("openai", {"api_key_env": name})
        result, _ = await run(backend(server, "openai_compatible", api_key_env=name))
        assert result.error_kind == "auth"
    assert server.requests == []


async def test_an_allowed_prefix_is_read_and_sent_but_a_name_outside_it_is_not(server, monkeypatch):
    monkeypatch.setenv("ARENA_KEY_VLLM", "allowed-key-7Qe4Rt")
    monkeypatch.setenv("VLLM_TOKEN", "unlisted-key-2Wd8")
    server.response = Canned.sse(OPENAI_SSE)
    conf = {"base_url": server.url, "api_key_env": "ARENA_KEY_VLLM"}
    assert problems("openai_compatible", conf) == ""
    result, _ = await run(backend(server, "openai_compatible", api_key_env="ARENA_KEY_VLLM"))
    assert result.status == "ok"
    assert server.last.headers["authorization"] == "Bearer allowed-key-7Qe4Rt"

    assert "ARENA_SECRET_ENV_PREFIXES" in problems("openai", {"api_key_env": "VLLM_TOKEN"})
    result, _ = await run(backend(server, "openai_compatible", api_key_env="VLLM_TOKEN"))
    assert result.error_kind == "auth"
    assert len(server.requests) == 1


async def test_a_file_outside_the_allowed_folders_is_refused_unread(server, tmp_path, settings):
    outside = tmp_path / "elsewhere" / "key"
    outside.parent.mkdir()
    outside.write_text("file-key-outside-3Hj8")
    secret_key = django_settings.BASE_DIR / "var" / "secret_key"
    server.response = Canned.sse(OPENAI_SSE)
    for path in (str(outside), str(secret_key), "var/secret_key", "/etc/passwd"):
        said = problems("openai_compatible", {"api_key_file": path})
        assert "is not one a backend may read" in said and "ARENA_SECRET_DIRS" in said
        result, _ = await run(keyed_by_file(server, path))
        assert (result.status, result.error_kind) == ("error", "auth")
    # Not even the project's own folder qualifies its var/ (where SECRET_KEY is kept).
    settings.ARENA_SECRET_DIRS = [str(django_settings.BASE_DIR)]
    result, _ = await run(keyed_by_file(server, str(secret_key)))
    assert result.error_kind == "auth"
    assert server.requests == []


async def test_a_file_inside_an_allowed_folder_is_read_but_a_link_out_of_it_is_not(
    server, tmp_path, settings
):
    secrets_dir = tmp_path / "secrets"
    secrets_dir.mkdir()
    (secrets_dir / "vllm").write_text("file-key-inside-9Kd2\n")
    outside = tmp_path / "outside"
    outside.write_text("file-key-outside-5Tz1")
    (secrets_dir / "link").symlink_to(outside)
    settings.ARENA_SECRET_DIRS = [str(secrets_dir)]
    server.response = Canned.sse(OPENAI_SSE)

    inside = str(secrets_dir / "vllm")
    assert problems("openai_compatible", {"api_key_file": inside}) == ""
    result, _ = await run(keyed_by_file(server, inside))
    assert result.status == "ok"
    assert server.last.headers["authorization"] == "Bearer file-key-inside-9Kd2"

    sent = len(server.requests)
    linked = str(secrets_dir / "link")
    assert "ARENA_SECRET_DIRS" in problems("openai_compatible", {"api_key_file": linked})
    escaped = str(secrets_dir / ".." / "outside")
    result, _ = await run(keyed_by_file(server, linked))
    assert result.error_kind == "auth"
    result, _ = await run(keyed_by_file(server, escaped))
    assert result.error_kind == "auth"
    assert len(server.requests) == sent


def test_the_servers_own_secret_files_never_qualify_inside_an_allowed_folder(
    tmp_path, settings, monkeypatch
):
    """Docker's /run/secrets holds every service's secrets: the server's own (SECRET_KEY_FILE,
    any *_FILE setting) and a cluster's service-account token are never a model's key."""
    (tmp_path / "django_secret").write_text("the-server-secret-key")
    (tmp_path / "arena_key_vllm").write_text("a-model-key")
    token = tmp_path / "kubernetes.io" / "serviceaccount" / "token"
    token.parent.mkdir(parents=True)
    token.write_text("cluster-token")
    settings.ARENA_SECRET_DIRS = [str(tmp_path)]
    monkeypatch.setenv("SECRET_KEY_FILE", str(tmp_path / "django_secret"))
    for own in (tmp_path / "django_secret", token):
        assert "ARENA_SECRET_DIRS" in problems("openai_compatible", {"api_key_file": str(own)})
    assert problems("openai_compatible", {"api_key_file": str(tmp_path / "arena_key_vllm")}) == ""


@pytest.mark.parametrize(
    "conf",
    [
        {"headers": {"X-Auth": "sk-live-0123456789abcdef"}},
        {"headers": {"X-Trace": "Bearer 0123456789abcdef"}},
        {"headers": {"api-key": "hunter2"}},
        {"headers": {"X-Request-Tag": "Zt5Yb2Lq9Nc6Vx1Mw4KsZt5Yb2Lq9Nc6Vx1Mw4Ks"}},
        {"base_url": "http://user:sk-live-0123456789abcdef@gpu-1.example.com/v1"},
        {"base_url": "https://gpu-1.example.com/v1?key=sk-live-0123456789abcdef"},
        {"replicas": [{"base_url": "http://gpu-1.example.com/v1?access_token=abc"}]},
        {"replicas": [{"base_url": "http://u:p@gpu-1.example.com/v1"}]},
    ],
)
def test_a_literal_secret_in_headers_user_info_or_query_is_refused_pointing_to_the_setting(conf):
    said = problems("openai_compatible", conf)
    assert "'api_key_env'" in said and "'api_key_file'" in said


def test_ordinary_headers_and_query_parameters_are_kept_beside_a_refused_key():
    conf = {
        "base_url": "https://gpu-1.example.com/openai/v1?api-version=2024-10-21",
        "headers": {"anthropic-beta": "prompt-caching-2024-07-31", "X-Title": "Arena",
                    "OpenAI-Organization": "org-4f8Hj2kL9mN1pQ3r"},
    }  # fmt: skip
    assert problems("openai_compatible", conf) == ""
    keyed = {**conf, "headers": {**conf["headers"], "X-Upstream-Auth": "plain"}}
    assert problems("openai_compatible", keyed) == (
        "'headers.X-Upstream-Auth' looks like a credential. Never store a key in a header: "
        "name the environment variable in 'api_key_env' (or a file in 'api_key_file'), and "
        "the backend sends it as its API expects."
    )


async def test_a_stored_literal_secret_is_refused_again_when_a_request_is_made(server):
    """Rows saved before the rule (or written around the form) send nothing."""
    server.response = Canned.sse(OPENAI_SSE)
    host = server.url.removeprefix("http://")
    for conf in (
        {"base_url": f"http://user:sk-live-0123456789abcdef@{host}/v1"},
        {"base_url": f"{server.url}/v1?key=sk-live-0123456789abcdef"},
        {"headers": {"X-Auth": "sk-live-0123456789abcdef"}},
    ):
        result, _ = await run(backend(server, "openai_compatible", **conf))
        assert (result.status, result.error_kind) == ("error", "bad_request")
        assert "api_key_env" in result.error_message
    assert server.requests == []


# Health checks: a path on the replica, GET or HEAD, never a URL elsewhere -------------------


@pytest.mark.parametrize(
    ("health", "says"),
    [
        ({"path": "http://elsewhere.example.com/x"}, "'replicas[0].health.path' must be a path"),
        ({"path": "//elsewhere.example.com/x"}, "must be a path on the replica"),
        ({"method": "DELETE"}, "'replicas[0].health.method' must be GET or HEAD"),
        ({"method": "POST", "path": "/health"}, "must be GET or HEAD"),
    ],
)
def test_a_health_check_elsewhere_or_not_a_read_is_a_form_error(health, says):
    conf = {"replicas": [{"base_url": "https://gpu-1.example.com/v1"}], "health": health}
    assert says in problems("openai_compatible", conf)


async def test_a_stored_health_check_elsewhere_never_carries_the_key_there(server, monkeypatch):
    """A pool's health check saved before the rule: the prober never sends it, so the key
    never reaches the other host (the fixture server here), with DELETE or otherwise."""
    monkeypatch.setenv("POOL_TEST_KEY", "pool-key-Qe4Rt7")
    replica = await MockServer(api_key="pool-key-Qe4Rt7").start()
    try:
        conf = {"base_url": replica.url, "api_key_env": "POOL_TEST_KEY"}
        checks = [
            health_check({**conf, "health": {"path": f"{server.url}/x", "method": "DELETE"}},
                         lambda c: backend_for("openai_compatible", c)),
            health_check({**conf, "health": {"path": "//" + server.url.removeprefix("http://")}},
                         lambda c: backend_for("openai_compatible", c)),
            health_check({**conf, "health_url": f"{server.url}/healthz"}),
        ]  # fmt: skip
        with httpx.Client(timeout=2.0, transport=GuardedSyncTransport()) as client:
            for check in checks:
                assert check.get("problem")
                assert await asyncio.to_thread(probe, client, check) is False
            # The replica's own check still goes out, with its key, to the replica.
            own = health_check(conf, lambda c: backend_for("openai_compatible", c))
            assert own["headers"] == {"Authorization": "Bearer pool-key-Qe4Rt7"}
            assert await asyncio.to_thread(probe, client, own) is True
        assert server.requests == []
    finally:
        await replica.stop()


async def test_a_replica_url_holding_a_key_is_never_sent_nor_kept_with_the_answer(servers):
    (replica,) = await servers({"ttft_ms": 0, "tokens_per_s": 0, "answer_tokens": 5})
    keyed = replica.url.replace("http://", "http://u:sk-live-0123456789abcdef@")
    result = await ask(backend_for("openai_compatible", {"replicas": [{"base_url": keyed}]}))
    assert (result.status, result.error_kind) == ("error", "bad_request")
    assert "sk-live" not in json.dumps(result.as_dict())
    assert result.replica == replica.url.rstrip("/")
    assert replica.requests == 0


# A vendor's own key goes only to that vendor ------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "conf"),
    [
        ("openai", {"base_url": "https://collector.example.com/v1"}),
        ("anthropic", {"replicas": [{"base_url": "https://collector.example.com/v1"}]}),
        ("openai_compatible",
         {"base_url": "https://collector.example.com/v1", "api_key_env": "GEMINI_API_KEY"}),
    ],
)  # fmt: skip
def test_a_vendors_key_pointed_at_another_host_is_a_form_error(kind, conf):
    said = problems(kind, conf)
    assert "is sent only to api." in said or "generativelanguage.googleapis.com" in said
    assert "ARENA_KEY_" in said
    # Its own variable for that server is the way.
    assert problems(kind, {**conf, "api_key_env": "ARENA_KEY_COLLECTOR"}) == ""


async def test_a_vendors_key_reaches_only_its_api_or_a_host_the_operator_named(
    server, settings, vendor_keys, monkeypatch
):
    """The default OPENAI_API_KEY with a base URL a model editor chose: not sent, unless the
    operator named that host itself (a name that merely resolves to an allowed network does
    not count)."""
    server.response = Canned.sse("openai.sse")
    by_name = server.url.replace("127.0.0.1", "localhost") + "/v1"
    settings.ARENA_BACKEND_ALLOW_HOSTS = ["127.0.0.0/8", "::1"]
    result, _ = await run(backend(server, "openai", base_url=by_name))
    assert (result.status, result.error_kind) == ("error", "auth")
    assert "OPENAI_API_KEY is sent only to api.openai.com" in result.error_message
    assert server.requests == []

    monkeypatch.setenv("ARENA_KEY_GATEWAY", "gateway-key-4Rf7")
    result, _ = await run(
        backend(server, "openai", base_url=by_name, api_key_env="ARENA_KEY_GATEWAY")
    )
    assert result.status == "ok"
    assert server.last.headers["authorization"] == "Bearer gateway-key-4Rf7"

    settings.ARENA_BACKEND_ALLOW_HOSTS = ["localhost", "127.0.0.0/8", "::1"]
    result, _ = await run(backend(server, "openai", base_url=by_name))
    assert result.status == "ok"


def test_a_vendor_key_pasted_under_any_name_is_refused_and_never_shown(settings):
    from arena.backends.secrets import redacted

    conf = {"prefix": "sk-proj-7Hq2vN9xK4mP1wR8sT3u", "queue": "gpu-a100-80gb-us-east-1-prod-2"}
    assert "'prefix' holds what looks like an API key" in problems("mock", conf)
    assert redacted(conf) == {"prefix": "[redacted]", "queue": conf["queue"]}


def test_settings_nested_past_the_limit_are_shown_hidden_not_recursed_into():
    deep: list = []
    for _ in range(5000):
        deep = [deep]
    shown = redacted({"base_url": "http://user:pw@x/", "a": deep})
    assert shown["base_url"] == "http://x/"
    level = shown["a"]
    for _ in range(MAX_DEPTH):
        level = level[0]
    assert level == REDACTED
