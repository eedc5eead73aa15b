"""GPU serving pools: several replicas of one backend, routed by load and health.

A backend whose settings hold ``"replicas": [{"base_url": ...}, ...]`` is wrapped in a
``PooledBackend``. Each request goes to the healthy replica with the fewest requests in flight,
within that replica's ``max_concurrency``; beyond every cap, requests queue. A replica that fails
``fail_threshold`` times in a row is marked down and a background thread probes it back. A
request that fails before its first token is retried once on another replica; after the first
token it is not (the rater would see a different answer).

Pool state is per process and thread-safe: Celery's thread pool runs one event loop per task,
so nothing here may be bound to a loop. A snapshot of each replica's state is written to the
Django cache (Redis in production) for the admin's pool page.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import httpx
from django.core.cache import cache

from arena.backends.base import (
    Backend,
    ChatRequest,
    Event,
    Finished,
    Routed,
    StreamError,
    TextDelta,
)

RETRYABLE = {"server", "timeout", "protocol", "rate_limited"}
HEALTH_FAILURES = {"server", "timeout", "protocol"}  # the replica's fault, not the request's
QUEUE_POLL_S = 0.005


RETRY_AFTER_MAX_S = 10.0


def _may_wait(error: StreamError | None) -> bool:
    return (
        error is not None
        and error.kind == "rate_limited"
        and error.retry_after_s is not None
        and error.retry_after_s <= RETRY_AFTER_MAX_S
    )


def cache_key(url: str) -> str:
    return f"arena:replica:{url}"


def replica_url(entry: dict) -> str:
    """A replica's URL, as the pool, its answers' ``replica`` and its cache key name it: the
    entry's ``base_url`` without a trailing slash."""
    return str(entry["base_url"]).rstrip("/")


def replica_problems(settings: dict) -> list[str]:
    """What is wrong with a backend's ``replicas``, as the pool would read them; empty when
    they are fine (or absent)."""
    replicas = settings.get("replicas")
    if replicas is None:
        return []
    if not isinstance(replicas, list):
        return ["'replicas' must be a list of objects, each with a 'base_url'."]
    problems = []
    for i, entry in enumerate(replicas):
        url = entry.get("base_url") if isinstance(entry, dict) else None
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            problems.append(f"'replicas[{i}]' needs a 'base_url' starting http:// or https://.")
    return problems


def replica_urls(settings: dict) -> list[str]:
    """Each replica's URL in a backend's settings, in the order configured. A backend without
    replicas counts as one: its own ``base_url``, or "" where it names none (in process, or the
    adapter's default URL)."""
    if settings.get("replicas"):
        return [replica_url(r) for r in settings["replicas"]]
    return [replica_url(settings)] if settings.get("base_url") else [""]


@dataclass
class Replica:
    url: str
    cap: int
    health_url: str
    settings: dict = field(default_factory=dict)  # per-replica overrides (key, headers, ...)
    in_flight: int = 0
    failures: int = 0
    down: bool = False
    served: int = 0

    def snapshot(self) -> dict:
        return {
            "in_flight": self.in_flight,
            "down": self.down,
            "failures": self.failures,
            "served": self.served,
            "updated": time.time(),
        }


@dataclass
class Pool:
    replicas: list[Replica]
    fail_threshold: int = 3
    probe_interval_s: float = 5.0
    lock: threading.Lock = field(default_factory=threading.Lock)
    _prober: threading.Thread | None = None

    def try_acquire(self, exclude: set[str]) -> Replica | None | bool:
        """A replica with a free slot; False when healthy ones exist but all are at their cap;
        None when no healthy replica is left to try."""
        with self.lock:
            healthy = [r for r in self.replicas if not r.down and r.url not in exclude]
            if not healthy:
                return None
            free = [r for r in healthy if r.in_flight < r.cap]
            if not free:
                return False
            best = min(free, key=lambda r: (r.in_flight, r.served))
            best.in_flight += 1
            best.served += 1
            snapshot = best.snapshot()
        _publish(best.url, snapshot)
        return best

    async def acquire(self, exclude: set[str]) -> Replica | None:
        while True:
            got = self.try_acquire(exclude)
            if got is not False:
                return got  # type: ignore[return-value]
            await asyncio.sleep(QUEUE_POLL_S)  # every replica is at its cap: wait in line

    def release(self, replica: Replica, *, failed: bool | None) -> None:
        """``failed``: True for a replica fault, False for a success, None for neither."""
        start_probe = False
        with self.lock:
            replica.in_flight -= 1
            if failed is True:
                replica.failures += 1
                if replica.failures >= self.fail_threshold and not replica.down:
                    replica.down = True
                    start_probe = True
            elif failed is False:
                replica.failures = 0
            snapshot = replica.snapshot()
        _publish(replica.url, snapshot)
        if start_probe:
            self._ensure_prober()

    def mark_up(self, replica: Replica) -> None:
        with self.lock:
            replica.down = False
            replica.failures = 0
            snapshot = replica.snapshot()
        _publish(replica.url, snapshot)

    def _ensure_prober(self) -> None:
        with self.lock:
            if self._prober is not None and self._prober.is_alive():
                return
            self._prober = threading.Thread(
                target=self._probe_loop, daemon=True, name="arena-replica-prober"
            )
            self._prober.start()

    def _probe_loop(self) -> None:
        with httpx.Client(timeout=2.0) as client:
            while True:
                time.sleep(self.probe_interval_s)
                with self.lock:
                    down = [r for r in self.replicas if r.down]
                if not down:
                    return
                for replica in down:
                    if probe(client, replica.health_url):
                        self.mark_up(replica)


