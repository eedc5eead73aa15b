"""The admin's sign-in goes through the same limits as allauth's: per account and per network,
on the same counters, answered with the same 429 and one log line."""

from __future__ import annotations

import uuid

import pytest
from django.test import Client

from accounts import ratelimits
from accounts.models import User
from tests.helpers import PASSWORD, make_user

NO_LIMIT = {"user": None, "network": None}


@pytest.fixture
def limits(settings):
    """Set some limits; every other action is left unlimited so only these can refuse."""

    def set_limits(**actions: dict[str, str | None]) -> None:
        settings.RATELIMITS = {
            **{action: NO_LIMIT for action in settings.RATELIMITS},
            **{action: {**NO_LIMIT, **scopes} for action, scopes in actions.items()},
        }

    return set_limits


def unique_staff() -> User:
    # allauth keeps its own failed-sign-in counts per account, in the same (perhaps shared) cache
    return make_user(f"staff-{uuid.uuid4().hex[:12]}@example.com", is_staff=True)


def admin_login(client: Client, address: str, username: str, password: str, **extra: str):
    return client.post(
        "/admin/login/?next=/admin/",
        {"username": username, "password": password, **extra},
        REMOTE_ADDR=address,
    )


def allauth_login(client: Client, address: str, email: str, password: str):
    return client.post(
        "/accounts/login/", {"login": email, "password": password}, REMOTE_ADDR=address
    )


def assert_refused(response, message_start: str) -> None:
    assert response.status_code == 429
    assert 0 < int(response["Retry-After"]) <= 3600
    assert response.content.decode().startswith(message_start)


def signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


def test_wrong_passwords_on_the_admin_sign_in_then_the_right_one_get_429_not_a_session(
    db, settings, caplog
):
    # The shipped limits, as the probe met them: N wrong passwords, then the right one.
    allowed, _ = ratelimits.parse_rate(settings.RATELIMITS["login"]["user"])
    staff = unique_staff()
    client = Client()
    for i in range(allowed):
        # Each from another network: the account's own limit is what refuses.
        wrong = admin_login(client, f"198.51.{i}.1", staff.email, f"guess-{i}")
        assert wrong.status_code == 200 and not signed_in(client)
    with caplog.at_level("WARNING", logger="django.request"):
        refused = admin_login(client, "203.0.113.7", staff.email, PASSWORD)
    assert_refused(refused, "Too many sign-in attempts for this account.")
    assert not signed_in(client)
    assert client.get("/admin/").status_code == 302  # still signed out: back to the sign-in
    # Logged as one line, not a traceback.
    logged = [r for r in caplog.records if r.name == "django.request"]
    assert len(logged) == 1 and logged[0].exc_info is None
    assert logged[0].status_code == 429 and "/admin/login/" in logged[0].getMessage()
    # The page itself still loads (only POSTs count), and other accounts sign in as usual.
    assert client.get("/admin/login/", REMOTE_ADDR="203.0.113.7").status_code == 200
    other = unique_staff()
    assert admin_login(client, "203.0.113.7", other.email, PASSWORD).status_code == 302
    assert signed_in(client)


def test_the_admin_and_allauth_sign_ins_draw_on_one_accounts_counter(db, limits):
    limits(login={"user": "4/h", "network": "100/h"})
    staff = unique_staff()
    client = Client()
    assert allauth_login(client, "198.51.100.1", staff.email, "wrong").status_code == 200
    assert allauth_login(client, "198.51.100.1", staff.email, "wrong").status_code == 200
    assert admin_login(client, "192.0.2.1", staff.email, "wrong").status_code == 200
    assert admin_login(client, "192.0.2.1", staff.email, "wrong").status_code == 200
    # Four guesses spread over both doors use up the account's four: neither door lets in.
    assert_refused(
        admin_login(client, "203.0.113.1", staff.email, PASSWORD),
        "Too many sign-in attempts for this account.",
    )
    assert_refused(
        allauth_login(client, "203.0.113.1", staff.email, PASSWORD),
        "Too many sign-in attempts for this account.",
    )
    assert not signed_in(client)


