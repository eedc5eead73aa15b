"""Sessions read from the cache (Redis) before the database: a battle socket's connect, and
every page, reads its rater's session in one Redis round trip rather than a query, so a crowd
connecting at once costs the database nothing for its sessions.

Django's ``cached_db`` engine, with three changes:

* a cached copy is kept for at most ``CACHE_TTL_S``, not the session's whole age: a session
  taken out of the database behind the store's back (an operator deleting its row, a
  ``clearsessions`` run) stops working within that time, not weeks later;
* Redis away on a read (or on keeping a copy) falls back to the database, as the ``db``
  engine would have done, rather than failing the page or the socket;
* forgetting a session (logout, a new key at login) fails, and says so, when the cached copy
  cannot be removed: a logout that left a copy behind would let its cookie in again once
  Redis is back. The database row goes first, as in ``cached_db``.

Written and deleted through the store, a session is the same in both places at once, so
logout and a password change (which checks the user's password hash on every read) take
effect at the next request or connect, as with the ``db`` engine.
"""

from __future__ import annotations

import logging

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.sessions.backends.cached_db import SessionStore as CachedDBStore
from django.core.cache import BaseCache

from accounts.caches import shared_cache

log = logging.getLogger(__name__)

# How long a session stays in the cache after it was read from the database or saved.
CACHE_TTL_S = 300
# What a forgotten session's key holds for CACHE_TTL_S: a read that fetched the row before the
# logout deleted it cannot put its copy back (a copy read through is only added), so a logged-out
# cookie never works again, however the two interleave.
GONE = "arena.sessions:gone"


def session_cache() -> BaseCache:
    """The cache sessions are kept in, one for the process (accounts.caches: why)."""
    return shared_cache(settings.SESSION_CACHE_ALIAS)


class SessionStore(CachedDBStore):
    cache_key_prefix = "arena.sessions"

    def __init__(self, session_key: str | None = None) -> None:
        # The database store's own, not cached_db's: that one takes the context's cache.
        super(CachedDBStore, self).__init__(session_key)
        self._cache = session_cache()

    @staticmethod
    def _ttl(age: int) -> int:
        """How long to keep a copy of a session with ``age`` seconds left to live."""
        return max(0, min(CACHE_TTL_S, age))

    def _cache_get(self) -> dict | None:
        try:
            return self._cache.get(self.cache_key)
        except Exception:  # Redis away (or a key the backend refuses): the database answers
            log.warning("reading a session from the cache failed", exc_info=True)
            return None

    def _cache_set(self, data: dict, ttl: int, *, read_through: bool = False) -> None:
        try:
            keep = self._cache.add if read_through else self._cache.set
            keep(self.cache_key, data, ttl)
        except Exception:  # the database has it; the next read tries the cache again
            log.warning("keeping a session in the cache failed", exc_info=True)

    def load(self) -> dict:
        data = self._cache_get()
        if data == GONE:
            return {}
        if data is not None:
            return data
        row = self._get_session_from_db()
        if not row:
            return {}
        data = self.decode(row.session_data)
        ttl = self._ttl(self.get_expiry_age(expiry=row.expire_date))
        self._cache_set(data, ttl, read_through=True)
        return data

    async def aload(self) -> dict:
        # On a thread of its own: the cache's async calls would queue on the one thread every
        # thread-sensitive call of the process shares.
        return await sync_to_async(self.load, thread_sensitive=False)()

    def save(self, must_create: bool = False) -> None:
        super(CachedDBStore, self).save(must_create)  # the database's save, then the copy
        self._cache_set(self._session, self._ttl(self.get_expiry_age()))

    def delete(self, session_key: str | None = None) -> None:
        super(CachedDBStore, self).delete(session_key)  # the database's row first
        session_key = session_key or self.session_key
        if session_key is not None:  # raises when Redis is away: the logout fails, and says so
            self._cache.delete(self.cache_key_prefix + session_key)
            self._cache.set(self.cache_key_prefix + session_key, GONE, CACHE_TTL_S)

    async def adelete(self, session_key: str | None = None) -> None:
        await sync_to_async(self.delete, thread_sensitive=False)(session_key)

    async def asave(self, must_create: bool = False) -> None:
        await super(CachedDBStore, self).asave(must_create)
        try:
            ttl = self._ttl(await self.aget_expiry_age())
            await self._cache.aset(await self.acache_key(), self._session, ttl)
        except Exception:
            log.warning("keeping a session in the cache failed", exc_info=True)
