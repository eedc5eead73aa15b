"""Rate limits per account and per network, counted in the cache every process shares.

One set of rates (``settings.RATELIMITS``), two counters: django-ratelimit guards the sign-in,
sign-up and password reset views, allauth's and the admin's alike (``limit_view``, applied in
arena/urls.py), and ``check`` guards websocket actions, which have no request to decorate. Both
count in ``settings.RATELIMIT_USE_CACHE``: with Redis every web process sees the same counts,
and its ``INCR`` loses none when processes race.
"""

from __future__ import annotations

import ipaddress
import math
import re
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django_ratelimit.core import get_usage
from django_ratelimit.decorators import ratelimit
from django_ratelimit.exceptions import Ratelimited

from accounts.caches import shared_cache

View = Callable[..., HttpResponse]
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

IPV4_PREFIX = 24
IPV6_PREFIX = 64
# A counter outlives its window by at least this much, so no increment meets an expired key.
EXPIRY_MARGIN_S = 5

LABELS = {
    "battle_start": "battles started",
    "follow_up": "follow-up messages",
    "vote": "votes",
    "battle_stop": "stopped battles",
    "compare_run": "compare runs",
    "image_upload": "images uploaded",
    "signup": "sign-ups",
    "login": "sign-in attempts",
    "password_reset": "password reset requests",
}

_RATE = re.compile(r"^\s*(\d+)\s*/\s*(\d*)\s*([smhd])\s*$")
_PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


@dataclass(frozen=True)
class Limited:
    """A refused action: which limit refused it and how long until its window resets."""

    action: str
    scope: str  # "user" or "network"
    retry_after: int  # whole seconds, at least 1

    @property
    def message(self) -> str:
        who = "for this account" if self.scope == "user" else "from your network"
        unit = "second" if self.retry_after == 1 else "seconds"
        what = LABELS.get(self.action, "requests")
        return f"Too many {what} {who}. Try again in {self.retry_after} {unit}."

    def frame(self) -> dict[str, Any]:
        """The websocket error frame for this refusal."""
        return {
            "type": "error",
            "code": "rate_limited",
            "message": self.message,
            "retry_after": self.retry_after,
        }


def parse_rate(rate: str) -> tuple[int, int]:
    """``"30/m"`` -> (30, 60); ``"5/5m"`` -> (5, 300). The format django-ratelimit reads."""
    match = _RATE.match(rate)
    if match is None:
        raise ValueError(f"A rate looks like '30/m' or '5/5m', not {rate!r}.")
    count, multiple, unit = match.groups()
    return int(count), int(multiple or 1) * _PERIODS[unit]


# Addresses -----------------------------------------------------------------------------------


