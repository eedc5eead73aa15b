"""Every form, fuzzed (bounded): hostile text in any field is a form error or a success, never a
server error. The rater's forms (sign-up, sign-in, password reset, email), the leaderboard's
query, every admin add and change form, and the model, prompt and import forms in depth."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

NASTY = st.sampled_from(
    ["\x00", "\ud800", "\udfff", "\u202e", "'; DROP TABLE arena_vote; --", "<script>", "", " "]
)
TEXT = st.lists(st.one_of(NASTY, st.text(max_size=30)), max_size=5).map("".join)
JSONISH = st.one_of(
    TEXT,
    st.integers(1, 2000).map(lambda n: "[" * n + "]" * n),
    st.recursive(
        st.one_of(st.none(), st.booleans(), st.integers(), TEXT),
        lambda inner: st.one_of(
            st.lists(inner, max_size=3), st.dictionaries(TEXT, inner, max_size=3)
        ),
        max_leaves=6,
    ).map(json.dumps),
)
FUZZ = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def assert_no_server_error(response) -> None:
    assert response.status_code < 500, response.content[:500]


def encodable(value: str) -> str:
    # A browser cannot send a lone surrogate in a form; it sends what it can encode instead.
    return value.encode("utf-8", "replace").decode("utf-8")


@pytest.fixture
def rater_client(alice) -> Client:
    client = Client()
    client.force_login(alice)
    return client


@FUZZ
@given(email=TEXT, password=TEXT, other=TEXT)
def test_the_raters_forms_take_any_text(db, rater_client, email, password, other):
    email, password, other = map(encodable, (email, password, other))
    anon = Client()
    for url, data in [
        ("account_signup", {"email": email, "password1": password, "password2": other}),
        ("account_login", {"login": email, "password": password}),
        ("account_reset_password", {"email": email}),
    ]:
        assert_no_server_error(anon.post(reverse(url), data))
    assert_no_server_error(
        rater_client.post(reverse("account_email"), {"email": email, "action_add": ""})
    )
    assert_no_server_error(anon.get(reverse("leaderboard"), {"category": other, "style": email}))
    assert_no_server_error(anon.get(reverse("leaderboard-json"), {"category": other}))


@FUZZ
@given(
    name=TEXT, model_id=TEXT, backend=st.one_of(TEXT, st.sampled_from(["mock", "openai"])),
    backend_settings=JSONISH, params=JSONISH,
)  # fmt: skip
def test_the_model_form_takes_any_input(
    db, admin_client, name, model_id, backend, backend_settings, params
):
    data = {
        "public_name": name,
        "model_id": model_id,
        "backend": backend,
        "backend_settings": backend_settings,
        "supported_params": params,
        "active": "on",
    }
    data = {k: encodable(v) for k, v in data.items()}
    assert_no_server_error(admin_client.post(reverse("admin:arena_modelentry_add"), data))


def _file(name: str, lines: list[str], header: str = "") -> tuple[str, bytes]:
    return name, (header + "\n".join(lines)).encode("utf-8", "replace")


UPLOAD = st.one_of(
    st.lists(JSONISH, max_size=4).map(lambda rows: _file("p.jsonl", rows)),
    st.lists(TEXT, max_size=4).map(lambda rows: _file("p.csv", rows, "text,category\n")),
    st.binary(max_size=200).map(lambda b: ("p.jsonl", b)),
)


@FUZZ
@given(text=TEXT, category=TEXT, upload=UPLOAD)
def test_the_prompt_forms_take_any_input(db, admin_client, text, category, upload):
    data = {
        "text": encodable(text),
        "category": encodable(category),
        "language": "en",
        "active": "on",
    }
    assert_no_server_error(admin_client.post(reverse("admin:arena_prompt_add"), data))
    name, body = upload
    page = admin_client.post(
        reverse("admin:arena_prompt_import"), {"file": SimpleUploadedFile(name, body)}
    )
    assert_no_server_error(page)


def _admin_forms(user) -> list[tuple[str, list[str]]]:
    """Every registered admin's add form, and its change form for a row where one exists:
    (url, field names)."""
    from django.contrib import admin
    from django.test import RequestFactory

    request = RequestFactory().get("/")
    request.user = user
    out = []
    for model, model_admin in admin.site._registry.items():
        info = model._meta.app_label, model._meta.model_name
        names = list(model_admin.get_form(request).base_fields)
        if model_admin.has_add_permission(request):
            out.append((reverse("admin:{}_{}_add".format(*info)), names))
        row = model.objects.first()
        if row is not None and model_admin.has_change_permission(request, row):
            out.append((reverse("admin:{}_{}_change".format(*info), args=[row.pk]), names))
    return out


@pytest.fixture
def admin_rows(db, alice):
    from arena.battles.prompts import prompt_create
    from tests.helpers import make_two_models

    make_two_models()
    prompt_create(text="Describe a lighthouse at dusk.")


@FUZZ
@given(values=st.lists(TEXT, min_size=1, max_size=8))
def test_every_admin_form_takes_any_text(admin_rows, staff, admin_client, values):
    forms = _admin_forms(staff)
    assert len(forms) >= 5, forms
    for url, names in forms:
        data = {name: encodable(values[i % len(values)]) for i, name in enumerate(names)}
        assert_no_server_error(admin_client.post(url, data))
