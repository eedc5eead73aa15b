"""The admin's integrity screens, end to end: flags and reviews, votes, raters, gold items.

Every decision goes through the services; nothing here may change or delete a vote or a flag.
"""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from accounts.models import User
from arena.battles.gold import gold_draw
from arena.battles.services import vote_cast
from arena.integrity.models import VoteFlag
from arena.integrity.selectors import counted_votes
from arena.integrity.services import flag_review, rater_ban, vote_flag
from arena.records.models import Answer, GoldItem, Vote
from tests.helpers import calm_vote, choose, gold_battle, make_gold_items, make_user, ready_battle

needs_generation = pytest.mark.usefixtures("generation")

FLAGS = "admin:arena_voteflag_changelist"
VOTES = "admin:arena_vote_changelist"
USERS = "admin:accounts_user_changelist"
BATTLES = "admin:arena_battle_changelist"
GOLD = "admin:arena_golditem_changelist"


def act(client: Client, url: str, action: str, selected: list, **fields):
    """Post an admin action for the selected rows, as the change list form does."""
    return client.post(
        reverse(url), {"action": action, "_selected_action": selected, **fields}, follow=True
    )


def apply(client: Client, url: str, action: str, selected: list, note: str):
    """Post the intermediate page of an action that asks for a note."""
    return act(client, url, action, selected, apply="yes", note=note)


def submit_note_page(client: Client, page, note: str):
    """Fill in the note on an intermediate page and post its form as a browser would."""
    html = page.content.decode()
    fields: dict[str, list[str]] = {}
    for name, value in re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', html):
        fields.setdefault(name, []).append(value)
    fields.pop("csrfmiddlewaretoken", None)
    return client.post(page.request["PATH_INFO"], {**fields, "note": note}, follow=True)


def shown(response) -> list:
    return list(response.context["cl"].result_list)


def hasty_vote(rater: User, text: str) -> Vote:
    battle = ready_battle(rater, text)
    return vote_cast(battle_id=battle.pk, rater=rater, choice="a")


@pytest.fixture
def votes(generation, alice, bob, two_models) -> dict[str, Vote]:
    """A vote that passes every defence and one cast too fast, on committed data."""
    return {
        "clean": calm_vote(alice, "Explain recursion."),
        "hasty": hasty_vote(bob, "Explain closures."),
    }


# The flag list ------------------------------------------------------------------------------


def test_flag_list_shows_flags_and_filters_and_searches_them(admin_client, staff, votes, bob):
    system_flag = votes["hasty"].flags.get()
    admin_flag = vote_flag(vote=votes["clean"], by=staff, detail="looks scripted")
    lift = flag_review(flag=system_flag, by=staff, action="lift", note="fast reader")
    url = reverse(FLAGS)

    listing = admin_client.get(url)
    too_fast = admin_client.get(url, {"reason": "too_fast"})
    reviews = admin_client.get(url, {"action": "lift"})
    by_email = admin_client.get(url, {"q": bob.email})
    by_vote = admin_client.get(url, {"q": str(votes["clean"].pk)})
    still_open = admin_client.get(url, {"open": "yes"})
    lifted = admin_client.get(url, {"open": "no"})

    page = listing.content.decode()
    assert listing.status_code == 200
    assert set(shown(listing)) == {system_flag, admin_flag, lift}
    assert "system" in page and staff.email in page and "looks scripted" in page
    assert "Confirm selected flags" in page
    assert "Lift selected flags" in page and "delete_selected" not in page
    assert set(shown(too_fast)) == {system_flag, lift}
    assert shown(reviews) == [lift]
    assert set(shown(by_email)) == {system_flag, lift}
    assert shown(by_vote) == [admin_flag]
    assert shown(still_open) == [admin_flag]
    assert shown(lifted) == [system_flag]


def test_flags_cannot_be_added_changed_or_deleted_in_the_admin(admin_client, votes):
    flag = votes["hasty"].flags.get()
    change = reverse("admin:arena_voteflag_change", args=[flag.pk])

    page = admin_client.get(change)
    edit = admin_client.post(change, {"reason": "admin", "action": "lift"})
    removal = admin_client.post(reverse("admin:arena_voteflag_delete", args=[flag.pk]), {})
    add = admin_client.get(reverse("admin:arena_voteflag_add"))
    bulk = act(admin_client, FLAGS, "delete_selected", [flag.pk], post="yes")

    assert page.status_code == 200 and b'name="_save"' not in page.content
    assert (edit.status_code, removal.status_code, add.status_code) == (403, 403, 403)
    assert "No action selected." in bulk.content.decode()
    assert VoteFlag.objects.get(pk=flag.pk).reason == "too_fast"


