"""Tag rows are append-only like the vote log: the model refuses a change, and on PostgreSQL
so does the database, for bulk queries too."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction

from arena.core.errors import AppendOnlyError
from arena.tagging.models import VoteTags


def _row(vote, tags: list[str], version: int = 1) -> VoteTags:
    return VoteTags.objects.create(
        vote=vote, prompt_hash=vote.prompt_hash, tags=tags, labeller="rules", version=version
    )


def test_a_tag_row_cannot_be_changed_or_deleted_through_the_model(make_vote):
    row = _row(make_vote("Write a haiku."), ["creative_writing"])

    row.tags = ["code"]
    with pytest.raises(AppendOnlyError, match="new labeller version"):
        row.save()
    with pytest.raises(AppendOnlyError):
        row.delete()
    assert VoteTags.objects.get(pk=row.pk).tags == ["creative_writing"]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="triggers are PostgreSQL's")
def test_database_refuses_update_and_delete_of_tag_rows(make_vote):
    _row(make_vote("Solve x + 2 = 5."), ["math"])

    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        VoteTags.objects.update(tags=[])
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        VoteTags.objects.all().delete()
    assert list(VoteTags.objects.values_list("tags", flat=True)) == [["math"]]
