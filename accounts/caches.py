"""One cache object per process for a cache alias.

Django's ``caches`` gives each thread, and each task's context, a cache object of its own, and
a Redis cache of its own opens a connection of its own: under channels and asgiref every
socket's work runs in a context of its own, so each socket paid for a new connection to Redis
the first time it touched the cache (a session read, a rate limit counted), more than the
command it sent. Cache backends are safe to share between threads (redis-py's pool, locmem's
lock), so a process keeps one per alias, made again when the alias's settings change (tests).
"""

from __future__ import annotations

import threading

from django.conf import settings
from django.core.cache import BaseCache, caches

_shared: dict[str, tuple[str, BaseCache]] = {}
_lock = threading.Lock()


def shared_cache(alias: str) -> BaseCache:
    """The process's one cache object for ``alias``."""
    config = repr(settings.CACHES.get(alias))
    found = _shared.get(alias)
    if found is None or found[0] != config:
        with _lock:
            found = _shared.get(alias)
            if found is None or found[0] != config:
                found = _shared[alias] = (config, caches.create_connection(alias))
    return found[1]