# Reviewing flags ----------------------------------------------------------------------------


def test_confirming_flags_asks_for_a_note_and_records_a_review(admin_client, staff, votes):
    flag = votes["hasty"].flags.get()

    ask = act(admin_client, FLAGS, "confirm_flags", [flag.pk])
    empty = submit_note_page(admin_client, ask, note="   ")
    done = submit_note_page(admin_client, empty, note="bot-like timing")

    assert ask.status_code == 200
    assert ask.templates[0].name == "admin/note_action.html"
    assert str(flag) in ask.content.decode() and 'name="note"' in ask.content.decode()
    assert 'class="required"' in ask.content.decode()  # the note is marked as required
    assert "This field is required." in empty.content.decode()
    assert "1 flag(s) confirmed" in done.content.decode()
    review = VoteFlag.objects.get(review_of=flag)
    assert (review.action, review.detail, review.created_by) == (
        "confirm",
        "bot-like timing",
        staff,
    )
    assert review.vote == flag.vote and review.reason == flag.reason
    assert not counted_votes().filter(pk=votes["hasty"].pk).exists()


def test_lifting_a_flag_lets_its_vote_count_again(admin_client, staff, votes):
    flag = votes["hasty"].flags.get()
    assert not counted_votes().filter(pk=votes["hasty"].pk).exists()

    done = apply(admin_client, FLAGS, "lift_flags", [flag.pk], note="checked the logs")

    assert "1 flag(s) lifted" in done.content.decode()
    assert counted_votes().filter(pk=votes["hasty"].pk).exists()
    assert VoteFlag.objects.get(pk=flag.pk).action == "flag"  # the flag row is untouched
    assert VoteFlag.objects.filter(review_of=flag, action="lift", created_by=staff).exists()


def test_a_review_cannot_be_reviewed(admin_client, staff, votes):
    flag = votes["hasty"].flags.get()
    review = flag_review(flag=flag, by=staff, action="confirm", note="confirmed")
    other = vote_flag(vote=votes["clean"], by=staff, detail="odd")

    done = apply(admin_client, FLAGS, "lift_flags", [review.pk, other.pk], note="second look")

    page = done.content.decode()
    assert f"Row {review.pk}" in page and "Only a flag can be reviewed, not a review." in page
    assert "1 flag(s) lifted" in page
    assert not VoteFlag.objects.filter(review_of=review).exists()
    assert VoteFlag.objects.filter(review_of=other, action="lift").exists()


def test_confirming_a_lifted_flag_warns_that_the_vote_still_counts(admin_client, staff, votes):
    flag = votes["hasty"].flags.get()
    flag_review(flag=flag, by=staff, action="lift", note="fine")

    done = apply(admin_client, FLAGS, "confirm_flags", [flag.pk], note="changed my mind")

    assert "had already been lifted" in done.content.decode()


def test_staff_without_permissions_can_read_flags_but_not_review_them(votes):
    reader = make_user("reader@example.com", is_staff=True)
    client = Client()
    client.force_login(reader)
    flag = votes["hasty"].flags.get()

    listing = client.get(reverse(FLAGS))
    attempt = apply(client, FLAGS, "lift_flags", [flag.pk], note="let me")

    assert listing.status_code == 200 and "Lift selected flags" not in listing.content.decode()
    assert attempt.status_code == 200  # the list again: no action is offered to this reader
    assert not VoteFlag.objects.filter(review_of=flag).exists()


# Votes --------------------------------------------------------------------------------------


def test_vote_page_shows_its_flags_read_only(admin_client, staff, votes):
    vote = votes["hasty"]
    vote_flag(vote=vote, by=staff, detail="same answer every time")

    page = admin_client.get(reverse("admin:arena_vote_change", args=[vote.pk])).content.decode()

    assert "flags and reviews" in page.lower()
    assert "Voted faster than the answers can be read" in page
    assert "same answer every time" in page and staff.email in page and "system" in page
    assert 'name="flags-0-reason"' not in page  # shown, not editable


