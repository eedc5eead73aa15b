"""Where backends may connect: public addresses, and what an operator allowed.

A model's URLs are chosen in the admin, and whoever may edit a model must not be able to make
the server talk to itself or its neighbours (Redis, the database, a cloud metadata service).
Loopback, private, link-local, shared, reserved and metadata addresses are refused unless
``ARENA_BACKEND_ALLOW_HOSTS`` names the host or a network holding the address (for example
``127.0.0.1,localhost,10.0.0.0/8``).

The check runs twice: on the URL when settings are saved (``url_problems``: a literal address
or a name such as ``localhost``), and on every connection (``guarded_async_transport``,
``guarded_sync_transport``): the host is resolved, every address it resolves to is checked,
and the connection is made to an address that passed, so a name that resolves elsewhere later
(DNS rebinding) gains nothing.
"""

from __future__ import annotations

import functools
import ipaddress
import re
import socket
import ssl
import typing
from urllib.parse import parse_qsl, urlsplit

import anyio
import httpcore
import httpx
from django.conf import settings

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

ALLOW_SETTING = "ARENA_BACKEND_ALLOW_HOSTS"
# Names that mean this machine or a cloud's metadata service whatever DNS says.
_LOCAL_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback")
_METADATA_NAMES = ("metadata", "metadata.google.internal", "instance-data", "metadata.goog")
# Forms whose last 32 bits are an IPv4 address: NAT64's well-known prefix and the old
# IPv4-compatible ::a.b.c.d.
_LAST_32_BITS_IPV4 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("::/96"))
# NAT64's local-use prefix places its IPv4 address where the operator chose: refused whole.
_LOCAL_NAT64 = ipaddress.ip_network("64:ff9b:1::/48")
# Query parameters that carry credentials (Gemini's ?key=, signed URLs, tokens).
_SECRET_QUERY_WORDS = ("key", "token", "secret", "password", "passwd", "auth", "sig", "credential")


class AddressRefused(httpcore.ConnectError):
    """A connection to an address the operator did not allow; httpx raises it as a
    ``ConnectError`` whose cause is this."""


@functools.cache
def _parse_allowed(entries: tuple[str, ...]) -> tuple[frozenset[str], tuple[Network, ...]]:
    names: set[str] = set()
    networks: list[Network] = []
    for entry in entries:
        entry = entry.strip().lower().strip("[]")
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            names.add(entry.rstrip("."))
    return frozenset(names), tuple(networks)


def allowed() -> tuple[frozenset[str], tuple[Network, ...]]:
    """(host names, networks) the operator allows beyond the public internet."""
    value = getattr(settings, ALLOW_SETTING, ()) or ()
    if isinstance(value, str):
        value = value.split(",")
    return _parse_allowed(tuple(str(v) for v in value))


def _name_allowed(host: str, names: frozenset[str]) -> bool:
    host = host.lower().rstrip(".")
    # ".example.internal" allows every name under it.
    return host in names or any(n.startswith(".") and host.endswith(n) for n in names)


def _embedded(ip: Address) -> list[Address]:
    """The address itself and any IPv4 address it carries (mapped, NAT64, 6to4, Teredo)."""
    found: list[Address] = [ip]
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped:
            found.append(ip.ipv4_mapped)
        if ip.sixtofour:
            found.append(ip.sixtofour)
        if ip.teredo:
            found.append(ip.teredo[1])
        if any(ip in net for net in _LAST_32_BITS_IPV4):
            found.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return found


def address_refused(ip: Address, networks: tuple[Network, ...] | None = None) -> bool:
    """Whether a connection to ``ip`` is refused: anything not plainly on the public
    internet (loopback, private, link-local with the metadata services, shared, reserved,
    multicast), unless an allowed network holds it."""
    if networks is None:
        networks = allowed()[1]
    if any(ip in net for net in networks if net.version == ip.version):
        return False
    if ip.version == 6 and ip in _LOCAL_NAT64:
        return True
    return any(not a.is_global or a.is_multicast for a in _embedded(ip))


