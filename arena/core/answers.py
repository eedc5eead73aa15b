"""What every answer-like row shares (a battle's, a compare run's, an evaluation's)."""

from __future__ import annotations

from django.db import models


class AnswerStatus(models.TextChoices):
    """The one answer status: the runner's result is written straight into it; ``partial``
    is a stream cut after some text, which the rater (or the judge) keeps."""

    PENDING = "pending"
    RUNNING = "running"
    OK = "ok", "Complete"
    PARTIAL = "partial", "Partial (stream cut)"
    ERROR = "error"
