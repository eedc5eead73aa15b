"""GPU serving pools: several replicas of one backend, routed by load and health.

A backend whose settings hold ``"replicas": [{"base_url": ...}, ...]`` is wrapped in a
``PooledBackend``. Each request goes to the healthy replica with the fewest requests in flight
(ties at random), within that replica's ``max_concurrency``; beyond every cap, requests queue.
A replica that fails ``fail_threshold`` times in a row is marked down, a background thread
probes it back (its ``health`` check), and it is ramped in over ``slow_start_s``. A request
that fails before its first token is retried once on another replica; after the first token it
is not (the rater would see a different answer).

The counts, caps and health live in ``pool_state``: on Redis when there is one, shared by every
worker process and machine (a request in flight is a lease that lapses if its worker dies); in
this process otherwise. Nothing here is bound to an event loop: Celery's thread pool runs one
loop per task.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import httpx
from django.conf import settings
from django.core.cache import cache

from arena.backends import checks
from arena.backends.base import (
    TERMINAL,
    Backend,
    ChatRequest,
    Event,
    Finished,
    Routed,
    StreamError,
    TextDelta,
)
from arena.backends.http import SecretMissing, key_destination_problem, secret
from arena.backends.outbound import GuardedSyncTransport, shown_url, url_problems
from arena.backends.pool_state import (
    RENEW_S,
    LocalState,
    RedisState,
    Replica,
    state_for_process,
)

RETRYABLE = {"server", "timeout", "protocol", "rate_limited"}
HEALTH_FAILURES = {"server", "timeout", "protocol"}  # the replica's fault, not the request's
QUEUE_POLL_S = 0.005


RETRY_AFTER_MAX_S = 10.0

# The settings every kind takes: which pool queue its answers go to, and a GPU pool's
# replicas and routing (replicas and health are checked whole: replica_problems).
SETTINGS: dict[str, checks.Check] = {
    "queue": checks.text,
    "replicas": checks.elsewhere,
    "max_concurrency": checks.count,
    "fail_threshold": checks.count,
    "probe_interval_s": checks.number(strict=True),
    "slow_start_s": checks.number(),
    "health": checks.elsewhere,  # {path, method, status, auth}: how a down replica is probed back
}


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
    they are fine (or absent). Each replica's URL is held to the same rules as a base_url,
    and its health check (its own or the backend's) to ``health_problems``."""
    replicas = settings.get("replicas")
    if replicas is None:
        return []
    if not isinstance(replicas, list):
        return ["'replicas' must be a list of objects, each with a 'base_url'."]
    problems = []
    base = {k: v for k, v in settings.items() if k != "replicas"}
    for i, entry in enumerate(replicas):
        url = entry.get("base_url") if isinstance(entry, dict) else None
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            problems.append(f"'replicas[{i}]' needs a 'base_url' starting http:// or https://.")
            continue
        problems += url_problems(url, f"replicas[{i}].base_url")
        problems += health_problems({**base, **entry}, f"replicas[{i}].health")
    return problems


def replica_urls(settings: dict) -> list[str]:
    """Each replica's URL in a backend's settings, in the order configured. A backend without
    replicas counts as one: its own ``base_url``, or "" where it names none (in process, or the
    adapter's default URL)."""
    if settings.get("replicas"):
        return [replica_url(r) for r in settings["replicas"]]
    return [replica_url(settings)] if settings.get("base_url") else [""]


@dataclass
class Pool:
    replicas: list[Replica]
    state: LocalState | RedisState
    fail_threshold: int = 3
    probe_interval_s: float = 5.0
    slow_start_s: float = 10.0
    lock: threading.Lock = field(default_factory=threading.Lock)
    _prober: threading.Thread | None = None

    async def acquire(self, exclude: set[str]) -> tuple[Replica, str] | None:
        """A replica and the lease on one of its slots, waiting in line while every healthy
        one is at its cap; None when no healthy replica is left to try."""
        while True:
            got = await self.state.acquire(self.replicas, exclude, self.slow_start_s)
            if got is not False:
                if got is not None:
                    self._publish(got[0])
                return got  # type: ignore[return-value]
            await asyncio.sleep(QUEUE_POLL_S)

    async def release(self, replica: Replica, token: str, *, failed: bool | None) -> None:
        """``failed``: True for a replica fault, False for a success, None for neither."""
        went_down = await self.state.release(
            replica, token, failed=failed, threshold=self.fail_threshold
        )
        self._publish(replica)
        if went_down:
            self._ensure_prober()

    def is_down(self, replica: Replica) -> bool:
        return self.state.is_down(replica)

    def _publish(self, replica: Replica) -> None:
        if isinstance(self.state, LocalState):  # on Redis, the state itself is what is read
            try:
                cache.set(cache_key(replica.url), self.state.snapshot(replica), timeout=3600)
            except Exception:  # the admin's view of the pool must never fail a request
                pass

    def _ensure_prober(self) -> None:
        with self.lock:
            if self._prober is not None and self._prober.is_alive():
                return
            self._prober = threading.Thread(
                target=self._probe_loop, daemon=True, name="arena-replica-prober"
            )
            self._prober.start()

    def _probe_loop(self) -> None:
        with httpx.Client(timeout=2.0, transport=GuardedSyncTransport()) as client:
            while True:
                time.sleep(self.probe_interval_s)
                down = [r for r in self.replicas if self.state.is_down(r)]
                if not down:
                    return
                for replica in down:
                    if probe(client, replica.health):
                        self.state.mark_up(replica)
                        self._publish(replica)