def _literal(host: str) -> Address | None:
    """The address ``host`` spells, including the shorthand forms the C resolver reads as
    IPv4 (127.1, 2130706433, 0x7f000001), which are not names whatever they look like."""
    try:
        return ipaddress.ip_address(host.strip("[]").split("%")[0])
    except ValueError:
        pass
    if re.fullmatch(r"[0-9a-fA-FxX.]+", host) and re.match(r"[0-9]", host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def host_problem(host: str) -> str:
    """Why ``host`` is refused before any lookup (a literal address, or a name that always
    means this machine or a metadata service); "" when it may be tried."""
    names, networks = allowed()
    if not host:
        return "has no host"
    if _name_allowed(host, names):
        return ""
    ip = _literal(host)
    lowered = host.lower().rstrip(".")
    if ip is not None:
        refused = address_refused(ip, networks)
    else:
        # A name for this machine is its loopback address; a metadata name is never allowed
        # by address (only by name), whatever it resolves to.
        local = lowered in _LOCAL_NAMES or lowered.endswith(".localhost")
        loopback = ipaddress.ip_address("127.0.0.1")
        refused = (local and address_refused(loopback, networks)) or lowered in _METADATA_NAMES
    if not refused:
        return ""
    return (
        f"points at {host}, a loopback, private, link-local or metadata address; an operator "
        f"must allow it in {ALLOW_SETTING}"
    )


def explicitly_allowed(host: str) -> bool:
    """Whether the operator named ``host`` itself in ARENA_BACKEND_ALLOW_HOSTS: by name, or an
    address inside an allowed network (a name that merely resolves into one does not count)."""
    names, networks = allowed()
    if _name_allowed(host, names):
        return True
    ip = _literal(host)
    return ip is not None and any(ip in n for n in networks if n.version == ip.version)


def _secret_query(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in _SECRET_QUERY_WORDS)


def url_problems(url: object, where: str) -> list[str]:
    """What is wrong with a backend URL: not http(s), credentials in it, or a host that is
    refused (see ``host_problem``); empty when it is fine."""
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        return [f"'{where}' must be a URL starting http:// or https://."]
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        parts.port  # noqa: B018  (a port that is not a number raises here)
    except ValueError:
        return [f"'{where}' is not a valid URL."]
    problems = []
    if "@" in parts.netloc:
        problems.append(
            f"'{where}' carries a user name or password. Never put a key in a URL: name "
            "the environment variable in 'api_key_env' (or a file in 'api_key_file')."
        )
    if any(_secret_query(name) for name, _ in parse_qsl(parts.query, keep_blank_values=True)):
        problems.append(
            f"'{where}' carries a key in its query string. Never put a key in a URL: name "
            "the environment variable in 'api_key_env' (or a file in 'api_key_file')."
        )
    if "@" not in parts.netloc and (problem := host_problem(host)):
        problems.append(f"'{where}' {problem}.")
    return problems


def shown_url(url: str) -> str:
    """A URL as the admin and reports show it: no user name or password, and the value of
    any query parameter that may carry a key replaced, whatever an older row holds."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc.rpartition("@")[2]
        query = "&".join(
            f"{name}={'[redacted]' if _secret_query(name) else value}" if value or "=" in raw
            else name
            for raw in parts.query.split("&") if raw
            for name, _, value in [raw.partition("=")]
        )  # fmt: skip
        return parts._replace(netloc=netloc, query=query, fragment="").geturl()
    except ValueError:
        return "(an unreadable URL)"


# Connections ---------------------------------------------------------------------------------


def _refusal(host: str) -> AddressRefused:
    return AddressRefused(
        f"The backend's address {host} is a loopback, private, link-local or metadata "
        f"address that {ALLOW_SETTING} does not allow."
    )


def _checked(host: str, infos: list) -> list[str]:
    """The resolved addresses to connect to, in order; AddressRefused when any is refused
    (a name that also resolves inward is not trusted for its other addresses)."""
    networks = allowed()[1]
    addresses = []
    for info in infos:
        ip = ipaddress.ip_address(str(info[4][0]).split("%")[0])
        if address_refused(ip, networks):
            raise _refusal(host)
        if str(ip) not in addresses:
            addresses.append(str(ip))
    if not addresses:
        raise httpcore.ConnectError(f"{host} resolves to no address.")
    return addresses


def _literal_infos(host: str, port: int) -> list | None:
    """getaddrinfo's answer for a host that is an address already (no lookup: most replicas
    are named by address, and a thread hop per new connection would show in TTFT)."""
    ip = _literal(host)
    return None if ip is None else [(None, None, None, "", (str(ip), port))]


class _GuardedAsyncBackend(httpcore.AsyncNetworkBackend):
    def __init__(self) -> None:
        self.inner = httpcore.AnyIOBackend()

    # httpcore passes every argument by name; ``options`` are local_address, socket_options.
    async def connect_tcp(
        self, host: str, port: int, timeout: float | None = None, **options: typing.Any
    ) -> httpcore.AsyncNetworkStream:
        kwargs = {"timeout": timeout, **options}
        if _name_allowed(host, allowed()[0]):
            return await self.inner.connect_tcp(host, port, **kwargs)
        infos = _literal_infos(host, port)
        try:
            if infos is None:  # a name: resolved off the loop, within the connect timeout
                with anyio.fail_after(timeout):
                    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, TimeoutError) as exc:
            raise httpcore.ConnectError(f"{host} cannot be resolved ({exc}).") from exc
        last: Exception | None = None
        for ip in _checked(host, infos):
            try:
                return await self.inner.connect_tcp(ip, port, **kwargs)
            except httpcore.ConnectError as exc:
                last = exc
        raise last or httpcore.ConnectError(host)

    async def connect_unix_socket(self, path: str, timeout=None, socket_options=None):
        raise AddressRefused("Backends connect over TCP only.")

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


class _GuardedSyncBackend(httpcore.NetworkBackend):
    def __init__(self) -> None:
        self.inner = httpcore.SyncBackend()

    def connect_tcp(
        self, host: str, port: int, timeout: float | None = None, **options: typing.Any
    ) -> httpcore.NetworkStream:
        kwargs = {"timeout": timeout, **options}
        if _name_allowed(host, allowed()[0]):
            return self.inner.connect_tcp(host, port, **kwargs)
        try:
            infos = _literal_infos(host, port) or socket.getaddrinfo(
                host, port, type=socket.SOCK_STREAM
            )
        except OSError as exc:
            raise httpcore.ConnectError(f"{host} cannot be resolved ({exc}).") from exc
        last: Exception | None = None
        for ip in _checked(host, infos):
            try:
                return self.inner.connect_tcp(ip, port, **kwargs)
            except httpcore.ConnectError as exc:
                last = exc
        raise last or httpcore.ConnectError(host)

    def connect_unix_socket(self, path: str, timeout=None, socket_options=None):
        raise AddressRefused("Backends connect over TCP only.")

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)


def _pool_kwargs(limits: httpx.Limits, verify: ssl.SSLContext | bool) -> dict:
    context = verify if isinstance(verify, ssl.SSLContext) else httpx.create_ssl_context(verify)
    return {
        "ssl_context": context,
        "max_connections": limits.max_connections,
        "max_keepalive_connections": limits.max_keepalive_connections,
        "keepalive_expiry": limits.keepalive_expiry,
    }


class GuardedAsyncTransport(httpx.AsyncHTTPTransport):
    """httpx's transport, its connection pool on the guarded network backend. No proxy from
    the environment: a proxy would make the connection, and the address check with it."""

    def __init__(
        self, *, verify: ssl.SSLContext | bool = True, limits: httpx.Limits | None = None
    ) -> None:
        limits = limits or httpx.Limits()
        super().__init__(verify=verify, limits=limits, trust_env=False)
        self._pool = httpcore.AsyncConnectionPool(
            **_pool_kwargs(limits, verify), network_backend=_GuardedAsyncBackend()
        )


class GuardedSyncTransport(httpx.HTTPTransport):
    def __init__(self, *, verify: ssl.SSLContext | bool = True) -> None:
        limits = httpx.Limits()
        super().__init__(verify=verify, limits=limits, trust_env=False)
        self._pool = httpcore.ConnectionPool(
            **_pool_kwargs(limits, verify), network_backend=_GuardedSyncBackend()
        )


def refused_cause(exc: BaseException) -> AddressRefused | None:
    """The AddressRefused behind an httpx error, if that is what it is."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, AddressRefused):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None
