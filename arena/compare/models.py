"""Compare runs: one prompt to 2-8 named models, their answers with timings and cost, and the
blind judge's calls and verdict. Saved for the history, exports and audit; never a vote, never
on the leaderboard."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from arena.catalog.models import CostStatus, ModelEntry
from arena.core.answers import AnswerStatus

# The finish reasons of an answer cut at the length limit, as backends report them (ours is
# "length"; "max_tokens", "max_output_tokens" and "incomplete" are vendors' own words).
LENGTH_FINISHES = ("length", "max_tokens", "max_output_tokens", "incomplete")


class CompareRun(models.Model):
    class Status(models.TextChoices):
        """Queued, running (the answers), judging, then done; failed or cancelled from any
        state before done."""

        QUEUED = "queued"
        RUNNING = "running"
        JUDGING = "judging"
        DONE = "done"
        FAILED = "failed"
        CANCELLED = "cancelled"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT)
    prompt = models.TextField()
    system_prompt = models.TextField(blank=True, default="")
    params = models.JSONField(default=dict, blank=True)  # only the ones set: sent to every model
    seed = models.BigIntegerField()
    deadline_s = models.FloatField()
    judge = models.ForeignKey(
        ModelEntry, null=True, blank=True, on_delete=models.PROTECT, related_name="judged_runs"
    )
    rubric = models.JSONField(default=list, blank=True)
    previous = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL)
    images = models.JSONField(
        default=list, blank=True, help_text="Images sent with the prompt: sha256, type, size"
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    error = models.TextField(blank=True, default="")
    # The judge's verdict: overall scores by label, the criteria left out, the winner, notes.
    verdict = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        permissions = [("use_compare", "Can run compare mode (COMPARE_ACCESS=team)")]

    def __str__(self) -> str:
        return f"Compare run {self.pk}"


class Spend(models.Model):
    """What a request used and cost: its tokens (counted, or estimated) and its cost with the
    cost's status. An answer's, and a judge call's (every request it took, a refused
    temperature's too)."""

    input_tokens = models.PositiveIntegerField(null=True, blank=True)
    output_tokens = models.PositiveIntegerField(null=True, blank=True)
    tokens_estimated = models.BooleanField(default=False)
    cost = models.DecimalField(max_digits=14, decimal_places=8, null=True, blank=True)
    cost_status = models.CharField(
        max_length=16, choices=CostStatus.choices, blank=True, default=""
    )

    class Meta:
        abstract = True


class CompareAnswer(Spend):
    Status = AnswerStatus

    run = models.ForeignKey(CompareRun, on_delete=models.CASCADE, related_name="answers")
    slot = models.PositiveSmallIntegerField()
    label = models.CharField(max_length=1)  # what the judge calls it
    model = models.ForeignKey(ModelEntry, on_delete=models.PROTECT, related_name="compare_answers")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    text = models.TextField(blank=True, default="")
    finish_reason = models.CharField(max_length=32, blank=True, default="")
    # Stopped on the length limit (the model's max_tokens, or the site's answer size), kept
    # from the finish reason by the database itself, so no writer can leave it out.
    truncated = models.GeneratedField(
        expression=models.Q(finish_reason__in=LENGTH_FINISHES),
        output_field=models.BooleanField(),
        db_persist=True,
    )
    ttft_ms = models.FloatField(null=True, blank=True)
    total_ms = models.FloatField(null=True, blank=True)
    error_kind = models.CharField(max_length=32, blank=True, default="")
    error_message = models.TextField(blank=True, default="")
    # The judge on this answer: per-criterion {"score", "reason"}, or why it was not judged.
    judged = models.JSONField(default=dict, blank=True)
    not_judged = models.CharField(max_length=200, blank=True, default="")

    class Meta:
        ordering = ["run", "slot"]
        constraints = [
            models.UniqueConstraint(fields=["run", "slot"], name="compare_answer_slot_unique"),
            models.UniqueConstraint(fields=["run", "label"], name="compare_answer_label_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.label}: {self.model_id} in {self.run_id}"


class JudgeCall(Spend):
    """One request to the judge and its reply, kept for audit: what it saw (redacted), in which
    order, what it said, and whether the reply was usable."""

    run = models.ForeignKey(CompareRun, on_delete=models.CASCADE, related_name="judge_calls")
    purpose = models.CharField(max_length=64)  # a criterion's name, or "head_to_head"
    attempt = models.PositiveSmallIntegerField(default=1)
    order = models.JSONField(default=list)
    request = models.TextField()
    temperature_sent = models.BooleanField(default=True)
    schema_sent = models.BooleanField(default=False)  # the reply's JSON schema, to the provider
    reply = models.TextField(blank=True, default="")
    problem = models.TextField(blank=True, default="")  # empty: the reply was used
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "pk"]

    def __str__(self) -> str:
        return f"{self.purpose} (try {self.attempt}) of {self.run_id}"


class Rubric(models.Model):
    """A judge's rubric, edited in the admin: criteria with weights summing to 1 and what a 1
    and a 5 mean (judges.rubric.rubric_from checks it). The default one judges every run that
    names none; without any, the built-in default does."""

    name = models.CharField(max_length=100, unique=True)
    criteria = models.JSONField(
        help_text='A list of {"name", "weight", "low", "high"}; weights sum to 1.'
    )
    is_default = models.BooleanField(default=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                fields=["is_default"],
                condition=models.Q(is_default=True),
                name="one_default_rubric",
            )
        ]

    def __str__(self) -> str:
        return self.name
