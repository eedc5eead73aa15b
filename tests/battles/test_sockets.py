"""The cap on battle sockets per rater, counted over every web process."""

from __future__ import annotations

import time

import pytest
from django.conf import settings as django_settings

from arena.battles.sockets import _key
from arena.core.redis_loop import loop_redis


@pytest.fixture
def cap_of_two(settings):
    settings.ARENA = {**settings.ARENA, "SOCKETS_PER_RATER": 2}


async def open_socket(ws_connect, user):
    comm = await ws_connect(user)
    connected, _ = await comm.connect()
    assert connected
    return comm


async def assert_usable(comm) -> None:
    """The socket was let in: it answers a message (a refused one says too_many_sockets)."""
    await comm.send_json_to({"action": "nonsense"})
    assert (await comm.receive_json_from(timeout=10))["code"] == "unknown_action"


async def test_a_rater_past_the_cap_is_told_why_and_the_socket_closes(
    ws_connect, alice, bob, transactional_db, cap_of_two
):
    first, second = [await open_socket(ws_connect, alice) for _ in range(2)]
    third = await open_socket(ws_connect, alice)
    frame = await third.receive_json_from(timeout=10)
    assert frame["code"] == "too_many_sockets"
    assert "2 battle pages open" in frame["message"]
    assert (await third.receive_output(timeout=10))["code"] == 4429
    # Another rater is not counted against alice.
    other = await open_socket(ws_connect, bob)
    await assert_usable(other)
    # One closed: there is room again.
    await first.disconnect()
    fourth = await open_socket(ws_connect, alice)
    await assert_usable(fourth)
    for comm in (second, fourth, other):
        await comm.disconnect()


async def test_sockets_of_a_web_process_that_died_lapse(
    ws_connect, alice, transactional_db, cap_of_two
):
    if not django_settings.REDIS_URL:
        pytest.skip("the count spans web processes only with Redis (CI sets REDIS_URL)")
    # What a killed process leaves: two entries nobody renews, their lapse time now passed.
    client = loop_redis(django_settings.REDIS_URL)
    await client.zadd(_key(alice.pk), {"dead-1": time.time() - 1, "dead-2": time.time() - 1})
    comm = await open_socket(ws_connect, alice)
    await assert_usable(comm)
    await comm.disconnect()


async def test_sockets_opened_at_once_are_counted_in_together_and_the_cap_holds(
    alice, bob, transactional_db
):
    """A crowd's sockets are counted in one transaction; each is still counted as of its own
    add, so a rater opening many at once gets exactly the cap."""
    import asyncio
    import uuid

    from arena.battles.sockets import _Registry

    if not django_settings.REDIS_URL:
        pytest.skip("the count spans web processes only with Redis (CI sets REDIS_URL)")
    registry = _Registry()
    ids = [uuid.uuid4().hex for _ in range(7)]
    got = await asyncio.gather(
        *(registry.add(user_id=alice.pk, socket_id=i, cap=3) for i in ids[:5]),
        *(registry.add(user_id=bob.pk, socket_id=i, cap=3) for i in ids[5:]),
    )
    assert got == [True, True, True, False, False, True, True]
    client = loop_redis(django_settings.REDIS_URL)
    assert set(await client.zrange(_key(alice.pk), 0, -1)) == set(ids[:3])
    for socket_id in ids:
        await registry.remove(socket_id)
    assert await client.zcard(_key(alice.pk)) == 0
