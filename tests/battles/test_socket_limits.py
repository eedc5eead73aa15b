"""Socket actions are rate-limited: a burst on one socket is cut at the limit, each refusal is
the rate-limit error frame, and a refused action does nothing."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from arena.records.models import Battle
from tests.helpers import RECEIVE_TIMEOUT, ready_battle

pytestmark = pytest.mark.usefixtures("generation", "two_models")

NO_LIMIT = {"user": None, "network": None}


@pytest.fixture
def limits(settings):
    """These limits (day-long windows, so a burst never straddles one's end); every other
    action unlimited, so only these can refuse."""

    def set_limits(**actions: dict[str, str]) -> None:
        settings.RATELIMITS = {
            **{action: NO_LIMIT for action in settings.RATELIMITS},
            **{action: {**NO_LIMIT, **scopes} for action, scopes in actions.items()},
        }

    return set_limits


async def burst(comm, message: dict, times: int, answers: set[str]) -> list[dict]:
    """Send ``message`` ``times`` at once, then read until each has been answered: a frame of
    one of the ``answers`` types, or an error."""
    for _ in range(times):
        await comm.send_json_to(message)
    replies: list[dict] = []
    while len(replies) < times:
        frame = await comm.receive_json_from(timeout=RECEIVE_TIMEOUT)
        if frame["type"] in answers | {"error"}:
            replies.append(frame)
    return replies


def test_stops_have_a_limit_of_their_own_in_settings(settings):
    assert settings.RATELIMITS["battle_stop"]["user"] is not None
    assert settings.RATELIMITS["battle_stop"]["network"] is not None


async def test_a_burst_of_stops_on_one_socket_is_cut_at_the_limit(ws_connect, alice, limits):
    limits(battle_stop={"user": "10/d"})
    battle = await database_sync_to_async(ready_battle)(alice)
    comm = await ws_connect(alice)
    await comm.connect()

    replies = await burst(comm, {"action": "stop", "battle": str(battle.pk)}, 300, {"stopped"})

    processed = [r for r in replies if r["type"] == "stopped"]
    refused = [r for r in replies if r.get("code") == "rate_limited"]
    assert (len(processed), len(refused)) == (10, 290)
    assert refused[0]["message"].startswith("Too many stopped battles for this account.")
    assert 0 < refused[0]["retry_after"] <= 86_400
    row = await database_sync_to_async(Battle.objects.get)(pk=battle.pk)
    assert (row.status, row.void_reason) == (Battle.Status.VOID, "stopped by the rater")
    await comm.disconnect()


async def test_a_refused_stop_does_not_stop_the_battle(ws_connect, alice, limits):
    limits(battle_stop={"user": "0/d"})
    battle = await database_sync_to_async(ready_battle)(alice)
    comm = await ws_connect(alice)
    await comm.connect()

    (reply,) = await burst(comm, {"action": "stop", "battle": str(battle.pk)}, 1, {"stopped"})

    assert reply["code"] == "rate_limited"
    row = await database_sync_to_async(Battle.objects.get)(pk=battle.pk)
    assert row.status == Battle.Status.READY
    await comm.disconnect()


async def test_a_burst_of_resumes_on_one_socket_is_cut_at_the_limit(ws_connect, alice, limits):
    limits(follow_up={"user": "5/d"})  # a resume counts as a follow-up
    battle = await database_sync_to_async(ready_battle)(alice)
    comm = await ws_connect(alice)
    await comm.connect()

    replies = await burst(comm, {"action": "resume", "battle": str(battle.pk)}, 50, {"battle"})

    assert [r["type"] for r in replies].count("battle") == 5
    assert [r.get("code") for r in replies].count("rate_limited") == 45
    await comm.disconnect()