def test_admin_sign_ins_from_one_network_are_limited_whatever_account_they_name(db, limits):
    limits(login={"user": "100/h", "network": "2/h"})
    staff = unique_staff()
    assert admin_login(Client(), "2001:db8:5:6::1", "x@example.com", "wrong").status_code == 200
    assert admin_login(Client(), "2001:db8:5:6::2", "y@example.com", "wrong").status_code == 200
    client = Client()
    refused = admin_login(client, "2001:db8:5:6:ffff::3", staff.email, PASSWORD)
    assert_refused(refused, "Too many sign-in attempts from your network.")
    assert not signed_in(client)
    # Another network signs in.
    assert admin_login(client, "2001:db8:5:7::1", staff.email, PASSWORD).status_code == 302
    assert signed_in(client)


def test_other_spellings_a_decoy_field_or_a_session_do_not_give_the_account_fresh_guesses(
    db, limits
):
    limits(login={"user": "3/h", "network": "100/h"})
    staff = unique_staff()
    attacker = make_user(f"rater-{uuid.uuid4().hex[:12]}@example.com")
    client = Client()
    client.force_login(attacker)  # a session of the attacker's own does not key the counter
    local, domain = staff.email.split("@")
    # Upper case and full-width letters sign in to the same account (the admin form folds
    # NFKC, allauth's backend matches the address case-insensitively): so they count the same.
    full_width = "".join(chr(ord(c) + 0xFEE0) if c.isalnum() else c for c in local.upper())
    for spelling in (staff.email.upper(), f"{full_width}@{domain}"):
        assert admin_login(client, "198.51.100.1", spelling, "wrong").status_code == 200
    # A second field naming some other account does not move which counter is used.
    decoy = admin_login(client, "198.51.100.1", staff.email, "wrong", login="decoy@example.com")
    assert decoy.status_code == 200
    refused = admin_login(client, "198.51.100.1", f"{full_width}@{domain}", PASSWORD)
    assert_refused(refused, "Too many sign-in attempts for this account.")
    assert client.session.get("_auth_user_id") == str(attacker.pk)


NEW_PASSWORD = "a-brand-new-long-passphrase"


@pytest.mark.parametrize(
    ("path", "fields"),
    [
        ("/admin/password_change/",
         lambda old: {"old_password": old, "new_password1": NEW_PASSWORD,
                      "new_password2": NEW_PASSWORD}),
        ("/accounts/password/change/",
         lambda old: {"oldpassword": old, "password1": NEW_PASSWORD, "password2": NEW_PASSWORD}),
        ("/accounts/reauthenticate/", lambda old: {"password": old}),
    ],
    ids=["admin password change", "password change", "reauthenticate"],
)  # fmt: skip
def test_a_stolen_sessions_password_checks_are_no_unthrottled_oracle(db, limits, path, fields):
    limits(login={"user": "2/h", "network": "100/h"})
    staff = unique_staff()
    client = Client()
    client.force_login(staff)

    def check(password: str):
        return client.post(path, fields(password), REMOTE_ADDR="198.51.100.1")

    assert check("wrong-1").status_code == 200
    assert check("wrong-2").status_code == 200
    assert_refused(check(PASSWORD), "Too many sign-in attempts for this account.")
    staff.refresh_from_db()
    assert staff.check_password(PASSWORD)
    # Below the limit the right password still does what it did (another account's counter).
    other = unique_staff()
    client.force_login(other)
    assert check(PASSWORD).status_code == 302
    # Still behind its own gate, as before it was wrapped: the signed-out are sent to sign in.
    assert Client().get(path).status_code == 302


def test_a_password_reset_counts_the_address_the_form_sends_to_not_a_decoy(db, limits):
    limits(password_reset={"user": "1/h", "network": "100/h"})
    staff = unique_staff()

    def reset(**fields: str):
        return Client().post("/accounts/password/reset/", fields, REMOTE_ADDR="198.51.100.1")

    assert reset(email=staff.email).status_code == 302
    refused = reset(email=staff.email, login=f"decoy-{uuid.uuid4().hex}@example.com")
    assert_refused(refused, "Too many password reset requests for this account.")
