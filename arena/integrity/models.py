"""Vote flags: the integrity event log beside the vote log. (Gold items, the battles whose
right vote is known, are records' rows: records.models.GoldItem.)"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from arena.core.models import AppendOnlyModel
from arena.records.models import Vote


class VoteFlag(AppendOnlyModel):
    """Why a vote does not count, or an admin's review of that: an append-only event log.

    A flag is a row with ``action=flag``; an admin confirms or lifts it with a new row pointing
    at it. A vote counts unless it has a flag that has not been lifted.
    """

    class Reason(models.TextChoices):
        """Why a vote may not count: findings at vote time, the rater's standing, or an
        admin's own judgement (integrity.findings writes all but the last)."""

        TOO_FAST = "too_fast", "Voted faster than the answers can be read"
        IDENTITY_QUESTION = "identity_question", "The prompt asked a model who it is"
        IDENTITY_LEAK = "identity_leak", "An answer named a vendor or model"
        IDENTICAL_ANSWERS = "identical_answers", "Both answers were identical"
        PROMPT_CAP = "prompt_cap", "Past the cap on battles for one prompt"
        DAILY_CAP = "daily_cap", "Past the rater's daily vote cap"
        BANNED_RATER = "banned_rater", "The rater is banned"
        LOW_AGREEMENT = "low_agreement", "The rater disagrees too often on gold battles"
        UNVERIFIED = "unverified", "Crowd rater without a verified email"
        ADMIN = "admin", "Flagged by an admin"

    class Action(models.TextChoices):
        FLAG = "flag"
        CONFIRM = "confirm", "Confirmed by an admin"
        LIFT = "lift", "Lifted by an admin"

    vote = models.ForeignKey(Vote, on_delete=models.PROTECT, related_name="flags")
    reason = models.CharField(max_length=32, choices=Reason.choices)
    action = models.CharField(max_length=8, choices=Action.choices, default=Action.FLAG)
    review_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="reviews"
    )
    detail = models.TextField(blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        help_text="Empty when the system raised it",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    rows = "Flags"
    changed = ": review a flag with a new row"

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["reason", "action"])]

    def __str__(self) -> str:
        return f"{self.get_action_display()}: {self.reason} on vote {self.vote_id}"
