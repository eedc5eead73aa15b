"""Gold battles: known right answers replayed to crowd raters, and each rater's agreement."""

from __future__ import annotations

import uuid

import pytest
from django.test import Client
from django.urls import reverse

from accounts.models import User
from arena.battles.gold import gold_draw, gold_mark
from arena.battles.prompts import prompt_create
from arena.battles.services import battle_follow_up, battle_start, turn_mark_shown, vote_cast
from arena.core.errors import ServiceError
from arena.integrity.selectors import rater_gold_agreement
from arena.records.models import Answer, Battle, GoldItem
from tests.helpers import (
    choose,
    gold_battle,
    make_gold_items,
    make_user,
    ready_battle,
    shown_ago,
    wait_for_answers,
)

pytestmark = pytest.mark.usefixtures("generation")


@pytest.fixture
def gold_always(settings) -> None:
    settings.INTEGRITY = {**settings.INTEGRITY, "GOLD_SHARE": 1.0}
    # Tickets are cache keys made of ids, which another test's database hands out again: each
    # test reads only its own (they are drawn and redeemed in this process).
    prefix = f"gold-{uuid.uuid4().hex}"
    settings.CACHES = {"default": {**settings.CACHES["default"], "KEY_PREFIX": prefix}}


@pytest.fixture
def curator(generation) -> User:
    return make_user("curator@example.com", rater_pool=User.Pool.INTERNAL)


class FixedRandom:
    """Decides the side swap of a gold battle: below 0.5 swaps."""

    def __init__(self, value: float) -> None:
        self.value = value

    def random(self) -> float:
        return self.value


def first_turn_texts(battle: Battle) -> dict[int, str]:
    """Answer text per model, for the first turn."""
    return dict(
        Answer.objects.filter(turn__battle=battle, turn__index=0).values_list("model_id", "text")
    )


@pytest.mark.parametrize("swap", [True, False])
def test_a_gold_battle_replays_the_source_answers(gold_always, curator, two_models, swap):
    source = ready_battle(curator, "Is 91 a prime number?")
    item = gold_mark(battle_id=source.pk, correct_side="b", note="91 = 7 x 13")
    crowd = make_user("crowd@example.com")

    prompt = gold_draw(rater=crowd)
    battle = battle_start(
        rater=crowd, text=prompt.text, prompt_id=prompt.pk, rng=FixedRandom(0.1 if swap else 0.9)
    )
    wait_for_answers(battle.pk)

    assert prompt == source.prompt
    assert battle.gold == item and battle.sampling_probability is None
    expected = (source.model_b, source.model_a) if swap else (source.model_a, source.model_b)
    assert (battle.model_a, battle.model_b) == expected
    replayed = first_turn_texts(battle)
    assert replayed == first_turn_texts(source)
    assert all(replayed.values())
    assert set(Answer.objects.filter(turn__battle=battle).values_list("status", flat=True)) == {
        Answer.Status.OK
    }


def test_agreement_counts_the_chosen_model_on_single_turn_gold_battles(
    settings, gold_always, curator, two_models
):
    make_gold_items(curator, 4, correct_side="a")
    crowd = make_user("crowd@example.com")

    for right in (True, False):
        battle = gold_battle(crowd)
        vote_cast(battle_id=battle.pk, rater=crowd, choice=choose(battle, right=right))
    tie = gold_battle(crowd)
    vote_cast(battle_id=tie.pk, rater=crowd, choice="tie")
    # A follow-up leaves the known answers behind, so that vote measures nothing.
    longer = gold_battle(crowd)
    turn = battle_follow_up(battle_id=longer.pk, rater=crowd, text="Are you sure?")
    wait_for_answers(longer.pk)
    turn_mark_shown(turn_id=turn.pk)
    shown_ago(longer, 600)
    vote_cast(battle_id=longer.pk, rater=crowd, choice=choose(longer, right=True))
    # Ordinary battles are no evidence either way.
    settings.INTEGRITY = {**settings.INTEGRITY, "GOLD_SHARE": 0.0}
    plain = ready_battle(crowd, "Name three rivers.")
    vote_cast(battle_id=plain.pk, rater=crowd, choice="a")

    assert rater_gold_agreement(rater=crowd) == (3, 1)
    assert rater_gold_agreement(rater=curator) == (0, 0)


