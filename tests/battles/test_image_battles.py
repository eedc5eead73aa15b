"""Battles whose first turn carries images: who may meet, what both models are sent, what the
vote log keeps."""

from __future__ import annotations

import pytest

from arena.backends.mock import IMAGES_REFUSED
from arena.battles.answers import answer_conversation
from arena.battles.services import battle_follow_up, battle_start, turn_mark_shown, vote_cast
from arena.core.errors import ServiceError
from arena.images.services import image_store
from arena.records.models import Answer, Battle, Vote
from tests.helpers import make_model, wait_for_answers
from tests.images.pictures import picture

pytestmark = pytest.mark.django_db
needs_generation = pytest.mark.usefixtures("generation")


@pytest.fixture
def seeing(db):
    """Two models that read images and one that does not."""
    return [
        make_model("Eye One", "eye-1", vision=True, takes_images=True),
        make_model("Eye Two", "eye-2", vision=True, takes_images=True),
        make_model("Text Only", "text-3"),
    ]


def _images(user, n: int = 1, *, green: int = 9) -> list[str]:
    return [
        image_store(user=user, data=picture("PNG", colour=(i, green, 9))).sha256 for i in range(n)
    ]


def _shown(rater, text: str) -> tuple[Battle, list[str]]:
    """An image battle whose first turn has been generated and shown: it and its images."""
    shas = _images(rater)
    battle = battle_start(rater=rater, text=text, images=shas)
    wait_for_answers(battle.pk)
    turn_mark_shown(turn_id=battle.turns.get(index=0).pk)
    return battle, shas


def test_an_image_battle_meets_only_models_that_read_images(alice, seeing):
    text_only = seeing[2]
    for _ in range(12):
        battle = battle_start(rater=alice, text="What is in this picture?", images=_images(alice))
        assert text_only.pk not in (battle.model_a_id, battle.model_b_id)
    plain = {
        m
        for _ in range(40)
        for m in (lambda b: (b.model_a_id, b.model_b_id))(battle_start(rater=alice, text="Hi"))
    }
    assert text_only.pk in plain  # a text battle still draws from every model


def test_fewer_than_two_models_that_read_images_is_a_clear_refusal(alice, two_models):
    with pytest.raises(ServiceError) as refused:
        battle_start(rater=alice, text="What is this?", images=_images(alice))
    assert refused.value.code == "no_vision_models"
    assert "Remove the images" in refused.value.message
    assert not Battle.objects.exists()


def test_a_start_takes_only_the_raters_own_images_and_at_most_the_limit(alice, bob, seeing):
    theirs = _images(bob, green=200)
    for images, code in ((theirs, "not_found"), (_images(alice, 5), "images_too_many")):
        with pytest.raises(ServiceError) as refused:
            battle_start(rater=alice, text="Look", images=images)
        assert refused.value.code == code
    assert not Battle.objects.exists()


def test_both_models_are_sent_the_same_image_bytes_with_the_first_turn(alice, seeing):
    shas = _images(alice, 2)
    battle = battle_start(rater=alice, text="Compare these two.", images=shas)

    assert [i["sha256"] for i in battle.images] == shas
    assert all(i["type"] == "image/png" and i["size"] > 0 for i in battle.images)
    sent = {}
    for answer in Answer.objects.filter(turn__battle=battle):
        request = answer_conversation(answer)
        first = [m for m in request.messages if m.role == "user"][0]
        sent[answer.side] = [(i.sha256, i.data) for i in first.images]
    assert [s for s, _ in sent["a"]] == shas
    assert sent["a"] == sent["b"]


@needs_generation
def test_the_images_stay_with_the_first_turn_in_a_follow_ups_dialogue(alice, seeing):
    battle, shas = _shown(alice, "What colour is it?")
    follow = battle_follow_up(battle_id=battle.pk, rater=alice, text="Are you sure?")

    answer = Answer.objects.filter(turn=follow).first()
    users = [m for m in answer_conversation(answer).messages if m.role == "user"]
    assert [i.sha256 for i in users[0].images] == shas and users[1].images == ()


@needs_generation
def test_the_vote_log_keeps_each_images_hash_type_and_size_never_its_bytes(alice, seeing):
    battle, shas = _shown(alice, "Describe it.")
    answers = Answer.objects.filter(turn__battle=battle)
    # The mock that reads images says it saw this one, on both sides.
    assert all(shas[0][:8] in a.text and a.status == "ok" for a in answers)

    vote = vote_cast(battle_id=battle.pk, rater=alice, choice="a")

    assert Vote.objects.get(pk=vote.pk).images == battle.images
    assert set(vote.images[0]) == {"sha256", "type", "size"}


@needs_generation
def test_a_model_whose_server_refuses_the_image_voids_the_battle(alice, db):
    # Marked as reading images, but its server does not: the battle ends as on any backend error.
    make_model("Eye One", "eye-1", vision=True, takes_images=True)
    make_model("Blind Two", "blind-2", takes_images=True)
    battle = battle_start(rater=alice, text="What is this?", images=_images(alice))
    wait_for_answers(battle.pk)

    battle.refresh_from_db()
    assert battle.status == Battle.Status.VOID
    refused = Answer.objects.get(turn__battle=battle, model__model_id="blind-2")
    assert refused.error_kind == "bad_request"
    assert IMAGES_REFUSED.format(model="blind-2") in refused.error_message