def test_flagging_votes_needs_a_note_and_leaves_the_votes_unchanged(admin_client, staff, votes):
    vote = votes["clean"]

    ask = act(admin_client, VOTES, "flag_votes", [vote.pk])
    empty = apply(admin_client, VOTES, "flag_votes", [vote.pk], note="")
    done = apply(admin_client, VOTES, "flag_votes", [vote.pk], note="paid to vote A")

    assert ask.status_code == 200 and "Flag selected votes" in ask.content.decode()
    assert "This field is required." in empty.content.decode()
    assert "1 vote(s) flagged" in done.content.decode()
    flag = VoteFlag.objects.get(vote=vote)
    assert (flag.reason, flag.action, flag.detail, flag.created_by) == (
        "admin",
        "flag",
        "paid to vote A",
        staff,
    )
    assert Vote.objects.get(pk=vote.pk).choice == vote.choice
    assert Vote.objects.count() == 2


def test_vote_list_says_which_votes_count(admin_client, votes):
    counted = admin_client.get(reverse(VOTES), {"counted": "yes"})
    kept_out = admin_client.get(reverse(VOTES), {"counted": "no"})

    assert shown(counted) == [votes["clean"]]
    assert shown(kept_out) == [votes["hasty"]]


# Raters -------------------------------------------------------------------------------------


@needs_generation
def test_rater_list_shows_pool_ban_and_quality(settings, admin_client, two_models):
    settings.INTEGRITY = {**settings.INTEGRITY, "GOLD_SHARE": 1.0}
    curator = make_user("curator@example.com", rater_pool=User.Pool.INTERNAL)
    make_gold_items(curator, 2)
    crowd = make_user("crowd@example.com")
    for right in (True, False):
        battle = gold_battle(crowd)
        vote_cast(battle_id=battle.pk, rater=crowd, choice=choose(battle, right=right))
    settings.INTEGRITY = {**settings.INTEGRITY, "GOLD_SHARE": 0.0}
    hasty_vote(crowd, "Explain closures.")
    rater_ban(rater=curator, by=None, reason="test")

    listing = admin_client.get(reverse(USERS))
    rows = {u.email: u for u in shown(listing)}
    page = listing.content.decode()

    assert (rows["crowd@example.com"].votes_total, rows["crowd@example.com"].votes_flagged) == (
        3,
        1,
    )
    assert (rows["curator@example.com"].votes_total, rows["admin@example.com"].votes_total) == (
        0,
        0,
    )
    assert "1 of 2 (50%)" in page and "no gold votes" in page
    for column in ("gold agreement", "flagged votes", "banned", "Rater pool"):
        assert column.lower() in page.lower()

    by_pool = admin_client.get(reverse(USERS), {"rater_pool__exact": "internal"})
    banned = admin_client.get(reverse(USERS), {"banned": "yes"})
    not_banned = admin_client.get(reverse(USERS), {"banned": "no"})

    assert [u.email for u in shown(by_pool)] == ["curator@example.com"]
    assert [u.email for u in shown(banned)] == ["curator@example.com"]
    assert "curator@example.com" not in [u.email for u in shown(not_banned)]


def test_banning_raters_needs_a_reason_and_flags_their_votes(admin_client, staff, alice, votes):
    hasty = votes["hasty"]
    more = calm_vote(alice, "Explain iteration.")

    ask = act(admin_client, USERS, "ban_raters", [alice.pk])
    empty = apply(admin_client, USERS, "ban_raters", [alice.pk], note=" ")
    alice.refresh_from_db()
    assert "Ban selected raters" in ask.content.decode() and 'name="note"' in ask.content.decode()
    assert "This field is required." in empty.content.decode() and not alice.is_banned

    done = apply(admin_client, USERS, "ban_raters", [alice.pk, staff.pk], note="sock puppet")

    page = done.content.decode()
    alice.refresh_from_db()
    assert "1 rater(s) banned; 2 past vote(s) flagged" in page
    assert "You cannot ban yourself" in page
    assert alice.is_banned and alice.ban_reason == "sock puppet"
    assert not User.objects.get(pk=staff.pk).is_banned
    flags = VoteFlag.objects.filter(reason="banned_rater")
    assert {f.vote for f in flags} == {votes["clean"], more}
    assert all(f.created_by == staff and f.detail == "sock puppet" for f in flags)
    assert not flags.filter(vote=hasty).exists()


def test_unbanning_raters(admin_client, alice, bob, votes):
    rater_ban(rater=alice, by=None, reason="mistake")

    done = act(admin_client, USERS, "unban_raters", [alice.pk, bob.pk])
    nothing = act(admin_client, USERS, "unban_raters", [bob.pk])

    alice.refresh_from_db()
    assert "1 rater(s) unbanned" in done.content.decode()
    assert "None of the selected raters was banned." in nothing.content.decode()
    assert not alice.is_banned
    assert votes["clean"].flags.filter(reason="banned_rater").exists()  # until lifted