def _parse_ip(text: str) -> Address | None:
    text = text.strip()
    # Some proxies write the port too: "203.0.113.7:5678", "[2001:db8::1]:443".
    if text.startswith("["):
        text = text[1:].split("]", 1)[0]
    elif text.count(":") == 1:
        text = text.split(":", 1)[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def client_address(peer: str | None, forwarded: str | None) -> str | None:
    """The client's address: from the trusted proxy header when one is configured and present,
    else the peer's. ``forwarded`` is that header's value, ignored unless it is trusted."""
    if settings.TRUSTED_PROXY_HEADER and forwarded:
        entries = [e for e in forwarded.split(",") if e.strip()]
        if entries:
            # Only the right-most TRUSTED_PROXY_COUNT entries were written by our proxies; the
            # one furthest left of those is what the outermost saw. Fewer entries: the request
            # skipped a proxy, and the left-most is still the best we have.
            count = max(1, settings.TRUSTED_PROXY_COUNT)
            ip = _parse_ip(entries[-min(count, len(entries))])
            if ip is not None:
                return str(ip)
    ip = _parse_ip(peer or "")
    return str(ip) if ip is not None else None


def network_of(address: str | None) -> str | None:
    """The network an address is limited as: its IPv4 /24 or IPv6 /64 (one customer's
    allocation, which the owner can spread requests over freely)."""
    ip = _parse_ip(address or "")
    if ip is None:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # a dual-stack socket's view of an IPv4 client
    prefix = IPV4_PREFIX if ip.version == 4 else IPV6_PREFIX
    return str(ipaddress.ip_network(f"{ip}/{prefix}", strict=False))


def request_address(request: HttpRequest) -> str | None:
    header = settings.TRUSTED_PROXY_HEADER
    forwarded = request.META.get(header) if header else None
    return client_address(request.META.get("REMOTE_ADDR"), forwarded)


def scope_address(scope: dict[str, Any]) -> str | None:
    """The client address of an ASGI connection (a websocket has no request.META)."""
    forwarded = None
    if settings.TRUSTED_PROXY_HEADER:
        wire = settings.TRUSTED_PROXY_HEADER.removeprefix("HTTP_").replace("_", "-").lower()
        # Repeated header lines form one list, in order, as request.META would join them.
        values = [
            v.decode("latin-1") for k, v in scope.get("headers", []) if k.lower() == wire.encode()
        ]
        forwarded = ",".join(values) or None
    client = scope.get("client")
    return client_address(client[0] if client else None, forwarded)


# The websocket limiter -----------------------------------------------------------------------


def _hit(key: str, period: int) -> int:
    """Count one more in ``key`` and return the count. On Redis add is SET NX and incr is
    INCRBY, each atomic, so processes racing on one key never lose a count."""
    cache = shared_cache(settings.RATELIMIT_USE_CACHE)
    cache.add(key, 0, timeout=period + EXPIRY_MARGIN_S)
    try:
        return cache.incr(key)
    except ValueError:
        # Evicted between the two calls (a full cache): start the count again.
        cache.add(key, 1, timeout=period + EXPIRY_MARGIN_S)
        return 1


def check(
    action: str, *, user_id: int | None, address: str | None, now: float | None = None
) -> Limited | None:
    """Count one ``action`` by this account from this address; a Limited if it is over a limit.

    Fixed windows aligned to the epoch: the window's start is part of the key, so a new window
    is a new counter and nothing has to be reset. The account is counted first and a refused
    attempt stops there, so one account's flood does not use up its network's allowance.
    Without a known address the network limit does not apply, rather than pooling every
    such client into one network.
    """
    rates = settings.RATELIMITS.get(action, {})
    now = time.time() if now is None else now
    for scope, value in (("user", user_id), ("network", network_of(address))):
        rate = rates.get(scope)
        if rate is None or value is None:
            continue
        limit, period = parse_rate(rate)
        start = int(now // period) * period
        prefix = getattr(settings, "RATELIMIT_CACHE_PREFIX", "rl:")  # django-ratelimit's too
        key = f"{prefix}{action}:{scope}:{value}:{period}:{start}"
        if _hit(key, period) > limit:
            return Limited(action, scope, retry_after=max(1, math.ceil(start + period - now)))
    return None


def counted(action: str) -> bool:
    """Whether ``check`` counts this action at all (a limit for either scope is set)."""
    rates = settings.RATELIMITS.get(action, {})
    return rates.get("user") is not None or rates.get("network") is not None


def check_scope(action: str, scope: dict[str, Any]) -> Limited | None:
    """``check`` for the signed-in user of a websocket connection, on the caller's thread."""
    return check(action, user_id=scope["user"].pk, address=scope_address(scope))


async def check_websocket(action: str, scope: dict[str, Any]) -> Limited | None:
    """``check`` for the signed-in user of a websocket connection."""
    if not counted(action):
        # Nothing to count (``check`` would touch no cache): no trip to a thread.
        return None
    # Not thread_sensitive: that one thread runs all of this process's database calls, and a
    # cache round trip should not queue behind them.
    return await sync_to_async(check_scope, thread_sensitive=False)(action, scope)


# The HTTP limiter (django-ratelimit) ---------------------------------------------------------

SCOPES = ("user", "network")


def _http_value(scope: str, request: HttpRequest, account_field: str | None) -> str | None:
    if scope == "network":
        return network_of(request_address(request))
    if account_field is not None:
        # Sign-in and password reset: the account is the one the form names, whoever the
        # session is, so one account cannot be tried from many networks at once, nor from
        # behind a session of the attacker's own. Only the field the view reads counts: a
        # second field could otherwise name a fresh counter while the form tries the victim.
        # NFKC and lower case, as the form and the sign-in backends fold what is typed, so a
        # full-width or upper-case spelling of the address is the same counter.
        typed = unicodedata.normalize("NFKC", request.POST.get(account_field, "")).strip()
        return f"email:{typed.lower()}" if typed else None
    if request.user.is_authenticated:
        return f"account:{request.user.pk}"
    return None


def _http_key(scope: str, account_field: str | None) -> Callable[[str, HttpRequest], str]:
    def key(group: str, request: HttpRequest) -> str:
        return _http_value(scope, request, account_field) or ""

    return key


def _http_rate(
    action: str, scope: str, account_field: str | None
) -> Callable[[str, HttpRequest], str | None]:
    # Read per request, so settings changed at run time (tests) apply; None skips the check.
    def rate(group: str, request: HttpRequest) -> str | None:
        if _http_value(scope, request, account_field) is None:
            return None
        return settings.RATELIMITS.get(action, {}).get(scope)

    return rate


def _guards(action: str, account_field: str | None) -> list[dict[str, Any]]:
    # Network first: a flood from one network is refused before it counts against (and locks
    # out) the accounts it names. The group is the action's alone, not the view's: every door
    # to one action (allauth's sign-in and the admin's) draws on the same counters.
    return [
        {
            "group": f"{action}.{scope}",
            "key": _http_key(scope, account_field),
            "rate": _http_rate(action, scope, account_field),
            "method": "POST",
        }
        for scope in ("network", "user")
    ]


# allauth's own limits (failed sign-ins) end in a 429 too, through handler429, without telling
# us their window; they are all a minute or a few.
FALLBACK_RETRY_AFTER_S = 60


def limited_response(request: HttpRequest) -> HttpResponse:
    """429 with a message people can act on and Retry-After in seconds."""
    limited = http_limited(request)
    if limited is not None:
        message, retry_after = limited.message, limited.retry_after
    else:
        message = "Too many attempts. Try again in a minute."
        retry_after = FALLBACK_RETRY_AFTER_S
    response = HttpResponse(message + "\n", status=429, content_type="text/plain; charset=utf-8")
    response["Retry-After"] = str(retry_after)
    return response


def limit_view(action: str, *, account_field: str | None = None) -> Callable[[View], View]:
    """Limit POSTs to a view per account and per network; over a limit the answer is a 429,
    logged as one line (a Ratelimited left to Django's handler would log a traceback).

    ``account_field``: the POST field naming the account the form acts on (a sign-in's address,
    a password reset's), counted whoever the session is; without it the account is the
    signed-in user's."""

    def decorate(view: View) -> View:
        guarded = view
        for guard in reversed(_guards(action, account_field)):
            guarded = ratelimit(**guard, block=True)(guarded)

        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            # So the 429 can say which limit, and until when.
            request.ratelimit_action = (action, account_field)
            try:
                return guarded(request, *args, **kwargs)
            except Ratelimited:
                return limited_response(request)

        return wrapped

    return decorate


def http_limited(request: HttpRequest) -> Limited | None:
    """Which of our limits refused this request, if any (read without counting again)."""
    limited = getattr(request, "ratelimit_action", None)
    if limited is None:
        return None
    action, account_field = limited
    for guard in _guards(action, account_field):
        usage = get_usage(request, **guard, increment=False)
        if usage is not None and usage["should_limit"]:
            scope = guard["group"].rsplit(".", 1)[1]
            return Limited(action, scope, retry_after=max(1, usage["time_left"]))
    return None