def probe(client: httpx.Client, url: str) -> bool:
    try:
        return client.get(url).status_code == 200
    except httpx.HTTPError:
        return False


def _publish(url: str, snapshot: dict) -> None:
    try:
        cache.set(cache_key(url), snapshot, timeout=3600)
    except Exception:  # the admin's view of the pool must never fail a request
        pass


_pools: dict[tuple, Pool] = {}
_pools_lock = threading.Lock()


def pool_for(settings: dict) -> Pool:
    """The process-wide pool for these replicas (one per distinct replica set)."""
    replicas = settings["replicas"]
    key = tuple(sorted(replica_url(r) for r in replicas))
    with _pools_lock:
        pool = _pools.get(key)
        if pool is None:
            default_cap = int(settings.get("max_concurrency", 8))
            pool = Pool(
                replicas=[
                    Replica(
                        url=replica_url(r),
                        cap=int(r.get("max_concurrency", default_cap)),
                        health_url=str(r.get("health_url") or _health_url(r["base_url"])),
                        settings={k: v for k, v in r.items() if k != "base_url"},
                    )
                    for r in replicas
                ],
                fail_threshold=int(settings.get("fail_threshold", 3)),
                probe_interval_s=float(settings.get("probe_interval_s", 5.0)),
            )
            _pools[key] = pool
        return pool


def _health_url(base_url: str) -> str:
    base = str(base_url).rstrip("/")
    root = base[: -len("/v1")] if base.endswith("/v1") else base
    return root + "/health"


class PooledBackend:
    def __init__(self, settings: dict, factory: Callable[[dict], Backend]) -> None:
        self.settings = settings
        self.factory = factory
        self.pool = pool_for(settings)

    async def stream(self, request: ChatRequest) -> AsyncIterator[Event]:
        tried: set[str] = set()
        base = {k: v for k, v in self.settings.items() if k != "replicas"}
        last_error: StreamError | None = None
        for attempt in (1, 2):
            replica = await self.pool.acquire(tried)
            if replica is None and _may_wait(last_error):
                # No other replica to try: honour Retry-After, then try the same one again.
                await asyncio.sleep(last_error.retry_after_s)  # type: ignore[union-attr]
                replica = await self.pool.acquire(set())
            if replica is None:
                yield last_error or StreamError("server", "No healthy replica is available.")
                return
            tried.add(replica.url)
            backend = self.factory({**base, **replica.settings, "base_url": replica.url})
            failed: bool | None = True  # a stream that just stops is the replica's fault
            got_text = False
            retry = False
            try:
                yield Routed(replica.url)
                async for event in backend.stream(request):
                    if isinstance(event, TextDelta) and event.text:
                        got_text = True
                    elif isinstance(event, Finished):
                        failed = False
                    elif isinstance(event, StreamError):
                        failed = True if event.kind in HEALTH_FAILURES else None
                        if not got_text and attempt == 1 and event.kind in RETRYABLE:
                            last_error = event
                            retry = True
                            break
                    yield event
                    if not isinstance(event, TextDelta):
                        return
            except GeneratorExit:
                failed = None  # the caller stopped reading (a cap or a deadline), not a fault
                raise
            finally:
                self.pool.release(replica, failed=failed)
            if not retry:
                return
