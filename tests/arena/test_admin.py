from __future__ import annotations

import json
import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from accounts.models import User
from arena.admin.catalog import ModelEntryForm
from arena.battles.models import Answer, Prompt, Vote
from arena.battles.prompts import prompt_create
from arena.battles.services import battle_start, turn_mark_shown, vote_cast
from arena.catalog.models import ModelEntry
from tests.conftest import make_user

IMPORT_URL = "admin:arena_prompt_import"


def upload(client: Client, name: str, data: bytes):
    return client.post(reverse(IMPORT_URL), {"file": SimpleUploadedFile(name, data)})


def cast_vote(rater: User, choice: str) -> Vote:
    battle = battle_start(rater=rater, text="Describe a sunrise.")
    turn = battle.turns.get()
    deadline = time.monotonic() + 30
    while turn.answers.exclude(
        status__in=[Answer.Status.OK, Answer.Status.PARTIAL, Answer.Status.ERROR]
    ).exists():
        assert time.monotonic() < deadline, "answers did not finish"
        time.sleep(0.02)
    turn_mark_shown(turn_id=turn.pk)
    return vote_cast(battle_id=battle.id, rater=rater, choice=choice)


# Prompts ------------------------------------------------------------------------------------


def test_prompt_changelist_searches_filters_and_offers_import(admin_client):
    prompt_create(text="Write a haiku about autumn.", category="creative", language="en")
    prompt_create(text="Fix this off-by-one bug.", category="coding", language="en")
    url = reverse("admin:arena_prompt_changelist")

    listing = admin_client.get(url)
    found = admin_client.get(url, {"q": "haiku"})
    filtered = admin_client.get(url, {"category": "coding", "active__exact": "1"})

    assert listing.status_code == 200
    assert reverse(IMPORT_URL).encode() in listing.content
    assert b"Import prompts" in listing.content
    assert b"Write a haiku" in found.content and b"off-by-one" not in found.content
    assert b"off-by-one" in filtered.content and b"Write a haiku" not in filtered.content


def test_import_adds_jsonl_rows_and_reports_rejected_lines(admin_client):
    data = (
        b'{"text": "Name a prime above 100.", "category": "math"}\n'
        b"{not json}\n"
        b'{"category": "math"}\n'
        b'{"text": "What is a monad?", "language": "en"}\n'
    )

    response = upload(admin_client, "prompts.jsonl", data)

    assert response.status_code == 200
    page = response.content.decode()
    assert "2 prompt(s) added, 0 already present, 2 rejected." in page
    assert "<td>2</td><td>not valid JSON" in page
    assert "<td>3</td><td>&#x27;text&#x27; is missing or empty</td>" in page
    assert set(Prompt.objects.values_list("text", flat=True)) == {
        "Name a prime above 100.",
        "What is a monad?",
    }


def test_import_accepts_csv(admin_client):
    data = "text,category,language\nTranslate «merci» to English.,translation,fr\n".encode()

    response = upload(admin_client, "prompts.csv", data)

    assert "1 prompt(s) added, 0 already present, 0 rejected." in response.content.decode()
    prompt = Prompt.objects.get()
    assert (prompt.text, prompt.category, prompt.language) == (
        "Translate «merci» to English.",
        "translation",
        "fr",
    )
    assert prompt.source == Prompt.Source.CURATED


def test_import_of_a_non_utf8_file_is_refused_and_adds_nothing(admin_client):
    data = '{"text": "Café au lait?"}\n'.encode("latin-1")

    response = upload(admin_client, "prompts.jsonl", data)

    assert response.status_code == 200
    assert "not UTF-8 text" in response.content.decode()
    assert "Nothing was imported" in response.content.decode()
    assert not Prompt.objects.exists()


def test_import_of_a_file_over_5_mb_is_refused_and_adds_nothing(admin_client):
    line = json.dumps({"text": "x" * 1000}).encode() + b"\n"
    data = line * (5 * 1024 * 1024 // len(line) + 1)

    response = upload(admin_client, "big.jsonl", data)

    assert "the limit is 5 MB" in response.content.decode()
    assert not Prompt.objects.exists()


def test_import_without_a_file_asks_for_one(admin_client):
    response = admin_client.post(reverse(IMPORT_URL), {})

    assert response.status_code == 200
    assert "This field is required." in response.content.decode()
    assert not Prompt.objects.exists()


def test_import_refuses_other_file_types(admin_client):
    response = upload(admin_client, "prompts.xlsx", b"text\nHello\n")

    assert "File extension “xlsx” is not allowed" in response.content.decode()
    assert not Prompt.objects.exists()


def test_import_needs_a_csrf_token(staff):
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff)

    response = upload(client, "prompts.jsonl", b'{"text": "Hello there."}\n')

    assert response.status_code == 403
    assert not Prompt.objects.exists()


def test_import_is_for_staff_only(alice):
    client = Client()
    client.force_login(alice)

    response = upload(client, "prompts.jsonl", b'{"text": "Hello there."}\n')

    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))
    assert not Prompt.objects.exists()


