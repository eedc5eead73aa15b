"""The one answer status every answer-like row shares (a battle's, a compare run's, an
evaluation's): the runner's results are written straight into it."""

from __future__ import annotations

from django.db import models


class AnswerStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    OK = "ok", "Complete"
    # The stream was cut after some text: the rater (or judge) keeps what came.
    PARTIAL = "partial", "Partial (stream cut)"
    ERROR = "error", "Error"
