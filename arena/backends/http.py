"""What every HTTP backend shares: one client factory, secrets, SSE parsing, error mapping, and
``HTTPBackend``, the stream flow each vendor module fills in."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import ssl
import weakref
from collections.abc import AsyncIterator, Callable
from typing import ClassVar

import httpx

from arena.backends import checks
from arena.backends.base import (
    TERMINAL,
    ChatRequest,
    Event,
    Identified,
    ReasoningDelta,
    StreamError,
    TextDelta,
)
from arena.backends.errors import (
    classify_payload,
    http_error,
    http_message,
    mid_stream_error,
    transport_error,
    upstream_text,
)
from arena.backends.outbound import GuardedAsyncTransport, url_problems
from arena.backends.secrets import (  # noqa: F401  (the names other modules import from here)
    SecretMissing,
    header_problems,
    key_destination_problem,
    secret,
    secret_problems,
)

DEFAULT_TIMEOUT_S = 60.0
_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
    weakref.WeakKeyDictionary()
)


@functools.cache
def _tls() -> ssl.SSLContext:
    """The CA bundle, loaded once a process: loading it is most of what a new client costs
    (about 150 ms), which would otherwise land in the first answer's time to first token."""
    return httpx.create_ssl_context()


def shared_client() -> httpx.AsyncClient:
    """One pooled client per event loop (an httpx client cannot cross loops)."""
    loop = asyncio.get_running_loop()
    client = _clients.get(loop)
    if client is None or client.is_closed:
        limits = httpx.Limits(max_connections=200, max_keepalive_connections=50)
        client = httpx.AsyncClient(
            timeout=httpx.Timeout(DEFAULT_TIMEOUT_S, connect=10.0),
            # Every connection's address is checked (outbound); a redirect would take the key
            # to a host nobody chose.
            transport=GuardedAsyncTransport(verify=_tls(), limits=limits),
            follow_redirects=False,
        )
        _clients[loop] = client
    return client


def fresh_client() -> httpx.AsyncClient:
    """A client of its own, with no pooled connection: for a retry that must not reuse one."""
    return httpx.AsyncClient(
        timeout=httpx.Timeout(DEFAULT_TIMEOUT_S, connect=10.0),
        transport=GuardedAsyncTransport(verify=_tls()),
        follow_redirects=False,
    )


def scrub(event: Event, key: str | None) -> Event:
    """Error text comes from the remote side, which may echo the key; it must never be stored."""
    if key and isinstance(event, StreamError) and key in event.message:
        return dataclasses.replace(event, message=event.message.replace(key, "[redacted]"))
    return event


# Raised before any byte of the response: most often a keep-alive connection the server had
# closed (uvicorn does after an error), which a fresh connection does not share.
_STALE_CONNECTION = (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError)


async def post_stream(
    *,
    url: str,
    body: dict,
    headers: dict[str, str],
    settings: dict,
    key: str | None,
    parse: Callable[[httpx.Response], AsyncIterator[Event]],
    refine: Callable[[StreamError, str], StreamError] | None = None,
    params: dict[str, str] | None = None,
    complete: Callable[[object], list[Event]] | None = None,
) -> AsyncIterator[Event]:
    """POST, then stream the vendor's events until the first terminal one. A server that
    answers with one JSON body instead of a stream is read by ``complete``, when the vendor
    has one, else reported as such.

    A request that fails before any response byte arrived is sent once more, on a fresh
    connection (one attempt, as far as pools and retries are concerned). ``refine`` may
    re-classify an HTTP error from its body (vendors word some kinds their own way); every
    error message is scrubbed of the key before it leaves.
    """
    request = {"params": params, "json": body, "headers": headers, "timeout": timeout_for(settings)}
    first_token_s = settings.get("first_token_timeout_s")
    first_token_at = (
        asyncio.get_running_loop().time() + float(first_token_s) if first_token_s else None
    )
    fresh: httpx.AsyncClient | None = None
    try:
        for client_try in (1, 2):
            client = shared_client() if client_try == 1 else fresh_client()
            fresh = client if client_try == 2 else None
            answered = False
            try:
                async with client.stream("POST", url, **request) as response:
                    answered = True
                    if response.status_code != 200:
                        error = await http_error(response)
                        if refine is not None:
                            body = response.content.decode("utf-8", "replace")
                            kind = error.kind
                            error = refine(error, body)
                            if error.kind != kind:  # the message names the refined kind
                                error = dataclasses.replace(error, message=http_message(
                                    response.status_code, error.kind, body, error.retry_after_s
                                ))  # fmt: skip
                        yield scrub(error, key)
                        return
                    header_id = response.headers.get("x-request-id") or response.headers.get(
                        "request-id"
                    )
                    if header_id:
                        yield Identified(header_id)
                    kind = response.headers.get("content-type", "")
                    if "json" in kind and "event-stream" not in kind:
                        for event in _completed(await response.aread(), complete):
                            yield scrub(event, key)
                        return
                    async for event in _first_token_within(parse(response), first_token_at):
                        yield scrub(event, key)
                        if isinstance(event, TERMINAL):
                            return
                return
            except _STALE_CONNECTION as exc:
                if answered or client_try == 2:
                    yield transport_error(exc)
                    return
            except httpx.HTTPError as exc:
                yield transport_error(exc)
                return
    finally:
        if fresh is not None:
            await fresh.aclose()


