"""OpenRouter's models catalog (GET /api/v1/models): which request parameters each model
takes (``supported_parameters``), read so that the shared parameters a model supports are
OpenRouter's word, not typed by hand. OpenRouter models themselves are served by the
OpenAI-compatible adapter; this reads the catalog only. It is kept in the cache for
CACHE_S, so the admin action and ``manage.py sync_openrouter`` do not fetch it each time."""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx
from django.core.cache import cache

CATALOG_URL = "https://openrouter.ai/api/v1/models"
CACHE_S = 3600
TIMEOUT_S = 20.0


class CatalogError(Exception):
    """The catalog could not be read; the message says why, with no response body in it."""


def catalog_read(*, url: str = CATALOG_URL, fresh: bool = False) -> dict[str, list[str]]:
    """Each model id in the catalog at ``url`` with its ``supported_parameters``; from the
    cache unless ``fresh`` (or not cached yet)."""
    key = f"openrouter:catalog:{url.encode().hex()}"
    if not fresh and (found := cache.get(key)) is not None:
        return found
    try:
        response = httpx.get(url, timeout=TIMEOUT_S, follow_redirects=False)
    except httpx.HTTPError as exc:
        why = type(exc).__name__
        raise CatalogError(f"OpenRouter's catalog could not be reached: {why}.") from None
    if response.status_code != 200:
        raise CatalogError(f"OpenRouter's catalog answered HTTP {response.status_code}.")
    try:
        entries = response.json()["data"]
        found = {
            str(e["id"]): [str(p) for p in e.get("supported_parameters") or []]
            for e in entries
            if isinstance(e, dict) and e.get("id")
        }
    except (ValueError, KeyError, TypeError):
        raise CatalogError("OpenRouter's catalog is not in its documented form.") from None
    cache.set(key, found, CACHE_S)
    return found


def served_by(base_url: str, *, url: str = CATALOG_URL) -> bool:
    """Whether a model whose backend settings' ``base_url`` is this is served by the service
    whose catalog is at ``url`` (the same scheme, host and port)."""
    mine, theirs = urlsplit(base_url or ""), urlsplit(url)
    return bool(mine.netloc) and (mine.scheme, mine.netloc) == (theirs.scheme, theirs.netloc)