def test_gold_is_drawn_only_for_crowd_raters(settings, gold_always, curator, two_models):
    make_gold_items(curator, 1)
    internal = make_user("staffer@example.com", rater_pool=User.Pool.INTERNAL)
    crowd = make_user("crowd@example.com")

    assert gold_draw(rater=internal) is None
    assert gold_draw(rater=curator) is None
    settings.INTEGRITY = {**settings.INTEGRITY, "GOLD_SHARE": 0.0}
    assert gold_draw(rater=crowd) is None
    settings.INTEGRITY = {**settings.INTEGRITY, "GOLD_SHARE": 1.0}
    assert gold_draw(rater=crowd) is not None


def test_a_rater_is_never_served_the_same_gold_item_twice(gold_always, curator, two_models):
    items = make_gold_items(curator, 2)
    crowd = make_user("crowd@example.com")

    served = [gold_battle(crowd).gold for _ in range(2)]

    assert sorted(i.pk for i in served) == sorted(i.pk for i in items)
    assert gold_draw(rater=crowd) is None
    # Another rater still gets them.
    assert gold_draw(rater=make_user("other@example.com")) is not None


def test_withdrawn_gold_items_are_not_served(gold_always, curator, two_models):
    (item,) = make_gold_items(curator, 1)
    GoldItem.objects.filter(pk=item.pk).update(active=False)

    assert gold_draw(rater=make_user("crowd@example.com")) is None


def test_a_gold_ticket_is_for_one_rater_and_one_battle(gold_always, curator, two_models):
    (item,) = make_gold_items(curator, 1)
    crowd = make_user("crowd@example.com")
    other = make_user("other@example.com")
    prompt = gold_draw(rater=crowd)

    theirs = battle_start(rater=other, text=prompt.text, prompt_id=prompt.pk)
    mine = battle_start(rater=crowd, text=prompt.text, prompt_id=prompt.pk)
    again = battle_start(rater=crowd, text=prompt.text, prompt_id=prompt.pk)

    assert (theirs.gold, mine.gold, again.gold) == (None, item, None)


def test_only_battles_whose_first_answers_completed_can_be_gold(curator, two_models):
    battle = ready_battle(curator, "Is 97 a prime number?")
    Answer.objects.filter(turn__battle=battle, side="b").update(status=Answer.Status.PARTIAL)

    with pytest.raises(ServiceError, match="completed"):
        gold_mark(battle_id=battle.pk, correct_side="a")
    with pytest.raises(ServiceError, match="'a' or 'b'"):
        gold_mark(battle_id=battle.pk, correct_side="tie")
    assert not GoldItem.objects.exists()


def test_marking_a_battle_gold_again_updates_the_item(curator, two_models):
    battle = ready_battle(curator, "Is 89 a prime number?")
    first = gold_mark(battle_id=battle.pk, correct_side="a")
    GoldItem.objects.filter(pk=first.pk).update(active=False)

    second = gold_mark(battle_id=battle.pk, correct_side="b", note="B is right")

    assert second.pk == first.pk
    assert (second.correct_side, second.note, second.active) == ("b", "B is right", True)


def test_a_gold_prompt_looks_like_any_random_prompt(settings, gold_always, curator, two_models):
    prompt, _ = prompt_create(text="Is 51 a prime number?", category="math")
    prompt_create(text="Is 53 a prime number?", category="math")
    source = battle_start(rater=curator, text=prompt.text, prompt_id=prompt.pk)
    wait_for_answers(source.pk)
    gold_mark(battle_id=source.pk, correct_side="b")
    client = Client()
    client.force_login(make_user("crowd@example.com"))

    drawn = client.get(reverse("random-prompt")).json()
    settings.INTEGRITY = {**settings.INTEGRITY, "GOLD_SHARE": 0.0}
    ordinary = client.get(reverse("random-prompt")).json()

    assert drawn == {"id": prompt.pk, "text": prompt.text, "category": "math"}
    assert set(ordinary) == set(drawn)


def test_a_rater_is_not_served_gold_made_from_their_own_battle(gold_always, two_models):
    crowd = make_user("crowd@example.com")
    battle = ready_battle(crowd, "Is 87 a prime number?")
    vote_cast(battle_id=battle.pk, rater=crowd, choice="a")
    gold_mark(battle_id=battle.pk, correct_side="b")

    assert gold_draw(rater=crowd) is None
