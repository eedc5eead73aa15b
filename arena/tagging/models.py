"""A vote's tags: an append-only log beside the vote log, never a column on it.

The vote row is never updated, so what a prompt is about lives here: one row per vote and
labeller version. A later version adds rows; readers take the newest version per vote
(``tagging.selectors.vote_tags``).
"""

from __future__ import annotations

from decimal import Decimal

from django.db import models

from arena.core.models import AppendOnlyModel
from arena.records.models import Vote


class VoteTags(AppendOnlyModel):
    """The tag set one labeller version gave one vote's prompt."""

    vote = models.ForeignKey(Vote, on_delete=models.PROTECT, related_name="tag_rows")
    # The prompt text's hash (Vote.prompt_hash): the same text reuses a labeller's answer.
    prompt_hash = models.CharField(max_length=64, db_index=True)
    tags = models.JSONField(default=list, help_text="Tag names, sorted")
    labeller = models.CharField(
        max_length=200, help_text='"rules", or "rules+<model>" when the LLM labeller answered'
    )
    version = models.PositiveIntegerField()
    # What the labeller's calls for this row cost (zero for rules alone or a reused answer):
    # the labeller's daily budget is the sum of this over the day.
    cost = models.DecimalField(max_digits=14, decimal_places=8, default=Decimal(0))
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    rows = "Tag rows"
    changed = ": a new labeller version adds rows"

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["vote", "version"], name="votetags_vote_version")]

    def __str__(self) -> str:
        return f"Tags v{self.version} of vote {self.vote_id}: {', '.join(self.tags)}"
