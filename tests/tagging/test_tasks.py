"""A vote is tagged by a job sent when it commits (on the Celery worker when there is one), not
by the vote's own request."""

from __future__ import annotations

import pytest

from arena.tagging.models import VoteTags
from tests.helpers import calm_vote, wait_until

needs_generation = pytest.mark.usefixtures("generation")


@needs_generation
def test_a_vote_cast_through_the_service_is_tagged_by_the_job_it_sends(alice, two_models):
    vote = calm_vote(alice, "Write a Python function that adds two numbers.")

    wait_until(lambda: VoteTags.objects.filter(vote=vote).exists())

    row = VoteTags.objects.get(vote=vote)
    assert (row.tags, row.labeller, row.version, row.prompt_hash) == (
        ["code"],
        "rules",
        1,
        vote.prompt_hash,
    )
