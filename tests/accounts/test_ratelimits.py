"""Rate limits per account and per network: websocket actions and the allauth forms."""

from __future__ import annotations

import secrets
import uuid

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.core import mail
from django.test import Client, RequestFactory

from accounts import ratelimits
from accounts.models import User
from arena.records.models import Battle, Turn, Vote
from tests.helpers import PASSWORD, frames_until, make_user, session_headers

NO_LIMIT = {"user": None, "network": None}


@pytest.fixture(autouse=True)
def _own_counters(settings):
    # A fresh key prefix for each test rather than cache.clear(): with Redis the cache shares
    # its database with the Celery broker and the answer streams, and a flush would wipe them.
    settings.RATELIMIT_CACHE_PREFIX = f"rl-test-{uuid.uuid4().hex}:"


@pytest.fixture
def limits(settings):
    """Set some limits; every other action is left unlimited so only these can refuse."""

    def set_limits(**actions: dict[str, str | None]) -> None:
        settings.RATELIMITS = {
            **{action: NO_LIMIT for action in settings.RATELIMITS},
            **{action: {**NO_LIMIT, **scopes} for action, scopes in actions.items()},
        }

    return set_limits


@pytest.fixture
def behind_proxy(settings):
    settings.TRUSTED_PROXY_HEADER = "HTTP_X_FORWARDED_FOR"
    settings.TRUSTED_PROXY_COUNT = 1


# Networks and addresses ----------------------------------------------------------------------


def test_ipv4_addresses_are_limited_as_their_slash_24():
    assert ratelimits.network_of("203.0.113.77") == "203.0.113.0/24"
    assert ratelimits.network_of("203.0.113.1") == ratelimits.network_of("203.0.113.254")
    assert ratelimits.network_of("203.0.113.1") != ratelimits.network_of("203.0.114.1")
    # A dual-stack socket reports an IPv4 client as ::ffff:a.b.c.d; it is the same network.
    assert ratelimits.network_of("::ffff:203.0.113.77") == "203.0.113.0/24"


def test_ipv6_addresses_are_limited_as_their_slash_64():
    assert ratelimits.network_of("2001:db8:1:2:aaaa::1") == "2001:db8:1:2::/64"
    assert ratelimits.network_of("2001:db8:1:2::1") == ratelimits.network_of(
        "2001:db8:1:2:ffff:ffff:ffff:ffff"
    )
    assert ratelimits.network_of("2001:db8:1:2::1") != ratelimits.network_of("2001:db8:1:3::1")


def test_no_or_unreadable_address_has_no_network():
    assert ratelimits.network_of(None) is None
    assert ratelimits.network_of("not-an-address") is None


def test_forwarded_header_is_ignored_unless_a_proxy_is_trusted():
    request = RequestFactory().get(
        "/", REMOTE_ADDR="192.0.2.10", HTTP_X_FORWARDED_FOR="203.0.113.9"
    )
    assert ratelimits.request_address(request) == "192.0.2.10"
    scope = {"client": ["192.0.2.10", 5000], "headers": [(b"x-forwarded-for", b"203.0.113.9")]}
    assert ratelimits.scope_address(scope) == "192.0.2.10"


