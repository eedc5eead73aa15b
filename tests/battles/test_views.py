"""HTTP pages: who may see what, and that nothing on the battle page names a model."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from accounts.models import User
from arena.battles.prompts import prompt_create
from arena.battles.services import vote_cast
from arena.catalog.models import ModelEntry
from arena.devtools.demo import DEMO_JUDGE, DEMO_MODELS
from arena.records.models import Prompt
from tests.helpers import PASSWORD, assert_no_identity, ready_battle


def test_arena_requires_sign_in(client, db):
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_battle_page_is_blind_and_has_no_inline_script(client, alice, two_models):
    client.force_login(alice)
    response = client.get("/")
    assert response.status_code == 200
    html = response.content.decode().lower()
    assert_no_identity(html, two_models)
    csp = response["Content-Security-Policy"]
    assert (
        "script-src 'self'" in csp
        and "unsafe-inline" not in csp.split("script-src")[1].split(";")[0]
    )
    # Every script is an external file from our origin.
    assert "<script>" not in html and "<script src=" in html


def test_random_prompt_draws_an_active_curated_prompt(client, alice):
    client.force_login(alice)
    assert client.get("/api/prompts/random/").status_code == 404
    prompt, _ = prompt_create(text="Curated one", category="writing")
    Prompt.objects.create(text="Inactive", active=False)
    Prompt.objects.create(text="Typed by someone", source=Prompt.Source.RATER)
    for _ in range(5):
        body = client.get("/api/prompts/random/").json()
        assert body == {"id": prompt.pk, "text": "Curated one", "category": "writing"}


def test_random_prompt_requires_sign_in(client, db):
    assert client.get("/api/prompts/random/").status_code == 302


def test_signup_with_email_and_password_then_arena_opens(client, db):
    response = client.post(
        "/accounts/signup/",
        {"email": "dana@example.com", "password1": PASSWORD, "password2": PASSWORD},
    )
    assert response.status_code == 302
    user = User.objects.get(email="dana@example.com")
    assert user.rater_pool == User.Pool.CROWD and not user.is_staff
    assert client.get("/").status_code == 200


def test_signup_with_bad_input_explains_and_creates_nobody(client, db):
    response = client.post(
        "/accounts/signup/", {"email": "not-an-email", "password1": "x", "password2": "y"}
    )
    assert response.status_code == 200
    assert not User.objects.exists()
    assert b"email" in response.content.lower()


def test_mutations_need_csrf(db, alice):
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(alice)
    assert strict.post("/accounts/logout/").status_code == 403


@pytest.mark.usefixtures("generation")
def test_leaderboard_is_public_and_shows_raw_counts(client, alice, two_models):
    for choice in ("a", "tie", "both_bad"):
        battle = ready_battle(alice)
        vote_cast(battle_id=battle.pk, rater=alice, choice=choice)
    response = client.get("/leaderboard/")
    assert response.status_code == 200
    assert b"Not yet a ranking" in response.content
    rows = {r.name: r for r in response.context["rows"]}
    for model in two_models:
        row = rows[model.public_name]
        assert row.battles == 3 and row.ties == 1 and row.both_bad == 1
    assert sum(r.wins for r in rows.values()) == 1
    assert sum(r.losses for r in rows.values()) == 1


def test_demo_seed_is_idempotent(transactional_db, settings, monkeypatch):
    settings.RANKING = {**settings.RANKING, "rounds": 50, "style_rounds": 5}  # not what is tested
    # Nor how fast the demo's mock models type (its evaluation run waits for every answer), on
    # how many battles its judge is calibrated (each verdict is a few writes), nor how many
    # votes it simulates (five rows each): that it adds them once is.
    instant = {"ttft_ms": 0, "tokens_per_s": 0}
    fast = [(*model[:3], {**model[3], **instant}) for model in DEMO_MODELS]
    monkeypatch.setattr("arena.devtools.demo.DEMO_MODELS", fast)
    monkeypatch.setattr("arena.devtools.demo.DEMO_CALIBRATION_BATTLES", 20)
    monkeypatch.setattr("arena.devtools.demo.SIMULATED_VOTES", 400)
    call_command("demo", no_serve=True)
    call_command("demo", no_serve=True)
    assert ModelEntry.objects.filter(active=True).count() == len(DEMO_MODELS) >= 4
    judge = ModelEntry.objects.get(active=False)  # compare mode's judge, never in a battle
    assert judge.public_name == DEMO_JUDGE
    assert Prompt.objects.filter(source=Prompt.Source.CURATED).count() >= 30
    assert set(Prompt.objects.values_list("language", flat=True)) >= {"en", "es"}
    assert User.objects.filter(is_superuser=True).count() == 1
    assert User.objects.count() == 3  # rater, admin and the inactive author of simulated votes
    from arena.devtools.demo import SIMULATED_VOTES
    from arena.records.models import Vote
    from ranking.models import LeaderboardSnapshot

    assert Vote.objects.filter(simulated=True).count() == SIMULATED_VOTES
    assert not Vote.objects.filter(simulated=False).exists()
    snapshot = LeaderboardSnapshot.objects.latest()
    assert snapshot.includes_simulated and snapshot.votes_used == SIMULATED_VOTES


def test_demo_refuses_a_port_in_use_before_seeding_anything(db):
    import socket

    from django.core.management.base import CommandError

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(CommandError, match=f"127.0.0.1:{port} is in use"):
            call_command("demo", port=port)
    assert not User.objects.exists() and not ModelEntry.objects.exists()
