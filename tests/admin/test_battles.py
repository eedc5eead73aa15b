"""Battles and votes in the admin: read-only for everyone, with no way to delete a vote."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from arena.battles.services import battle_start, turn_mark_shown, vote_cast
from arena.records.models import Vote
from tests.helpers import make_user, wait_for_answers


@pytest.fixture
def vote(generation, alice, two_models) -> Vote:
    """A vote on a battle whose answers were generated, on committed data."""
    battle = battle_start(rater=alice, text="Describe a sunrise.")
    wait_for_answers(battle.pk)
    turn_mark_shown(turn_id=battle.turns.get().pk)
    return vote_cast(battle_id=battle.id, rater=alice, choice="a")


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
