"""The pools page takes the named permission arena.view_pools, not the staff flag."""

from __future__ import annotations

from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from arena.catalog.models import ModelEntry
from tests.helpers import make_model, make_user

POOLS = "/admin/arena/modelentry/pools/"


def signed_in(email: str, *codenames: str) -> Client:
    user = make_user(email, is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(content_type__app_label="arena", codename__in=codenames)
    )
    client = Client()
    client.force_login(user)
    return client


def pooled_model() -> None:
    model = make_model("Pooled", "pooled-1")
    model.backend = ModelEntry.Backend.OPENAI_COMPATIBLE
    model.backend_settings = {"replicas": [{"base_url": "http://gpu-a.internal:8000/v1"}]}
    model.save()


def test_staff_without_view_pools_get_403_and_no_replicas(db):
    pooled_model()
    # Every permission on the models themselves, and the other named ones: not this page.
    client = signed_in("staff@example.com", "view_modelentry", "change_modelentry",
                       "run_evals", "view_calibration", "use_compare")  # fmt: skip
    assert reverse("admin:arena_modelentry_pools") == POOLS
    response = client.get(POOLS)
    assert response.status_code == 403
    assert "gpu-a.internal" not in response.content.decode()
    # The model list they may see does not offer the page.
    listing = client.get(reverse("admin:arena_modelentry_changelist")).content.decode()
    assert "Pooled" in listing and POOLS not in listing


def test_staff_with_view_pools_see_the_page_and_its_link(db):
    pooled_model()
    client = signed_in("operator@example.com", "view_pools", "view_modelentry")
    page = client.get(POOLS)
    assert page.status_code == 200 and "gpu-a.internal" in page.content.decode()
    assert POOLS in client.get(reverse("admin:arena_modelentry_changelist")).content.decode()