def probe(client: httpx.Client, health: dict) -> bool:
    """Whether a replica answers its health check as it should. A check its rules refuse
    (``health_problems``) is never sent, and counts as a failed probe."""
    if health.get("problem"):
        return False
    try:
        response = client.request(
            health["method"], health["url"], headers=health.get("headers") or {}
        )
    except httpx.HTTPError:
        return False
    expected = health.get("status", "2xx")
    if expected == "2xx":
        return 200 <= response.status_code < 300
    return response.status_code == int(expected)


def live_state(url: str) -> dict | None:
    """A replica's live state (in flight, down, failures) for the admin, or None when none
    has been recorded."""
    if settings.REDIS_URL:
        found = RedisState(settings.REDIS_URL).snapshot(Replica(url, 1, {}))
        return found if found["in_flight"] or found["down"] or found["failures"] else None
    return cache.get(cache_key(url))


_pools: dict[tuple, Pool] = {}
_pools_lock = threading.Lock()


def pool_for(settings: dict, factory: Callable[[dict], Backend] | None = None) -> Pool:
    """The process-wide pool for these replicas (one per distinct replica set); its state is
    shared by every process through Redis when there is one."""
    replicas = settings["replicas"]
    key = tuple(sorted(replica_url(r) for r in replicas))
    with _pools_lock:
        pool = _pools.get(key)
        if pool is None:
            default_cap = int(settings.get("max_concurrency", 8))
            base = {k: v for k, v in settings.items() if k != "replicas"}
            pool = Pool(
                replicas=[
                    Replica(
                        url=replica_url(r),
                        cap=int(r.get("max_concurrency", default_cap)),
                        health=health_check({**base, **r}, factory),
                        settings={k: v for k, v in r.items() if k != "base_url"},
                    )
                    for r in replicas
                ],
                state=state_for_process(),
                fail_threshold=int(settings.get("fail_threshold", 3)),
                probe_interval_s=float(settings.get("probe_interval_s", 5.0)),
                slow_start_s=float(settings.get("slow_start_s", 10.0)),
            )
            _pools[key] = pool
        return pool


def pools_forget(urls: list[str]) -> None:
    """Forget these replicas' pools and shared state: for tests, whose servers' ports a later
    test may be given again."""
    with _pools_lock:
        for key in [k for k in _pools if set(k) & set(urls)]:
            del _pools[key]
    if settings.REDIS_URL:
        RedisState(settings.REDIS_URL).forget(urls)


HEALTH_METHODS = ("GET", "HEAD")


def _origin(url: str) -> tuple[str, str, int | None] | None:
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError):
        return None
    return parsed.scheme, parsed.host, parsed.port


def health_problems(conf: dict, where: str = "health") -> list[str]:
    """What is wrong with a replica's health check: it may only take a path on the replica
    (never a URL elsewhere: the model's key goes with it) and only GET or HEAD; a legacy
    ``health_url`` must be on the replica's own host."""
    problems = []
    spec = conf.get("health")
    if spec is not None and not isinstance(spec, dict):
        return [f"'{where}' must be an object: path, method, status, auth."]
    spec = spec or {}
    path = spec.get("path", "/models")
    if not isinstance(path, str) or "://" in path or path.startswith(("//", "\\")) or "@" in path:
        problems.append(
            f"'{where}.path' must be a path on the replica, such as /health: never a URL "
            "(the health check carries the model's key)."
        )
    method = spec.get("method", "GET")
    if not isinstance(method, str) or method.upper() not in HEALTH_METHODS:
        problems.append(f"'{where}.method' must be GET or HEAD.")
    status = spec.get("status", "2xx")
    if status != "2xx" and not (isinstance(status, int) and 100 <= status <= 599):
        problems.append(f"'{where}.status' must be \"2xx\" or an HTTP status code.")
    if not isinstance(spec.get("auth", True), bool):
        problems.append(f"'{where}.auth' must be true or false.")
    legacy = conf.get("health_url")
    base = conf.get("base_url")
    if legacy is not None and (
        not isinstance(legacy, str)
        or "@" in legacy
        or _origin(legacy) is None
        or (isinstance(base, str) and _origin(legacy) != _origin(base))
    ):
        problems.append("'health_url' must be a URL on the replica's own host and port.")
    return problems