def test_trusted_proxy_header_gives_the_address_the_proxy_added(behind_proxy, settings):
    # The client wrote the left entry itself; only the right-most came from our proxy.
    forwarded = "198.51.100.1, 203.0.113.9"
    request = RequestFactory().get("/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR=forwarded)
    assert ratelimits.request_address(request) == "203.0.113.9"
    scope = {"client": ["10.0.0.2", 5000], "headers": [(b"X-Forwarded-For", forwarded.encode())]}
    assert ratelimits.scope_address(scope) == "203.0.113.9"

    settings.TRUSTED_PROXY_COUNT = 2  # two proxies of ours: the outer one wrote the left entry
    assert ratelimits.request_address(request) == "198.51.100.1"
    assert ratelimits.scope_address(scope) == "198.51.100.1"


def test_trusted_header_missing_or_unreadable_falls_back_to_the_peer(behind_proxy):
    factory = RequestFactory()
    assert ratelimits.request_address(factory.get("/", REMOTE_ADDR="10.0.0.2")) == "10.0.0.2"
    garbled = factory.get("/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="unknown")
    assert ratelimits.request_address(garbled) == "10.0.0.2"
    with_port = factory.get("/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="[2001:db8::5]:443")
    assert ratelimits.request_address(with_port) == "2001:db8::5"


# The limiter ---------------------------------------------------------------------------------

WINDOW_START = 1_700_000_040  # a whole minute since the epoch


def test_limit_refuses_past_the_rate_and_says_when_to_retry(limits):
    limits(vote={"user": "2/m"})
    at = WINDOW_START + 10
    assert ratelimits.check("vote", user_id=1, address="203.0.113.5", now=at) is None
    assert ratelimits.check("vote", user_id=1, address="203.0.113.5", now=at + 1) is None
    limited = ratelimits.check("vote", user_id=1, address="203.0.113.5", now=at + 2)
    assert limited is not None
    assert (limited.scope, limited.retry_after) == ("user", 48)
    assert limited.message == "Too many votes for this account. Try again in 48 seconds."
    # Another account is counted on its own.
    assert ratelimits.check("vote", user_id=2, address="203.0.113.5", now=at + 2) is None


def test_the_window_resets_at_its_end(limits):
    limits(battle_start={"user": "2/m"})
    for at in (WINDOW_START, WINDOW_START + 59):
        assert ratelimits.check("battle_start", user_id=1, address=None, now=at) is None
    assert ratelimits.check("battle_start", user_id=1, address=None, now=WINDOW_START + 59.5)
    # The next minute is a new counter: no sleeping, no clearing.
    assert ratelimits.check("battle_start", user_id=1, address=None, now=WINDOW_START + 60) is None


def test_accounts_on_one_network_share_the_network_limit(limits):
    limits(follow_up={"user": "10/m", "network": "3/m"})
    at = WINDOW_START
    for user_id, address in (
        (1, "2001:db8:1:2::1"),
        (2, "2001:db8:1:2::2"),
        (3, "2001:db8:1:2::3"),
    ):
        assert ratelimits.check("follow_up", user_id=user_id, address=address, now=at) is None
    limited = ratelimits.check("follow_up", user_id=4, address="2001:db8:1:2:ffff::9", now=at)
    assert limited is not None and limited.scope == "network"
    assert limited.message.startswith("Too many follow-up messages from your network.")
    assert ratelimits.check("follow_up", user_id=4, address="2001:db8:1:3::1", now=at) is None


def test_an_account_over_its_limit_does_not_use_up_its_networks(limits):
    limits(vote={"user": "1/m", "network": "2/m"})
    at = WINDOW_START
    assert ratelimits.check("vote", user_id=1, address="203.0.113.1", now=at) is None
    for _ in range(5):
        assert ratelimits.check("vote", user_id=1, address="203.0.113.1", now=at).scope == "user"
    assert ratelimits.check("vote", user_id=2, address="203.0.113.2", now=at) is None


def test_unset_limits_never_refuse(limits):
    limits()
    for _ in range(50):
        assert ratelimits.check("compare_run", user_id=1, address="203.0.113.1") is None


def test_every_action_has_a_rate_in_settings(settings):
    actions = {"battle_start", "follow_up", "vote", "compare_run", "signup", "login"}
    assert actions | {"password_reset"} <= set(settings.RATELIMITS)
    for scopes in settings.RATELIMITS.values():
        for rate in scopes.values():
            if rate is not None:
                ratelimits.parse_rate(rate)


# Websocket -----------------------------------------------------------------------------------
# Bursts use hour- or day-long windows, so one never straddles a window's end mid-test.


async def connect(user: User, forwarded_for: str | None = None) -> WebsocketCommunicator:
    from arena.asgi import application

    headers = await database_sync_to_async(session_headers)(user)
    if forwarded_for is not None:
        headers.append((b"x-forwarded-for", forwarded_for.encode()))
    comm = WebsocketCommunicator(application, "/ws/battle/", headers=headers)
    connected, _ = await comm.connect()
    assert connected
    return comm


async def send(comm: WebsocketCommunicator, message: dict) -> dict:
    """Send one action; the frame that ends its reply (turn shown, void, vote or error)."""
    await comm.send_json_to(message)
    return (await frames_until(comm, "turn_complete", "void", "error", "revealed"))[-1]


def count(model, **filters) -> int:
    return model.objects.filter(**filters).count()


@pytest.mark.usefixtures("generation", "two_models")
async def test_a_burst_of_battle_starts_from_one_account_is_cut_at_the_limit(alice, limits):
    limits(battle_start={"user": "3/d"})
    comm = await connect(alice)
    frames = [await send(comm, {"action": "start", "prompt": f"Burst {i}"}) for i in range(5)]
    assert [f["type"] for f in frames] == ["turn_complete"] * 3 + ["error"] * 2
    for refusal in frames[3:]:
        assert refusal["code"] == "rate_limited"
        assert 0 < refusal["retry_after"] <= 86_400
        assert refusal["message"].startswith("Too many battles started for this account.")
    assert await database_sync_to_async(count)(Battle, rater=alice) == 3
    # The refused starts did not leave the battle in progress: it can still be voted on.
    assert (await send(comm, {"action": "vote", "choice": "a"}))["type"] == "revealed"
    await comm.disconnect()


@pytest.mark.usefixtures("generation", "two_models", "behind_proxy")
async def test_battle_starts_from_several_accounts_on_one_network_share_a_limit(alice, bob, limits):
    limits(battle_start={"user": "10/d", "network": "3/d"})
    carol = await database_sync_to_async(make_user)("carol@example.com")
    dave = await database_sync_to_async(make_user)("dave@example.com")
    a = await connect(alice, "198.51.100.10")
    b = await connect(bob, "198.51.100.20")
    c = await connect(carol, "203.0.113.250, 198.51.100.30")  # the left entry is the client's own
    start = {"action": "start", "prompt": "Same network"}
    assert (await send(a, start))["type"] == "turn_complete"
    assert (await send(a, start))["type"] == "turn_complete"
    assert (await send(b, start))["type"] == "turn_complete"
    refused = await send(c, start)
    assert refused["code"] == "rate_limited"
    assert refused["message"].startswith("Too many battles started from your network.")
    assert await database_sync_to_async(count)(Battle, rater=carol) == 0
    # Another network is not held back.
    d = await connect(dave, "203.0.113.250")
    assert (await send(d, start))["type"] == "turn_complete"
    for comm in (a, b, c, d):
        await comm.disconnect()


@pytest.mark.usefixtures("generation", "two_models")
async def test_a_vote_past_the_limit_is_refused_and_writes_nothing(alice, limits):
    limits(vote={"user": "1/d"})
    comm = await connect(alice)
    assert (await send(comm, {"action": "start", "prompt": "First"}))["type"] == "turn_complete"
    assert (await send(comm, {"action": "vote", "choice": "a"}))["type"] == "revealed"
    assert (await send(comm, {"action": "start", "prompt": "Second"}))["type"] == "turn_complete"
    refused = await send(comm, {"action": "vote", "choice": "b"})
    assert refused["code"] == "rate_limited" and refused["retry_after"] > 0
    assert await database_sync_to_async(count)(Vote, rater=alice) == 1
    assert await database_sync_to_async(count)(Battle, rater=alice, status="ready") == 1
    await comm.disconnect()


@pytest.mark.usefixtures("generation", "two_models")
async def test_a_follow_up_past_the_limit_is_refused_and_writes_nothing(alice, limits):
    limits(follow_up={"user": "1/d"})
    comm = await connect(alice)
    assert (await send(comm, {"action": "start", "prompt": "Start"}))["type"] == "turn_complete"
    follow_up = {"action": "follow_up", "text": "More, please."}
    assert (await send(comm, follow_up))["type"] == "turn_complete"
    refused = await send(comm, follow_up)
    assert refused["code"] == "rate_limited"
    assert refused["message"].startswith("Too many follow-up messages for this account.")
    assert await database_sync_to_async(count)(Turn, battle__rater=alice) == 2
    await comm.disconnect()


# HTTP: sign-up, sign-in, password reset ------------------------------------------------------


def signup(address: str, email: str, **extra: str):
    return Client().post(
        "/accounts/signup/",
        {"email": email, "password1": PASSWORD, "password2": PASSWORD},
        REMOTE_ADDR=address,
        **extra,
    )


def assert_refused(response, message_start: str, *, longest: int) -> None:
    assert response.status_code == 429
    assert 0 < int(response["Retry-After"]) <= longest
    assert response.content.decode().startswith(message_start)


def test_sign_ups_from_one_network_past_the_limit_get_429_and_create_nothing(db, limits):
    limits(signup={"network": "3/h"})
    for i in range(3):
        assert signup(f"203.0.113.{i + 1}", f"new{i}@example.com").status_code == 302
    refused = signup("203.0.113.99", "new3@example.com")
    assert_refused(refused, "Too many sign-ups from your network.", longest=3600)
    assert not User.objects.filter(email="new3@example.com").exists()
    assert User.objects.count() == 3
    # Another network signs up as usual.
    assert signup("198.51.100.1", "other@example.com").status_code == 302


def test_a_spoofed_forwarded_header_does_not_escape_the_network_limit(db, limits):
    limits(signup={"network": "1/h"})
    assert signup("203.0.113.1", "a@example.com").status_code == 302
    refused = signup("203.0.113.1", "b@example.com", HTTP_X_FORWARDED_FOR="198.51.100.7")
    assert refused.status_code == 429


def test_sign_ups_behind_a_trusted_proxy_are_counted_per_client_network(db, limits, behind_proxy):
    limits(signup={"network": "1/h"})
    proxy = "10.0.0.2"
    assert signup(proxy, "a@example.com", HTTP_X_FORWARDED_FOR="203.0.113.1").status_code == 302
    assert signup(proxy, "b@example.com", HTTP_X_FORWARDED_FOR="198.51.100.1").status_code == 302
    refused = signup(proxy, "c@example.com", HTTP_X_FORWARDED_FOR="203.0.113.2")
    assert refused.status_code == 429


def login(client: Client, address: str, email: str, password: str):
    return client.post(
        "/accounts/login/", {"login": email, "password": password}, REMOTE_ADDR=address
    )


def unique_user():
    # allauth keeps its own failed-sign-in counts per account, in the same (perhaps shared) cache
    return make_user(f"rater-{uuid.uuid4().hex[:12]}@example.com")


def test_sign_in_attempts_on_one_account_are_limited_across_networks(db, limits, caplog):
    limits(login={"user": "2/h", "network": "100/h"})
    alice = unique_user()
    client = Client()
    assert login(client, "203.0.113.1", alice.email, "wrong").status_code == 200
    assert login(client, "198.51.100.1", alice.email, "wrong").status_code == 200
    # Past the limit even the right password is refused, and nobody is signed in.
    with caplog.at_level("WARNING", logger="django.request"):
        refused = login(client, "192.0.2.1", alice.email.upper(), PASSWORD)
    assert_refused(refused, "Too many sign-in attempts for this account.", longest=3600)
    # Logged as one line, not a traceback.
    logged = [r for r in caplog.records if r.name == "django.request"]
    assert len(logged) == 1 and logged[0].exc_info is None
    assert "_auth_user_id" not in client.session
    # Other accounts sign in as usual.
    bob = unique_user()
    assert login(client, "192.0.2.1", bob.email, PASSWORD).status_code == 302


def test_allauths_own_limits_answer_with_retry_after_too(db, limits, settings):
    limits()  # ours off, allauth's tightened: allauth answers through handler429
    settings.ACCOUNT_RATE_LIMITS = {"signup": "1/m/ip"}
    # allauth's counts are not under our key prefix: an address of this test's own.
    address = f"198.18.{secrets.randbelow(256)}.{secrets.randbelow(256)}"
    assert signup(address, "first@example.com").status_code == 302
    refused = signup(address, "second@example.com")
    assert_refused(refused, "Too many attempts.", longest=60)
    assert not User.objects.filter(email="second@example.com").exists()


def test_sign_in_attempts_from_one_network_are_limited(alice, limits):
    limits(login={"user": "100/h", "network": "2/h"})
    assert login(Client(), "203.0.113.1", "x@example.com", "wrong").status_code == 200
    assert login(Client(), "203.0.113.2", "y@example.com", "wrong").status_code == 200
    refused = login(Client(), "203.0.113.3", alice.email, PASSWORD)
    assert_refused(refused, "Too many sign-in attempts from your network.", longest=3600)
    # The sign-in page itself still loads: only POSTs count.
    assert Client().get("/accounts/login/", REMOTE_ADDR="203.0.113.3").status_code == 200


def test_password_resets_past_the_limit_get_429_and_send_nothing(alice, limits):
    limits(password_reset={"user": "100/h", "network": "2/h"})

    def reset(address: str):
        return Client().post(
            "/accounts/password/reset/", {"email": alice.email}, REMOTE_ADDR=address
        )

    assert reset("2001:db8:1:2::1").status_code == 302
    assert reset("2001:db8:1:2::2").status_code == 302
    assert len(mail.outbox) == 2
    refused = reset("2001:db8:1:2:ffff::3")
    assert_refused(refused, "Too many password reset requests from your network.", longest=3600)
    assert len(mail.outbox) == 2


def test_other_permission_denials_stay_403(client, db):
    from django.core.exceptions import PermissionDenied

    from accounts.views import permission_denied

    response = permission_denied(RequestFactory().get("/"), PermissionDenied())
    assert response.status_code == 403
