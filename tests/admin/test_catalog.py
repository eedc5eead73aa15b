"""The model admin: secrets kept out of backend settings, and the pool page."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from arena.admin.catalog import ModelEntryForm
from arena.catalog.models import ModelEntry
from tests.helpers import make_two_models, make_user, ready_battle


def model_form(
    backend_settings: object, backend: str = ModelEntry.Backend.OPENAI_COMPATIBLE
) -> ModelEntryForm:
    return ModelEntryForm(
        data={
            "public_name": "Granite Finch",
            "model_id": "gf-1",
            "backend": backend,
            "backend_settings": json.dumps(backend_settings),
            "supported_params": "[]",
            "active": "on",
        }
    )


@pytest.mark.parametrize(
    "backend_settings",
    [
        {"api_key": "sk-live-0123456789abcdef"},
        {"API_KEY": "sk-live-0123456789abcdef"},
        {"apiKey": "sk-live-0123456789abcdef"},
        {"token": "abc"},
        {"client_secret": "abc"},
        {"headers": {"Authorization": "Bearer abc"}},
        {"api_key_env": "sk-live-0123456789abcdef"},
    ],
)
def test_model_form_refuses_a_literal_secret_in_backend_settings(db, backend_settings):
    form = model_form(backend_settings)

    assert not form.is_valid()
    assert "backend_settings" in form.errors


@pytest.mark.parametrize(
    ("backend", "backend_settings"),
    [
        ("openai_compatible", {"base_url": "http://vllm:8000/v1", "api_key_env": "VLLM_API_KEY"}),
        ("openai_compatible", {"API_KEY_FILE": "/run/secrets/vllm"}),
        ("mock", {"ttft_ms": 0, "tokens_per_s": 30, "answer_tokens": 80}),
        ("anthropic", {"max_tokens": 512, "timeout_s": 30}),
    ],
)
def test_model_form_accepts_references_to_secrets_and_token_counts(db, backend, backend_settings):
    form = model_form(backend_settings, backend)

    assert form.is_valid(), form.errors


@pytest.mark.parametrize(
    ("backend", "backend_settings", "says"),
    [
        ("openai", {"timeout": 30}, "'timeout' is not a setting of this backend"),
        ("openai", {"timeout_s": "soon"}, "'timeout_s' must be a number above 0"),
        ("openai_compatible", {"base_url": "vllm:8000"}, "'base_url' must be a URL"),
        ("openai_compatible", {"headers": {"X-Trace": 5}}, "'headers' must be an object"),
        ("openai_compatible", {"include_usage": "yes"}, "must be true or false"),
        ("anthropic", {"max_tokens": 0}, "'max_tokens' must be a whole number"),
        ("mock", {"style": "loud"}, "'style' must be one of"),
        ("mock", {"max_tokens": 5}, "'max_tokens' is not a setting"),
        ("gemini", {"max_concurrency": True}, "'max_concurrency' must be a whole number"),
    ],
)
def test_model_form_checks_backend_settings_against_the_backends_schema(
    db, backend, backend_settings, says
):
    form = model_form(backend_settings, backend)

    assert not form.is_valid()
    assert says in " ".join(form.errors["backend_settings"])


def test_model_admin_shows_why_an_api_key_was_refused(admin_client):
    response = admin_client.post(
        reverse("admin:arena_modelentry_add"),
        {
            "public_name": "Granite Finch",
            "model_id": "gf-1",
            "backend": "openai_compatible",
            "backend_settings": '{"api_key": "sk-live-0123456789abcdef"}',
            "supported_params": "[]",
        },
    )

    assert response.status_code == 200
    assert "&#x27;api_key&#x27; looks like a secret" in response.content.decode()
    assert not ModelEntry.objects.exists()


@pytest.mark.usefixtures("generation")
def test_pool_page_shows_replica_health_throughput_and_vote_cost(client):
    import asyncio

    from arena.backends.registry import backend_for
    from arena.battles.selectors import replica_stats
    from arena.catalog.models import ModelEntry
    from arena.devtools.mock_server import MockServer
    from arena.records.models import Answer

    admin_user = make_user("root@example.com", is_staff=True, is_superuser=True)
    # Two measured answers on the first replica: 100 tokens in 2 s after a 500 ms prefill.
    make_two_models()
    battle = ready_battle(admin_user)
    model = ModelEntry.objects.create(
        public_name="Pooled",
        model_id="pooled-1",
        backend="openai_compatible",
        backend_settings={
            "replicas": [
                {"base_url": "http://127.0.0.1:9/v1"},
                {"base_url": "http://127.0.0.1:10/v1"},
            ],
            "queue": "gpu-a",
        },
    )
    for answer in Answer.objects.filter(turn__battle=battle):
        Answer.objects.filter(pk=answer.pk).update(
            model=model,
            replica="http://127.0.0.1:9/v1",
            output_tokens=100,
            ttft_ms=500.0,
            total_ms=2500.0,
        )
    first, second = replica_stats(model=model)
    assert first.answers == 2 and second.answers == 0
    assert first.tokens_per_s == pytest.approx(50.0)
    assert first.replica_seconds_per_vote == pytest.approx(2 * (100 / 50 + 0.5))
    assert first.replica_hours_per_day(3600) == pytest.approx(5.0)

    # Live state is what the pool last published.
    async def fail_twice() -> None:
        server = await MockServer(fail_with=500).start()
        backend = backend_for(
            "openai_compatible", {"replicas": [{"base_url": server.url}], "fail_threshold": 1}
        )
        from arena.backends.base import ChatRequest, Message
        from arena.generation.runner import discard, stream_answer

        await stream_answer(
            backend,
            ChatRequest("m", (Message("user", "x"),)),
            on_delta=discard,
            max_chars=100,
            timeout_s=5,
        )
        await server.stop()
        model.backend_settings["replicas"].append({"base_url": server.url})

    asyncio.run(fail_twice())
    model.save()
    client.force_login(admin_user)
    page = client.get("/admin/arena/modelentry/pools/?votes_per_day=3600").content.decode()
    assert "Pooled" in page and "gpu-a" in page and "http://127.0.0.1:9/v1" in page
    assert "5.00" in page  # replica-hours per day at 3600 votes
    assert "<strong>down</strong>" in page
    assert client.get("/admin/arena/modelentry/").status_code == 200


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ("[" * 3000 + "]" * 3000, "nested too deep"),
        # Parsed, refused, and shown again: the redacted display must not recurse to the end.
        ('{"a": ' + "[" * 900 + "]" * 900 + "}", "deep"),
        (json.dumps({"a": {"b": [[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]}}), "levels deep"),
        (json.dumps({"base_url": "http://x/\x00"}), "NUL"),
        (json.dumps({"replicas": 5}), "must be a list of objects"),
        (json.dumps({"replicas": [{"base_url": "vllm:8000"}]}), "replicas[0]"),
    ],
)
def test_hostile_backend_settings_are_a_form_error_not_a_crash(db, admin_client, raw, says):
    page = admin_client.post(
        reverse("admin:arena_modelentry_add"),
        {
            "public_name": "Granite Finch",
            "model_id": "gf-1",
            "backend": ModelEntry.Backend.OPENAI_COMPATIBLE,
            "backend_settings": raw,
            "supported_params": "[]",
            "active": "on",
        },
    )
    assert page.status_code == 200  # the form again, with its error
    assert says in page.content.decode()
    assert not ModelEntry.objects.filter(model_id="gf-1").exists()


def test_models_are_put_into_and_taken_out_of_battles_in_bulk(admin_client):
    a, b = make_two_models()
    url = reverse("admin:arena_modelentry_changelist")
    admin_client.post(url, {"action": "deactivate_models", "_selected_action": [a.pk, b.pk]})
    assert not ModelEntry.objects.filter(active=True).exists()
    page = admin_client.post(
        url, {"action": "activate_models", "_selected_action": [a.pk]}, follow=True
    )
    assert "1 model(s) activated." in page.content.decode()
    assert list(ModelEntry.objects.filter(active=True)) == [a]
    index = admin_client.get(reverse("admin:index")).content.decode()
    assert index.count(">Accounts<") <= 1 and "Raters and staff" in index


def test_the_model_form_lists_each_backends_settings_and_the_mocks_misbehaviours(admin_client):
    page = admin_client.get(reverse("admin:arena_modelentry_add")).content.decode()
    assert "mock: " in page and "answer_tokens" in page and "prefix" in page
    assert "error_midstream" in page and "first_token_timeout_s" in page


LITERAL_KEYS = ("sk-live-AAAA0123456789abcdef", "sk-live-BBBB0123456789abcdef", "hunter2-CCCC")


def keyed_model() -> ModelEntry:
    """A row saved before keys were refused (or written around the form)."""
    a, b, c = LITERAL_KEYS
    return ModelEntry.objects.create(
        public_name="Leaky Finch",
        model_id="lf-1",
        backend=ModelEntry.Backend.OPENAI_COMPATIBLE,
        backend_settings={
            "base_url": f"https://user:{a}@gpu-1.example.com/v1?key={b}&api-version=2024",
            "headers": {"X-Auth": c, "X-Trace": a},
            "replicas": [{"base_url": f"http://u:{c}@gpu-2.example.com/v1?token={b}"}],
        },
    )


def test_the_model_form_and_list_never_show_a_key_a_row_holds(admin_client):
    model = keyed_model()
    page = admin_client.get(reverse("admin:arena_modelentry_change", args=[model.pk]))
    listing = admin_client.get(reverse("admin:arena_modelentry_changelist"))
    for shown in (page, listing):
        assert shown.status_code == 200
        html = shown.content.decode()
        assert not any(key in html for key in LITERAL_KEYS)
    html = page.content.decode()
    assert "gpu-1.example.com/v1?key=[redacted]" in html  # the rest of the URL still shown


def test_staff_who_may_only_view_models_see_the_settings_redacted(db):
    model = keyed_model()
    viewer = make_user("viewer@example.com", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_modelentry"))
    client = Client()
    client.force_login(viewer)
    page = client.get(reverse("admin:arena_modelentry_change", args=[model.pk]))
    assert page.status_code == 200  # was a KeyError: the read-only form has no settings field
    html = page.content.decode()
    assert not any(key in html for key in LITERAL_KEYS)
    assert "gpu-1.example.com/v1?key=[redacted]" in html


def test_saving_a_redacted_row_unchanged_is_refused_until_the_key_is_moved(admin_client):
    model = keyed_model()
    page = admin_client.get(reverse("admin:arena_modelentry_change", args=[model.pk]))
    form = page.context["adminform"].form
    shown = form["backend_settings"].value()  # the JSON text the page holds
    assert not any(key in shown for key in LITERAL_KEYS)
    data = {
        "public_name": model.public_name,
        "model_id": model.model_id,
        "backend": model.backend,
        "backend_settings": shown,
        "supported_params": "[]",
        "active": "on",
    }
    for inline in page.context["inline_admin_formsets"]:
        prefix = inline.formset.prefix
        data.update({f"{prefix}-TOTAL_FORMS": "0", f"{prefix}-INITIAL_FORMS": "0"})
    response = admin_client.post(reverse("admin:arena_modelentry_change", args=[model.pk]), data)
    assert response.status_code == 200  # the form again, with why
    html = response.content.decode()
    assert "api_key_env" in html and not any(key in html for key in LITERAL_KEYS)
    model.refresh_from_db()
    assert model.backend_settings["headers"]["X-Auth"] == LITERAL_KEYS[2]  # not overwritten


@pytest.mark.parametrize(
    ("backend_settings", "says"),
    [
        ({"api_key_env": "DATABASE_URL"}, "ARENA_SECRET_ENV_PREFIXES"),
        ({"api_key_file": "/work/var/secret_key"}, "ARENA_SECRET_DIRS"),
        ({"base_url": "http://169.254.169.254/latest"}, "ARENA_BACKEND_ALLOW_HOSTS"),
        ({"base_url": "http://10.0.0.8:8000/v1"}, "ARENA_BACKEND_ALLOW_HOSTS"),
        ({"headers": {"X-Auth": "sk-live-0123456789abcdef"}}, "api_key_env"),
        ({"base_url": "https://u:p@gpu-1.example.com/v1"}, "api_key_env"),
        ({"replicas": [{"base_url": "https://gpu-1.example.com/v1"}],
          "health": {"path": "http://elsewhere.example.com/x", "method": "DELETE"}},
         "must be a path on the replica"),
    ],
)  # fmt: skip
def test_the_model_form_names_the_rule_a_key_source_or_address_breaks(db, backend_settings, says):
    form = model_form(backend_settings)
    assert not form.is_valid()
    assert says in " ".join(form.errors["backend_settings"])


def test_the_pools_page_never_shows_a_key_a_replica_url_holds(admin_client):
    keyed_model()
    page = admin_client.get("/admin/arena/modelentry/pools/").content.decode()
    assert "Leaky Finch" in page and "http://gpu-2.example.com/v1?token=[redacted]" in page
    assert not any(key in page for key in LITERAL_KEYS)
