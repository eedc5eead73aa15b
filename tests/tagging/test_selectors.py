"""Readers take each vote's newest labeller version; older rows stay in the log."""

from __future__ import annotations

from arena.tagging.models import VoteTags
from arena.tagging.selectors import TAGS, vote_tags


def _row(vote, tags: list[str], version: int) -> None:
    VoteTags.objects.create(
        vote=vote, prompt_hash=vote.prompt_hash, tags=tags, labeller="rules", version=version
    )


def test_the_newest_version_of_each_vote_wins_whatever_order_rows_were_written(make_vote):
    first, second, untagged = make_vote("One"), make_vote("Two"), make_vote("Three")
    _row(first, ["code", "hard"], version=2)
    _row(first, ["code"], version=1)  # a late backfill of an old version changes nothing
    _row(second, ["math"], version=1)

    assert vote_tags() == {first.pk: frozenset({"code", "hard"}), second.pk: frozenset({"math"})}
    assert vote_tags(vote_ids=[second.pk, untagged.pk]) == {second.pk: frozenset({"math"})}
    assert vote_tags(vote_ids=[]) == {}
    assert VoteTags.objects.count() == 3


def test_the_known_tags_come_in_display_order():
    assert TAGS[:2] == ("code", "math") and TAGS[-3:] == ("long_query", "multi_turn", "vision")
    assert len(set(TAGS)) == 8
