"""Sessions read from the cache first (arena.sessions): no query for a session the cache holds,
logout and a password change still end it at once, a copy is kept for a bounded time, and the
database answers when Redis does not."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async
from django.conf import settings
from django.contrib.sessions.models import Session
from django.test import Client
from redis.exceptions import ConnectionError as RedisConnectionError

from arena import sessions
from arena.sessions import SessionStore, session_cache
from tests.helpers import PASSWORD, make_user


@pytest.fixture(autouse=True)
def cached_sessions(settings):
    # Set here, so the store is tested on the embedded default's cache too.
    settings.SESSION_ENGINE = "arena.sessions"


def signed_in(user) -> tuple[Client, str]:
    client = Client()
    client.force_login(user)
    return client, client.cookies[settings.SESSION_COOKIE_NAME].value


def test_a_session_in_the_cache_is_read_with_no_query(db, django_assert_num_queries):
    _, key = signed_in(make_user("ada@example.com"))
    with django_assert_num_queries(0):
        data = SessionStore(key).load()
    assert data["_auth_user_id"]


def test_a_session_not_in_the_cache_is_read_from_the_database_and_kept(
    db, django_assert_num_queries
):
    user = make_user("ada@example.com")
    _, key = signed_in(user)
    session_cache().delete(SessionStore.cache_key_prefix + key)
    with django_assert_num_queries(1):
        assert SessionStore(key).load()["_auth_user_id"] == str(user.pk)
    with django_assert_num_queries(0):
        assert SessionStore(key).load()["_auth_user_id"] == str(user.pk)


def test_a_copy_is_kept_for_a_bounded_time_not_the_sessions_age(db, monkeypatch):
    kept: list[int] = []
    cache = session_cache()
    real_set = cache.set

    def recording_set(key, value, timeout=None, **kwargs):
        kept.append(timeout)
        return real_set(key, value, timeout, **kwargs)

    monkeypatch.setattr(cache, "set", recording_set)
    _, key = signed_in(make_user("ada@example.com"))  # saved: a copy
    session_cache().delete(SessionStore.cache_key_prefix + key)
    SessionStore(key).load()  # read from the database: a copy
    assert len(kept) >= 2
    assert all(0 < t <= sessions.CACHE_TTL_S for t in kept)


def test_logout_ends_the_session_in_the_cache_too(db):
    client, key = signed_in(make_user("ada@example.com"))
    assert client.post("/accounts/logout/").status_code == 302
    assert SessionStore(key).load() == {}
    assert not Session.objects.filter(session_key=key).exists()


def test_a_password_change_ends_the_other_sessions_even_from_the_cache(db):
    user = make_user("ada@example.com")
    client, key = signed_in(user)
    assert client.get("/").wsgi_request.user.is_authenticated
    user.set_password(PASSWORD + "new")
    user.save()
    assert not client.get("/").wsgi_request.user.is_authenticated


def test_redis_away_on_a_read_falls_back_to_the_database(db, monkeypatch):
    user = make_user("ada@example.com")
    _, key = signed_in(user)

    def away(*args, **kwargs):
        raise RedisConnectionError("Redis is away")

    monkeypatch.setattr(session_cache(), "get", away)
    monkeypatch.setattr(session_cache(), "set", away)
    assert SessionStore(key).load()["_auth_user_id"] == str(user.pk)


def test_a_logout_that_cannot_remove_the_copy_fails_rather_than_leave_it(db, monkeypatch):
    _, key = signed_in(make_user("ada@example.com"))

    def away(*args, **kwargs):
        raise RedisConnectionError("Redis is away")

    monkeypatch.setattr(session_cache(), "delete", away)
    store = SessionStore(key)
    store.load()
    with pytest.raises(RedisConnectionError):
        store.flush()


@pytest.mark.django_db(transaction=True)
async def test_a_socket_with_a_logged_out_session_is_refused(ws_connect):
    user = await database_sync_to_async(make_user)("ada@example.com")
    comm = await ws_connect(user)
    connected, _ = await comm.connect()
    assert connected
    await comm.disconnect()
    cookie = dict(comm.scope["headers"])[b"cookie"].decode().split("=", 1)[1]
    await database_sync_to_async(SessionStore(cookie).flush)()

    again = await ws_connect(None)
    again.scope["headers"] = comm.scope["headers"]
    connected, code = await again.connect()
    assert (connected, code) == (False, 4401)


def test_every_thread_and_task_reads_sessions_through_one_cache(db):
    """One cache object, so one Redis connection pool: not one connection per connect."""
    from concurrent.futures import ThreadPoolExecutor

    from asgiref.sync import async_to_sync, sync_to_async

    async def in_a_task():
        return await sync_to_async(lambda: SessionStore()._cache, thread_sensitive=False)()

    with ThreadPoolExecutor(3) as pool:
        seen = list(pool.map(lambda _: SessionStore()._cache, range(6)))
    seen.append(async_to_sync(in_a_task)())
    assert all(c is session_cache() for c in seen)


def test_the_session_cache_follows_its_settings(settings):
    before = session_cache()
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": "sessions-test",
        }
    }
    assert session_cache() is not before
    assert session_cache() is session_cache()


def test_a_read_racing_a_logout_cannot_put_the_session_back(db):
    client, key = signed_in(make_user("eve@example.com"))
    reader = SessionStore(key)
    session_cache().delete(reader.cache_key)
    # A read that fetched the row before the logout deleted it...
    row = reader._get_session_from_db()
    client.logout()
    # ...keeps its copy only after the logout: the copy must not bring the cookie back.
    reader._cache_set(reader.decode(row.session_data), 300, read_through=True)
    assert SessionStore(key).load() == {}
    assert client.get("/").wsgi_request.user.is_anonymous
