"""The project's middleware: a page that cannot reach Redis or the database is a 503."""

from __future__ import annotations

from django.test import Client
from django.urls import reverse

from arena.devtools.http_server import free_port
from tests.helpers import PASSWORD, make_user


def test_signing_in_while_redis_is_down_is_a_503_that_says_so(db, settings):
    make_user("gale@example.com")
    settings.CACHES = {  # the sign-in rate limits' cache, on a Redis that is not there
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{free_port()}/0",
        }
    }
    page = Client().post(
        reverse("account_login"), {"login": "gale@example.com", "password": PASSWORD}
    )
    assert page.status_code == 503
    assert page.headers["Retry-After"]
    assert "briefly unavailable" in page.content.decode()


def test_a_sign_in_that_reaches_its_services_is_untouched(db, settings):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    make_user("gale@example.com")
    page = Client().post(
        reverse("account_login"), {"login": "gale@example.com", "password": PASSWORD}
    )
    assert page.status_code == 302  # signed in: the middleware stays out of the way
