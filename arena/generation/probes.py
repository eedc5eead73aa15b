"""Is a backend answering? One tiny streamed request through the real adapter and the runner.

``probe`` runs one request exactly as a battle would (``stream_answer``), so what it reports is
what raters would meet. ``probe_models`` checks every replica of a set of models at once; it
never touches the database, so it can run on model rows loaded beforehand.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass
from typing import TypeVar

import httpx
from django.conf import settings

from arena.backends.base import ChatRequest, Message
from arena.backends.http import shared_client
from arena.backends.pools import health_check, replica_urls
from arena.backends.registry import UnknownBackend, backend_for
from arena.catalog.models import ModelEntry
from arena.core.errors import ServiceError
from arena.generation.runner import StreamResult, discard, stream_answer

PING_PROMPT = "ping"
PING_MAX_TOKENS = 8
PING_TIMEOUT_S = 10.0
IN_PROCESS = "in-process"
_MODEL_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/@+\-]{0,119}$")

T = TypeVar("T")


@dataclass(frozen=True)
class ReplicaHealth:
    model: str  # public name
    replica: str  # base URL, or "in-process" for the mock
    up: bool
    ttft_ms: float | None = None
    error_kind: str = ""
    error_message: str = ""
    note: str = ""


@dataclass(frozen=True)
class Probe:
    """One request to send: to which backend (its kind and adapter settings) and model, what it
    asks, and how long the whole answer may take; a replica's health ping by default."""

    kind: str
    backend_settings: dict
    model_id: str
    prompt: str = PING_PROMPT
    max_tokens: int = PING_MAX_TOKENS
    timeout_s: float = PING_TIMEOUT_S


async def probe(sent: Probe) -> StreamResult:
    """One streamed request; ServiceError ``unknown_backend`` when no backend of its kind is
    installed."""
    # The adapter's own HTTP timeout must not outlast the probe's.
    conf = {**sent.backend_settings, "timeout_s": sent.timeout_s}
    try:
        backend = backend_for(sent.kind, conf)
    except UnknownBackend as exc:
        raise ServiceError("unknown_backend", str(exc)) from None
    asked = (Message("user", sent.prompt),)
    request = ChatRequest(sent.model_id, asked, {"max_tokens": sent.max_tokens})
    return await stream_answer(
        backend,
        request,
        on_delta=discard,
        max_chars=settings.ARENA["ANSWER_MAX_CHARS"],
        timeout_s=sent.timeout_s,
    )


def run(coro: Awaitable[T]) -> T:
    """Run probes on a fresh event loop from synchronous code (a management command)."""

    async def main() -> T:
        shared_client()  # made before any probe starts its clock, as a worker's is long before
        try:
            return await coro
        finally:
            # The adapters' pooled client belongs to this loop, which ends here: close its
            # keep-alive connections instead of leaving sockets to a dead loop.
            await shared_client().aclose()

    return asyncio.run(main())


async def _listed_models(model: ModelEntry, conf: dict) -> set[str] | None:
    """The model ids an OpenAI-style server lists at ``/models``; None where it lists none
    (another vendor's API, no such route, or an empty list)."""
    if model.backend not in (ModelEntry.Backend.OPENAI_COMPATIBLE, ModelEntry.Backend.OPENAI):
        return None
    check = health_check(conf, lambda c: backend_for(model.backend, c))
    if check.get("problem"):  # a health check its rules refuse is never sent
        return None
    try:
        response = await shared_client().get(check["url"], headers=check["headers"], timeout=5)
        data = response.json().get("data") if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    ids = {str(m.get("id")) for m in data or [] if isinstance(m, dict) and m.get("id")}
    # What the server lists is shown to the operator: model ids only, never free text.
    return {i for i in ids if _MODEL_ID.match(i)} or None


def replica_targets(model: ModelEntry) -> list[tuple[str, dict]]:
    """(replica URL, adapter settings) for each replica, as the pool would call the adapter."""
    conf = dict(model.backend_settings or {})
    urls = replica_urls(conf)
    if not conf.pop("replicas", None):
        return [(urls[0], conf)]
    return [(url, {**conf, "base_url": url}) for url in urls]


async def _probe_replica(
    *, model: ModelEntry, replica: str, backend_settings: dict, timeout_s: float
) -> ReplicaHealth:
    try:
        result = await probe(
            Probe(model.backend, backend_settings, model.model_id, timeout_s=timeout_s)
        )
    except ServiceError as exc:
        return ReplicaHealth(
            model.public_name,
            replica,
            up=False,
            error_kind="bad_request",
            error_message=exc.message,
        )
    # A finish reason means the backend served the request to the end: it is up even when
    # 8 tokens were too few for visible text (reasoning models) or the model refused "ping".
    up = not result.error_kind or bool(result.finish_reason)
    listed = await _listed_models(model, backend_settings) if up else None
    if listed and model.model_id not in listed:
        served = ", ".join(sorted(listed)[:10])
        return ReplicaHealth(
            model.public_name, replica, up=False, ttft_ms=result.ttft_ms,
            error_kind="bad_request",
            error_message=f"The server does not list {model.model_id!r}; it serves: {served}.",
        )  # fmt: skip
    return ReplicaHealth(
        model.public_name,
        replica,
        up=up,
        ttft_ms=result.ttft_ms,
        error_kind=result.error_kind,
        error_message=result.error_message,
    )


async def probe_model(
    *, model: ModelEntry, timeout_s: float = PING_TIMEOUT_S
) -> list[ReplicaHealth]:
    """Every replica of one model, probed concurrently; the mock is in-process, always up."""
    if model.backend == ModelEntry.Backend.MOCK:
        return [ReplicaHealth(model.public_name, IN_PROCESS, up=True, note="always up")]
    return list(
        await asyncio.gather(
            *(
                _probe_replica(model=model, replica=url, backend_settings=conf, timeout_s=timeout_s)
                for url, conf in replica_targets(model)
            )
        )
    )


def probe_models(
    *, models: Iterable[ModelEntry], timeout_s: float = PING_TIMEOUT_S
) -> list[ReplicaHealth]:
    """All replicas of all ``models`` at once, so one slow replica costs one timeout in all."""
    models = list(models)  # a queryset must be read here: the database is sync-only

    async def everything() -> list[ReplicaHealth]:
        per_model = await asyncio.gather(
            *(probe_model(model=m, timeout_s=timeout_s) for m in models)
        )
        return [health for healths in per_model for health in healths]

    return run(everything())