async def _first_token_within(
    events: AsyncIterator[Event], deadline: float | None
) -> AsyncIterator[Event]:
    """The events, but a timeout error if no token (answer text or thinking) has come by
    ``deadline`` (the model's ``first_token_timeout_s`` after the request was sent): a server
    that sends only keep-alive comments never trips the per-read timeout."""
    loop = asyncio.get_running_loop()
    iterator = aiter(events)
    while True:
        try:
            if deadline is None:
                event = await anext(iterator)
            else:
                event = await asyncio.wait_for(anext(iterator), max(0.0, deadline - loop.time()))
        except StopAsyncIteration:
            return
        except TimeoutError:
            yield StreamError("timeout", "No first token within the model's first-token timeout.")
            return
        if isinstance(event, TextDelta | ReasoningDelta) and event.text:
            deadline = None
        yield event


def _completed(body: bytes, complete: Callable[[object], list[Event]] | None) -> list[Event]:
    """A whole JSON answer to a streamed request, as the events it amounts to."""
    try:
        data = json.loads(body)
    except ValueError:
        return [StreamError("protocol", "The backend sent JSON that does not parse.")]
    if isinstance(data, dict) and data.get("error"):
        error = data["error"]
        kind = classify_payload(error)
        return [StreamError(kind, f"HTTP 200: {upstream_text(kind, error)}")]
    events = complete(data) if complete is not None else []
    if not any(isinstance(e, TERMINAL) for e in events):
        events.append(StreamError(
            "protocol", "The backend answered with one JSON body, not an event stream."
        ))  # fmt: skip
    return events


def with_default_key(settings: dict, env_name: str) -> dict:
    """Settings that read the key from ``env_name`` unless they name another source."""
    if settings.get("api_key_env") or settings.get("api_key_file"):
        return settings
    return {**settings, "api_key_env": env_name}


