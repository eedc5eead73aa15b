"""Model variants and their publication: retirement kept on record, the preview limit, and a
model with counted votes that cannot be deleted."""

from __future__ import annotations

import json

import pytest
from django.db.models import ProtectedError
from django.urls import reverse

from arena.admin.catalog import ModelEntryForm
from arena.catalog.models import ModelEntry, ModelRetirement
from arena.catalog.services import models_set_active
from tests.helpers import calm_vote, make_model, make_two_models, make_user


def preview_form(name: str, organisation: str = "Example AI") -> ModelEntryForm:
    return ModelEntryForm(
        data={
            "public_name": name,
            "organisation": organisation,
            "line": "Quartz",
            "preview": "on",
            "model_id": name.lower().replace(" ", "-"),
            "backend": ModelEntry.Backend.MOCK,
            "backend_settings": json.dumps({}),
            "supported_params": "[]",
            "active": "on",
        }
    )


def test_retiring_a_model_records_who_and_when_and_putting_it_back_clears_the_date(admin_client):
    a, b = make_two_models()
    url = reverse("admin:arena_modelentry_changelist")

    page = admin_client.post(
        url, {"action": "deactivate_models", "_selected_action": [a.pk]}, follow=True
    )

    assert "1 model(s) retired." in page.content.decode()
    a.refresh_from_db()
    assert not a.active and a.retired_at is not None
    (record,) = ModelRetirement.objects.filter(model=a)
    assert record.action == "retire" and record.by.email == "admin@example.com"
    assert record.at == a.retired_at
    admin_client.post(url, {"action": "activate_models", "_selected_action": [a.pk, b.pk]})
    a.refresh_from_db()
    assert a.active and a.retired_at is None
    assert list(ModelRetirement.objects.filter(model=a).values_list("action", flat=True)) == [
        "reinstate",
        "retire",
    ]
    assert not ModelRetirement.objects.filter(model=b).exists()  # b never changed


def test_unticking_active_in_the_model_form_retires_it_through_the_record(admin_client):
    a, _ = make_two_models()
    change = reverse("admin:arena_modelentry_change", args=[a.pk])
    form = admin_client.get(change).context["adminform"].form
    data = {k: v for k, v in form.initial.items() if k in form.fields and v is not None}
    data.update(
        backend_settings=json.dumps(a.backend_settings),
        supported_params=json.dumps(a.supported_params),
        **{"prices-TOTAL_FORMS": 0, "prices-INITIAL_FORMS": 0},
    )
    data.pop("active")
    data.pop("preview", None)

    reply = admin_client.post(change, data)

    assert reply.status_code == 302, reply.content.decode()[:2000]
    a.refresh_from_db()
    assert not a.active and a.retired_at is not None
    assert ModelRetirement.objects.get(model=a).by.email == "admin@example.com"
    page = admin_client.get(change).content.decode()
    assert "Retirement record" in page and "Retired 20" in page and "by admin@example.com" in page


def test_a_retirement_record_is_append_only(db):
    a, _ = make_two_models()
    models_set_active(model_ids=[a.pk], active=False)
    record = ModelRetirement.objects.get(model=a)
    record.action = "reinstate"
    with pytest.raises(Exception, match="append-only"):
        record.save()


def test_the_limit_policy_refuses_the_preview_past_the_limit_and_names_it(db, settings):
    settings.ARENA = {**settings.ARENA, "MODEL_PUBLICATION": "limit", "MODEL_PREVIEW_LIMIT": 2}
    for n in (1, 2):
        form = preview_form(f"Quartz Preview {n}")
        assert form.is_valid(), form.errors
        form.save()
    other = preview_form("Basalt Preview", organisation="Other Lab")
    assert other.is_valid(), other.errors

    third = preview_form("Quartz Preview 3")

    assert not third.is_valid()
    (message,) = third.errors["preview"]
    assert "at most 2 preview variants per organisation in 90 days" in message
    assert "Example AI has 2" in message


def test_publish_all_lets_every_preview_be_tested(db, settings):
    settings.ARENA = {**settings.ARENA, "MODEL_PUBLICATION": "publish_all"}
    for n in range(1, 6):
        form = preview_form(f"Quartz Preview {n}")
        assert form.is_valid(), form.errors
        form.save()
    assert ModelEntry.objects.filter(preview=True).count() == 5


def test_a_preview_under_the_limit_can_still_be_edited(db, settings):
    settings.ARENA = {**settings.ARENA, "MODEL_PUBLICATION": "limit", "MODEL_PREVIEW_LIMIT": 1}
    form = preview_form("Quartz Preview 1")
    assert form.is_valid()
    model = form.save()
    again = ModelEntryForm(data={**preview_form("Quartz Preview 1").data}, instance=model)
    assert again.is_valid(), again.errors


def test_a_model_with_counted_votes_cannot_be_deleted_only_retired(generation):
    make_two_models()
    rater = make_user("rater@example.com")
    vote = calm_vote(rater, "Explain what a hash map is, in two sentences.")
    model = vote.model_a

    with pytest.raises(ProtectedError):
        model.delete()

    models_set_active(model_ids=[model.pk], active=False)
    model.refresh_from_db()
    assert not model.active and model.retired_at is not None


def test_a_model_nobody_voted_on_can_still_be_deleted(db):
    lone = make_model("Lone Kite", "lk-1")
    lone.delete()
    assert not ModelEntry.objects.filter(public_name="Lone Kite").exists()