def test_prompt_added_twice_in_the_admin_is_a_form_error(admin_client):
    prompt_create(text="Plan a three-day trip to Lisbon.")

    response = admin_client.post(
        reverse("admin:arena_prompt_add"),
        {"text": "plan a three-day  trip to lisbon.", "source": "curated", "active": "on"},
    )

    assert response.status_code == 200
    assert "already exists" in response.content.decode()
    assert Prompt.objects.count() == 1


def test_deactivate_action_withdraws_selected_prompts(admin_client):
    prompt, _ = prompt_create(text="Explain TCP slow start.")

    admin_client.post(
        reverse("admin:arena_prompt_changelist"),
        {"action": "withdraw_prompts", "_selected_action": [prompt.pk]},
    )

    prompt.refresh_from_db()
    assert prompt.active is False


# Models -------------------------------------------------------------------------------------


def model_form(backend_settings: object) -> ModelEntryForm:
    return ModelEntryForm(
        data={
            "public_name": "Granite Finch",
            "model_id": "gf-1",
            "backend": ModelEntry.Backend.OPENAI_COMPATIBLE,
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
    "backend_settings",
    [
        {"base_url": "http://vllm:8000/v1", "api_key_env": "VLLM_API_KEY"},
        {"API_KEY_FILE": "/run/secrets/vllm"},
        {"ttft_ms": 0, "tokens_per_s": 30, "answer_tokens": 80, "max_tokens": 512},
    ],
)
def test_model_form_accepts_references_to_secrets_and_token_counts(db, backend_settings):
    form = model_form(backend_settings)

    assert form.is_valid(), form.errors


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


# Battles and votes --------------------------------------------------------------------------


@pytest.fixture
def vote(generation, alice, two_models) -> Vote:
    return cast_vote(alice, "a")


def test_battle_admin_shows_turns_read_only(staff, vote):
    client = Client()
    client.force_login(staff)
    url = reverse("admin:arena_battle_change", args=[vote.battle_id])

    page = client.get(url)
    post = client.post(url, {"status": "void"})

    assert page.status_code == 200
    assert "Describe a sunrise." in page.content.decode()
    assert b'name="_save"' not in page.content
    assert post.status_code == 403
    assert client.get(reverse("admin:arena_battle_add")).status_code == 403


def test_vote_admin_is_read_only(staff, vote):
    client = Client()
    client.force_login(staff)
    change = reverse("admin:arena_vote_change", args=[vote.pk])
    delete = reverse("admin:arena_vote_delete", args=[vote.pk])

    page = client.get(change)
    edit = client.post(change, {"choice": "b", "decision_ms": "1"})
    removal = client.post(delete, {"post": "yes"})
    add = client.get(reverse("admin:arena_vote_add"))

    assert page.status_code == 200
    assert b'name="_save"' not in page.content
    assert (edit.status_code, removal.status_code, add.status_code) == (403, 403, 403)
    assert Vote.objects.get(pk=vote.pk).choice == "a"


def test_vote_changelist_offers_no_delete_action(staff, vote):
    client = Client()
    client.force_login(staff)
    url = reverse("admin:arena_vote_changelist")

    listing = client.get(url, {"choice__exact": "a"})
    bulk = client.post(
        url, {"action": "delete_selected", "_selected_action": [vote.pk]}, follow=True
    )

    assert listing.status_code == 200
    assert b"delete_selected" not in listing.content
    assert str(vote.decision_ms).encode() in listing.content
    assert Vote.objects.filter(pk=vote.pk).exists()
    # The list has other actions now, so Django refuses the unknown one by name.
    assert bulk.status_code == 200 and "No action selected." in bulk.content.decode()


def test_staff_without_permissions_can_read_but_not_change_votes(vote):
    reader = make_user("reader@example.com", is_staff=True)
    client = Client()
    client.force_login(reader)

    assert client.get(reverse("admin:arena_vote_changelist")).status_code == 200
    assert client.get(reverse("admin:arena_vote_change", args=[vote.pk])).status_code == 200
    assert client.post(reverse("admin:arena_vote_change", args=[vote.pk]), {}).status_code == 403


@pytest.mark.usefixtures("generation")
def test_pool_page_shows_replica_health_throughput_and_vote_cost(client):
    import asyncio

    from arena.backends.registry import backend_for
    from arena.battles.models import Answer
    from arena.catalog.models import ModelEntry
    from arena.devtools.mock_server import MockServer
    from arena.generation.selectors import replica_stats
    from tests.conftest import make_user, ready_battle

    admin_user = make_user("root@example.com", is_staff=True, is_superuser=True)
    # Two measured answers on the first replica: 100 tokens in 2 s after a 500 ms prefill.
    from tests.conftest import make_two_models

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
        from arena.generation.runner import stream_answer

        async def ignore(_: str) -> None:
            return None

        await stream_answer(
            backend,
            ChatRequest("m", (Message("user", "x"),)),
            on_delta=ignore,
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
