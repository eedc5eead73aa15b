"""OpenRouter models take their shared parameters from OpenRouter's models catalog, read over
real HTTP (here a recording of GET /api/v1/models served by the fixture server), and cached."""

from __future__ import annotations

from io import StringIO

import pytest
from channels.db import database_sync_to_async as sync_to_async
from django.core.cache import cache
from django.core.management import call_command
from django.core.management.base import CommandError

from arena.catalog.models import ModelEntry
from arena.devtools.fixture_server import Canned, FixtureServer


@pytest.fixture
async def catalog():
    server = await FixtureServer(response=Canned.recorded("openrouter/models.json")).start()
    cache.clear()
    yield server
    await server.stop()


def routed(server: FixtureServer, name: str, model_id: str) -> ModelEntry:
    return ModelEntry.objects.create(
        public_name=name, model_id=model_id, backend=ModelEntry.Backend.OPENAI_COMPATIBLE,
        backend_settings={"base_url": f"{server.url}/api/v1"},
        supported_params=["temperature", "top_p", "max_tokens"],
    )  # fmt: skip


def sync(server: FixtureServer, *args: str) -> str:
    out = StringIO()
    call_command("sync_openrouter", "--url", f"{server.url}/api/v1/models", *args, stdout=out)
    return out.getvalue()


async def test_the_catalog_sets_what_each_openrouter_model_supports(catalog, transactional_db):
    await sync_to_async(routed)(catalog, "Sonnet", "anthropic/claude-3.5-sonnet")
    await sync_to_async(routed)(catalog, "O3 Mini", "openai/o3-mini")
    await sync_to_async(routed)(catalog, "Gone", "nobody/retired-model")
    elsewhere = await sync_to_async(ModelEntry.objects.create)(
        public_name="Local", model_id="openai/o3-mini", backend="openai_compatible",
        backend_settings={"base_url": "http://10.0.0.9:8000/v1"}, supported_params=["top_p"],
    )  # fmt: skip
    out = await sync_to_async(sync)(catalog)
    assert catalog.last.method == "GET" and catalog.last.path == "/api/v1/models"
    assert out.splitlines() == [  # by name
        "Gone: 'nobody/retired-model' is not in the catalog; unchanged.",
        "O3 Mini: supports max_tokens.",  # a reasoning model: no temperature, no top_p
        "Sonnet: supports temperature, top_p, max_tokens.",
    ]
    found = await sync_to_async(
        lambda: dict(ModelEntry.objects.values_list("public_name", "supported_params"))
    )()
    assert found["O3 Mini"] == ["max_tokens"] and found["Gone"] == [
        "temperature", "top_p", "max_tokens"
    ]  # fmt: skip
    assert found["Local"] == ["top_p"]  # not served by OpenRouter: not touched
    assert elsewhere.pk

    # Cached: read again only when asked.
    await sync_to_async(sync)(catalog)
    assert len(catalog.requests) == 1
    await sync_to_async(sync)(catalog, "--fresh")
    assert len(catalog.requests) == 2


async def test_a_catalog_that_cannot_be_read_changes_nothing_and_says_why(
    catalog, transactional_db
):
    catalog.response = Canned.json(503, {"error": {"message": "down"}})
    await sync_to_async(routed)(catalog, "Sonnet", "anthropic/claude-3.5-sonnet")
    with pytest.raises(CommandError, match="OpenRouter's catalog answered HTTP 503"):
        await sync_to_async(sync)(catalog)
    catalog.response = Canned.json(200, {"models": []})
    with pytest.raises(CommandError, match="not in its documented form"):
        await sync_to_async(sync)(catalog, "--fresh")


async def test_an_admin_action_reads_the_catalog_for_the_selected_models(
    catalog, transactional_db, monkeypatch
):
    from django.test import Client
    from django.urls import reverse

    from tests.helpers import make_user

    monkeypatch.setattr("arena.backends.openrouter.CATALOG_URL", f"{catalog.url}/api/v1/models")
    model = await sync_to_async(routed)(catalog, "O3 Mini", "openai/o3-mini")

    def act() -> str:
        client = Client()
        client.force_login(make_user("admin@example.com", is_staff=True, is_superuser=True))
        page = client.post(
            reverse("admin:arena_modelentry_changelist"),
            {"action": "sync_openrouter", "_selected_action": [model.pk]},
            follow=True,
        )
        return page.content.decode()

    assert "O3 Mini: supports max_tokens." in await sync_to_async(act)()
    await sync_to_async(model.refresh_from_db)()
    assert model.supported_params == ["max_tokens"]
