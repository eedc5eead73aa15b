"""One cache object per process: every thread and task context shares it, so a crowd's
sockets do not each open a connection to Redis to count a rate limit or read a session."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from asgiref.local import Local
from asgiref.sync import sync_to_async
from django.core.cache import caches

from accounts import ratelimits
from accounts.caches import shared_cache


def test_every_thread_gets_the_one_cache_object():
    with ThreadPoolExecutor(4) as pool:
        shared = set(pool.map(lambda _: id(shared_cache("default")), range(8)))
    assert shared == {id(shared_cache("default"))}


async def test_sockets_counting_a_limit_in_their_own_contexts_make_no_cache_of_their_own(
    settings, monkeypatch
):
    settings.RATELIMITS = {**settings.RATELIMITS, "vote": {"user": "1000/m"}}
    shared_cache(settings.RATELIMIT_USE_CACHE)  # the process's, made once
    # No per-context object is left over from earlier tests for the sockets to inherit.
    monkeypatch.setattr(caches, "_connections", Local(caches.thread_critical))
    made: list[str] = []
    create = caches.create_connection

    def noted(alias: str):
        made.append(alias)
        return create(alias)

    monkeypatch.setattr(caches, "create_connection", noted)

    async def socket(user_id: int) -> None:  # a task, so a context, of its own
        await sync_to_async(ratelimits.check, thread_sensitive=False)(
            "vote", user_id=user_id, address=None
        )

    await asyncio.gather(*(asyncio.create_task(socket(n)) for n in range(6)))
    assert made == []


def test_new_cache_settings_make_a_new_object(settings):
    before = shared_cache("default")
    settings.CACHES = {
        **settings.CACHES,
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "x"},
    }
    after = shared_cache("default")
    assert after is not before and after is shared_cache("default")


def test_a_backend_not_known_to_be_shareable_stays_djangos_own(settings):
    settings.CACHES = {
        **settings.CACHES,
        "other": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"},
    }
    assert shared_cache("other") is caches["other"]