def user_form(user: User, **changes) -> dict:
    data = {
        "email": user.email,
        "rater_pool": user.rater_pool,
        "first_name": "",
        "last_name": "",
        "is_active": "on",
        "date_joined_0": user.date_joined.strftime("%Y-%m-%d"),
        "date_joined_1": user.date_joined.strftime("%H:%M:%S"),
        "last_login_0": "",
        "last_login_1": "",
    }
    data.update(changes)
    return data


def test_pool_is_edited_on_the_change_form(admin_client, alice):
    url = reverse("admin:accounts_user_change", args=[alice.pk])

    page = admin_client.get(url).content.decode()
    bad = admin_client.post(url, user_form(alice, rater_pool="everyone"))
    good = admin_client.post(url, user_form(alice, rater_pool="internal"))

    alice.refresh_from_db()
    assert 'name="rater_pool"' in page
    assert 'name="banned_at"' not in page  # bans go through the action
    assert bad.status_code == 200 and "Select a valid choice" in bad.content.decode()
    assert good.status_code == 302, good.context["adminform"].form.errors
    assert alice.rater_pool == "internal"


# Gold ---------------------------------------------------------------------------------------


@needs_generation
def test_marking_battles_gold_from_the_battle_list(admin_client, alice, two_models):
    good = ready_battle(alice, "Is 91 a prime number?")
    broken = ready_battle(alice, "Is 93 a prime number?")
    Answer.objects.filter(turn__battle=broken, side="a").update(status=Answer.Status.ERROR)

    ask = act(admin_client, BATTLES, "mark_gold_b", [good.pk])
    done = apply(admin_client, BATTLES, "mark_gold_b", [good.pk, broken.pk], note="")

    page = done.content.decode()
    assert "Mark as gold: B is better" in ask.content.decode()
    assert "1 battle(s) marked gold with B as the better answer" in page
    assert f"{broken} was not marked gold" in page and "first answers both completed" in page
    item = GoldItem.objects.get()
    assert (item.source_id, item.correct_side, item.note, item.active) == (good.pk, "b", "", True)

    again = apply(admin_client, BATTLES, "mark_gold_a", [good.pk], note="A after all")

    item.refresh_from_db()
    assert "1 battle(s) marked gold with A" in again.content.decode()
    assert (item.correct_side, item.note) == ("a", "A after all")
    assert GoldItem.objects.count() == 1
    assert "gold item" in admin_client.get(reverse(BATTLES)).content.decode()


@needs_generation
def test_gold_item_list_shows_use_and_agreement(settings, admin_client, two_models):
    settings.INTEGRITY = {**settings.INTEGRITY, "GOLD_SHARE": 1.0}
    curator = make_user("curator@example.com", rater_pool=User.Pool.INTERNAL)
    (item,) = make_gold_items(curator, 1)
    for n, right in enumerate((True, True, False)):
        rater = make_user(f"crowd{n}@example.com")
        battle = gold_battle(rater)
        vote_cast(battle_id=battle.pk, rater=rater, choice=choose(battle, right=right))
    gold_battle(make_user("pending@example.com"))  # served, not yet voted

    listing = admin_client.get(reverse(GOLD))
    (row,) = shown(listing)

    assert row.times_served == 4
    assert "2 of 3 (67%)" in listing.content.decode()
    assert admin_client.get(reverse("admin:arena_golditem_add")).status_code == 403
    assert (
        admin_client.post(
            reverse("admin:arena_golditem_change", args=[item.pk]), {"correct_side": "b"}
        ).status_code
        == 403
    )

    act(admin_client, GOLD, "withdraw_items", [item.pk])
    assert not GoldItem.objects.get(pk=item.pk).active
    assert gold_draw(rater=make_user("late@example.com")) is None
    act(admin_client, GOLD, "serve_items", [item.pk])
    assert GoldItem.objects.get(pk=item.pk).active


@needs_generation
def test_gold_actions_need_permission(alice, two_models):
    from django.contrib.auth.models import Permission

    battle = ready_battle(alice, "Is 99 a prime number?")
    reader = make_user("reader@example.com", is_staff=True)
    reader.user_permissions.add(Permission.objects.get(codename="view_battle"))
    client = Client()
    client.force_login(reader)

    listing = client.get(reverse(BATTLES))
    attempt = apply(client, BATTLES, "mark_gold_a", [battle.pk], note="")

    assert listing.status_code == 200 and "Mark as gold" not in listing.content.decode()
    assert attempt.status_code == 200
    assert not GoldItem.objects.exists()
