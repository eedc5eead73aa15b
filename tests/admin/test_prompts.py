"""The prompt admin: search and filters, the import page, and duplicates refused."""

from __future__ import annotations

import json

from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from arena.battles.prompts import prompt_create
from arena.records.models import Prompt

IMPORT_URL = "admin:arena_prompt_import"


def upload(client: Client, name: str, data: bytes):
    return client.post(reverse(IMPORT_URL), {"file": SimpleUploadedFile(name, data)})


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


def test_import_with_rejected_lines_reports_each_and_adds_nothing(admin_client):
    data = (
        b'{"text": "Name a prime above 100.", "category": "math"}\n'
        b"{not json}\n"
        b'{"category": "math"}\n'
        b'{"text": "What is a monad?", "language": "en"}\n'
    )

    response = upload(admin_client, "prompts.jsonl", data)

    assert response.status_code == 200
    page = response.content.decode()
    assert "Nothing was imported: 2 row(s) rejected." in page
    assert "<td>2</td><td>not valid JSON" in page
    assert "<td>3</td><td>&#x27;text&#x27; is missing or empty</td>" in page
    assert not Prompt.objects.exists()


def test_import_accepts_csv(admin_client):
    data = "text,category,language\nTranslate «merci» to English.,translation,fr\n".encode()

    response = upload(admin_client, "prompts.csv", data)

    assert "1 prompt(s) added, 0 already present." in response.content.decode()
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
