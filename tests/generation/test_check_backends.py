"""check_backends against real mock OpenAI-compatible servers: one up, one down."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest
from django.core.management import call_command

from arena.catalog.models import ModelEntry
from arena.devtools.mock_server import MockServer
from arena.generation import probes
from tests.helpers import make_model, serving


@pytest.fixture
def up_server() -> Iterator[MockServer]:
    with serving(models={"pool-model": {}}) as server:
        yield server


@pytest.fixture
def down_server() -> Iterator[MockServer]:
    with serving(models={"pool-model": {}}, healthy=False) as server:
        yield server


def http_model(name: str, model_id: str, backend_settings: dict, **extra) -> ModelEntry:
    return ModelEntry.objects.create(
        public_name=name,
        model_id=model_id,
        backend=ModelEntry.Backend.OPENAI_COMPATIBLE,
        backend_settings=backend_settings,
        **extra,
    )


def check(*args: str) -> tuple[int, list[str], str]:
    """(exit status, stdout lines, stderr) of one check_backends run."""
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("check_backends", *args, stdout=out, stderr=err)
    except SystemExit as exc:
        return int(exc.code), out.getvalue().splitlines(), err.getvalue()
    return 0, out.getvalue().splitlines(), err.getvalue()


def line_for(lines: list[str], *needles: str) -> str:
    found = [line for line in lines if all(n in line for n in needles)]
    assert len(found) == 1, (needles, lines)
    return found[0]


def test_every_replica_is_probed_and_a_down_one_fails_the_check(db, up_server, down_server):
    http_model(
        "Granite Finch",
        "pool-model",
        {"replicas": [{"base_url": up_server.url}, {"base_url": down_server.url}]},
    )

    code, lines, err = check("--timeout", "5")

    assert code == 1
    assert len(lines) == 2
    up = line_for(lines, "Granite Finch", up_server.url)
    down = line_for(lines, "Granite Finch", down_server.url)
    assert "  up  " in up and " ms" in up
    assert "  down  " in down and "server: HTTP 503" in down
    assert "1 of 2" in err
    # One tiny request each, straight to the replica: no pool retry onto the other one.
    assert up_server.requests == 1 and down_server.attempts == 1


def test_all_up_exits_zero_with_one_line_per_model(db, up_server):
    http_model("Granite Finch", "pool-model", {"base_url": up_server.url})
    make_model("Zephyr Quill", "zq-large-001")

    code, lines, _ = check()

    assert code == 0
    assert len(lines) == 2
    assert "  up  " in line_for(lines, "Granite Finch", up_server.url)
    mock = line_for(lines, "Zephyr Quill")
    assert "in-process" in mock and "always up" in mock and "  up  " in mock


def test_inactive_models_are_not_probed(db, up_server, down_server):
    http_model("Granite Finch", "pool-model", {"base_url": up_server.url})
    http_model("Retired Heron", "pool-model-2", {"base_url": down_server.url}, active=False)

    code, lines, _ = check()

    assert code == 0
    assert [line.split("  ")[0] for line in lines] == ["Granite Finch"]
    assert down_server.attempts == 0


def test_a_wrong_key_is_down_with_auth(db, monkeypatch):
    monkeypatch.setenv("CHECK_TEST_KEY", "wrong-key")
    with serving(models={"pool-model": {}}, api_key="right-key") as server:
        http_model(
            "Granite Finch", "pool-model", {"base_url": server.url, "api_key_env": "CHECK_TEST_KEY"}
        )
        code, lines, _ = check()

    assert code == 1
    assert "  down  " in lines[0] and "auth: HTTP 401" in lines[0]


def test_no_active_models_is_said_plainly(db):
    code, lines, _ = check()

    assert code == 0 and lines == ["No active models."]


def test_probe_model_reports_each_replica(db, up_server, down_server):
    model = http_model(
        "Granite Finch",
        "pool-model",
        {"replicas": [{"base_url": up_server.url}, {"base_url": down_server.url}]},
    )

    results = probes.probe_models(models=[model], timeout_s=5)

    assert [(r.replica, r.up) for r in results] == [(up_server.url, True), (down_server.url, False)]
    assert results[0].ttft_ms is not None and results[0].error_kind == ""
    assert results[1].error_kind == "server" and results[1].ttft_ms is None


def test_a_model_id_the_server_does_not_list_fails_the_check(db):
    # llama.cpp answers any model id; only its model list says the configured one is wrong.
    with serving(models={"served-model": {}}, accepts_any_model=True) as server:
        http_model("Typo", "serverd-model", {"base_url": server.url})
        http_model("Right", "served-model", {"base_url": server.url})
        status, lines, _ = check()
    assert status == 1
    assert "does not list 'serverd-model'" in line_for(lines, "Typo")
    assert "does not list" not in line_for(lines, "Right")
