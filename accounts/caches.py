"""One cache object per process for a cache alias.

Django's ``caches`` gives each thread, and each task's context, a cache object of its own, and
a Redis cache of its own opens a connection of its own: under channels and asgiref every
socket's work runs in a context of its own, so each socket paid for a new connection to Redis
the first time it touched the cache (a session read, a rate limit counted), more than the
command it sent. The Redis and local-memory backends are safe to share between threads
(redis-py's connection pool, locmem's lock), so for those a process keeps one per alias, made
again when the alias's settings change (tests); any other backend is Django's own per-context
object, as it may not be.
"""

from __future__ import annotations

import threading

from django.conf import settings
from django.core.cache import BaseCache, caches

SHAREABLE = frozenset(
    {
        "django.core.cache.backends.redis.RedisCache",
        "django.core.cache.backends.locmem.LocMemCache",
    }
)

_shared: dict[str, tuple[str, BaseCache]] = {}
_lock = threading.Lock()


def shared_cache(alias: str) -> BaseCache:
    """The process's one cache object for ``alias`` (a backend safe to share), else Django's."""
    conf = settings.CACHES.get(alias, {})
    if conf.get("BACKEND") not in SHAREABLE:
        return caches[alias]
    config = repr(conf)
    found = _shared.get(alias)
    if found is None or found[0] != config:
        with _lock:
            found = _shared.get(alias)
            if found is None or found[0] != config:
                found = _shared[alias] = (config, caches.create_connection(alias))
    return found[1]
