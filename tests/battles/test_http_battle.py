"""A whole battle whose models stream over real HTTP from mock replicas behind a pool."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from arena.devtools.demo import demo_mock_config, demo_seed
from arena.devtools.mock_server import MockServer
from arena.records.models import Answer
from tests.helpers import RECEIVE_TIMEOUT, start_battle

pytestmark = pytest.mark.usefixtures("generation")


async def test_demo_models_battle_through_mock_http_replicas(ws_connect, alice):
    fast = {
        model_id: {**cfg, "ttft_ms": 0, "tokens_per_s": 0}
        for model_id, cfg in demo_mock_config().items()
    }
    replicas = [await MockServer(models=fast).start() for _ in range(2)]
    urls = [r.url for r in replicas]
    await database_sync_to_async(demo_seed)(mock_replicas=urls)

    comm = await ws_connect(alice)
    await comm.connect()
    frames = await start_battle(comm, "Explain caching.")
    assert frames[-1]["type"] == "turn_complete"
    answers = await database_sync_to_async(
        lambda: list(Answer.objects.filter(turn__battle_id=frames[0]["battle"]))
    )()
    assert {a.status for a in answers} == {"ok"}
    assert {a.replica for a in answers} <= {u.rstrip("/") for u in urls}
    assert all(a.request_id.startswith("chatcmpl-") for a in answers)
    assert sum(r.requests for r in replicas) == 2
    await comm.send_json_to({"action": "vote", "choice": "tie"})
    assert (await comm.receive_json_from(timeout=RECEIVE_TIMEOUT))["type"] == "revealed"
    await comm.disconnect()
    for r in replicas:
        await r.stop()
