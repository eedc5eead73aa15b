from __future__ import annotations

from django.test import Client
from django.urls import reverse

from arena.battles.simulation import votes_simulate


def test_the_audit_page_is_for_staff_only(alice):
    client = Client()
    client.force_login(alice)

    response = client.get(reverse("datasets-audit"))

    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_staff_see_the_share_and_can_include_simulated_votes(
    admin_client, make_vote, alice, models_named
):
    make_vote(alice, "a", answers_a=("a much longer answer than the other",), answers_b=("no",))
    votes_simulate(n=40, strengths=dict.fromkeys(models_named, 0.0), once=False)

    human = admin_client.get(reverse("datasets-audit")).content.decode()
    both = admin_client.get(reverse("datasets-audit") + "?simulated=1").content.decode()

    assert "<strong>100%</strong> of pairs chose the longer answer (1 of 1 pairs" in human
    assert "Include the demo's simulated votes" in human
    assert "Simulated votes included." in both and "No snapshot has a style-controlled fit" in both