def health_check(settings: dict, factory: Callable[[dict], Backend] | None = None) -> dict:
    """How a replica is probed back up: ``health`` settings (path, method GET or HEAD, status
    "2xx" or a code, auth: send the model's key) over the defaults, "any 2xx from GET
    /v1/models" with the key, which every OpenAI-compatible server answers (llama.cpp's
    ``/health`` wants the key, Ollama has none). ``health_url`` (older settings) probes that
    URL, on the replica's own host, for a 200, without the key. A check its rules refuse
    carries ``problem`` and is never sent."""
    base = str(settings["base_url"]).rstrip("/")
    if problems := health_problems(settings):
        return {"url": base, "method": "GET", "status": 200, "problem": problems[0]}
    if settings.get("health_url"):
        return {"url": str(settings["health_url"]), "method": "GET", "status": 200}
    spec = {"path": "/models", "method": "GET", "status": "2xx", "auth": True,
            **(settings.get("health") or {})}  # fmt: skip
    url = str(httpx.URL(base + "/" + str(spec["path"]).lstrip("/")))  # "../health" resolved
    if _origin(url) != _origin(base):  # whatever the path held, the key stays on the replica
        return {"url": base, "method": "GET", "status": 200, "problem": "health path"}
    headers: dict[str, str] = {}
    if spec["auth"] and factory is not None:
        backend = factory(settings)
        conf = getattr(backend, "settings", settings)
        try:
            # A vendor's key only ever goes to its own API (secrets.key_destination_problem).
            refused = key_destination_problem(conf.get("api_key_env"), base)
            key = None if refused else secret(conf)
        except SecretMissing:
            key = None
        if key and hasattr(backend, "auth_headers"):
            headers = dict(backend.auth_headers(key))
    return {"url": url, "method": str(spec["method"]).upper(), "status": spec["status"],
            "headers": headers}  # fmt: skip


class PooledBackend:
    def __init__(self, settings: dict, factory: Callable[[dict], Backend]) -> None:
        self.settings = settings
        self.factory = factory
        self.pool = pool_for(settings, factory)

    async def stream(self, request: ChatRequest) -> AsyncIterator[Event]:
        tried: set[str] = set()
        base = {k: v for k, v in self.settings.items() if k != "replicas"}
        last_error: StreamError | None = None
        for attempt in (1, 2):
            got = await self.pool.acquire(tried)
            if got is None and _may_wait(last_error):
                # No other replica to try: honour Retry-After, then try the same one again.
                await asyncio.sleep(last_error.retry_after_s)  # type: ignore[union-attr]
                got = await self.pool.acquire(set())
            if got is None:
                yield last_error or StreamError("server", "No healthy replica is available.")
                return
            replica, token = got
            tried.add(replica.url)
            backend = self.factory({**base, **replica.settings, "base_url": replica.url})
            failed: bool | None = True  # a stream that just stops is the replica's fault
            got_text = False
            retry = False
            renewing = asyncio.ensure_future(self._renew(replica, token))
            try:
                # Stored with the answer: never with a key an older row's URL may carry.
                yield Routed(shown_url(replica.url))
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
                    if isinstance(event, TERMINAL):
                        return
            except GeneratorExit:
                failed = None  # the caller stopped reading (a cap or a deadline), not a fault
                raise
            finally:
                renewing.cancel()
                await self.pool.release(replica, token, failed=failed)
            if not retry:
                return

    async def _renew(self, replica: Replica, token: str) -> None:
        """Keep this request's lease while it streams (a killed worker's lapses)."""
        while True:
            await asyncio.sleep(RENEW_S)
            with contextlib.suppress(Exception):  # Redis away: the next renewal may land
                await self.pool.state.renew([(replica, token)])