class HTTPBackend:
    """One request, streamed: the flow every vendor shares.

    Read the key, refuse what cannot be sent, POST, and hand the response to the vendor's
    ``parse``. A vendor module holds only what differs: its default base URL and key variable,
    whether the key is required, and its url, body, auth headers, query, parse and refine.
    """

    default_base_url: str = ""
    default_key_env: str | None = None  # where the key is read from unless settings say
    requires_key: bool = False  # a vendor API that rejects every request without one
    takes_json_schema: ClassVar[bool] = False
    takes_images: ClassVar[bool] = False  # a vendor's module says so where its body carries them
    settings_schema: ClassVar[dict[str, checks.Check]] = {
        "base_url": checks.url,
        "headers": checks.headers,
        "timeout_s": checks.number(strict=True),
        "first_token_timeout_s": checks.number(strict=True),
    }

    def __init__(self, settings: dict) -> None:
        if self.default_key_env:
            settings = with_default_key(settings, self.default_key_env)
        self.settings = settings
        self.base_url = str(settings.get("base_url") or self.default_base_url).rstrip("/")

    def url(self, request: ChatRequest) -> str:
        raise NotImplementedError

    def body(self, request: ChatRequest) -> dict:
        raise NotImplementedError

    def auth_headers(self, key: str | None) -> dict[str, str]:
        raise NotImplementedError

    def query(self) -> dict[str, str] | None:
        return None

    def parse(self, response: httpx.Response) -> AsyncIterator[Event]:
        raise NotImplementedError

    def refine(self, error: StreamError, body: str) -> StreamError:
        """Re-classify an HTTP error from its body; vendors word some kinds their own way."""
        return error

    def complete(self, data: object) -> list[Event]:
        """A whole (unstreamed) answer in the vendor's JSON, as events; none by default."""
        return []

    def headers(self, key: str | None) -> dict[str, str]:
        # The vendor's auth headers come last, so extra settings headers cannot replace them.
        return {
            "Accept": "text/event-stream",
            **dict(self.settings.get("headers") or {}),
            **self.auth_headers(key),
        }

    async def stream(self, request: ChatRequest) -> AsyncIterator[Event]:
        if not self.base_url:
            yield StreamError("bad_request", "No base_url is configured for this backend.")
            return
        # Saved settings were checked by the model form; older rows, commands and the pool's
        # replica settings are checked here again before any key is read.
        if problems := url_problems(self.base_url, "base_url") + header_problems(
            self.settings.get("headers")
        ):
            yield StreamError("bad_request", problems[0])
            return
        if problem := key_destination_problem(self.settings.get("api_key_env"), self.base_url):
            yield StreamError("auth", problem)
            return
        try:
            key = secret(self.settings)
        except SecretMissing as exc:
            yield StreamError("auth", str(exc))
            return
        if self.requires_key and not key:
            yield StreamError("auth", "No API key is configured for this backend.")
            return
        async for event in post_stream(
            url=self.url(request),
            params=self.query(),
            body=self.body(request),
            headers=self.headers(key),
            settings=self.settings,
            key=key,
            parse=self.parse,
            refine=self.refine,
            complete=self.complete,
        ):
            yield event


def stream_chunk(data: str) -> dict | StreamError:
    """One SSE data payload as a JSON object, or the error that ends the stream: a chunk that
    is not a JSON object, or one reporting a failure in a stream that had begun (an ``error``
    member: OpenRouter, Gemini, Anthropic's error event)."""
    try:
        value = json.loads(data)
    except ValueError:
        return StreamError("protocol", "The backend sent a chunk that is not JSON.")
    if not isinstance(value, dict):
        return StreamError("protocol", "The backend sent an unexpected chunk.")
    if value.get("error"):
        return mid_stream_error(value["error"])
    return value


@dataclasses.dataclass
class JSONStream:
    """The chunk loop that the chat-completion style streams share (OpenAI-compatible servers,
    Gemini): each SSE data payload is a JSON object, a failure inside it ends the stream, the
    response id may come in any chunk and the usage in the last ones. ``chunks()`` yields the
    chunks for the backend to read, with the events the stream itself decides: ``Identified``
    when the id first appears or changes, and the ``StreamError`` that ends it. The id and the
    latest usage stay here for the backend's terminal event."""

    response: httpx.Response
    id_key: str
    usage_key: str
    request_id: str | None = None
    usage: dict = dataclasses.field(default_factory=dict)
    # A data payload that ends the stream (OpenAI's "[DONE]"); what follows it is not read.
    end: str | None = None

    async def chunks(self) -> AsyncIterator[dict | Identified | StreamError]:
        async for _, data in sse_events(self.response):
            if self.end is not None and data.strip() == self.end:
                return
            chunk = stream_chunk(data)
            if isinstance(chunk, StreamError):
                yield chunk
                return
            if chunk.get(self.id_key) and chunk[self.id_key] != self.request_id:
                self.request_id = chunk[self.id_key]
                yield Identified(self.request_id)
            self.usage = chunk.get(self.usage_key) or self.usage
            yield chunk


def timeout_for(settings: dict) -> httpx.Timeout:
    seconds = float(settings.get("timeout_s", DEFAULT_TIMEOUT_S))
    return httpx.Timeout(seconds, connect=min(seconds, 10.0))


async def sse_events(response: httpx.Response) -> AsyncIterator[tuple[str, str]]:
    """(event name, data) pairs of a server-sent-event stream; the name defaults to message."""
    event, data = "message", []
    async for line in response.aiter_lines():
        if line == "":
            if data:
                yield event, "\n".join(data)
            event, data = "message", []
        elif line.startswith(":"):
            continue
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    if data:
        yield event, "\n".join(data)
