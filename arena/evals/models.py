"""Evaluation runs: a prompt set, models, a baseline and a judge; every model's answer to each
prompt compared with the baseline's, in both orders. A judge's opinion, kept apart from the
human votes: nothing here is a Vote, and nothing here enters the human leaderboard."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from arena.catalog.models import CostStatus, ModelEntry
from arena.core.answers import AnswerStatus
from arena.records.models import Vote


class EvalRun(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        BUDGET = "budget", "Stopped at its budget"
        FAILED = "failed"

    name = models.CharField(max_length=200)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT)
    baseline = models.ForeignKey(ModelEntry, on_delete=models.PROTECT, related_name="+")
    judge = models.ForeignKey(ModelEntry, on_delete=models.PROTECT, related_name="+")
    contestants = models.ManyToManyField(ModelEntry, related_name="eval_runs")
    params = models.JSONField(default=dict, blank=True)
    seed = models.BigIntegerField(default=0)
    images = models.JSONField(
        default=list, blank=True, help_text="Images sent with every prompt: sha256, type, size"
    )
    budget = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    max_judge_calls = models.PositiveIntegerField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    note = models.TextField(blank=True, default="")
    public = models.BooleanField(
        default=False,
        help_text="Shown on the public leaderboard's judge tab, labelled as an LLM judge's opinion",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "evaluation run"
        permissions = [
            ("run_evals", "Can start and manage evaluation runs"),
            ("view_calibration", "Can see the judge calibration report"),
        ]

    def __str__(self) -> str:
        return self.name


class EvalWork(models.Model):
    """One piece of a run on one pool queue (``*``: the whole run in one place), held by one
    worker at a time and beating every few seconds while it works (``arena.evals.works``);
    one gone quiet has lost its worker, and the sweep hands it to another."""

    run = models.ForeignKey(EvalRun, on_delete=models.CASCADE, related_name="works")
    queue = models.CharField(max_length=100)
    owner = models.CharField(max_length=32, blank=True, default="")  # the worker's lease token
    takes = models.PositiveSmallIntegerField(default=0)  # workers that have started it
    heartbeat_at = models.DateTimeField()
    resent_at = models.DateTimeField(null=True, blank=True)  # by the sweep, last
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "queue"], name="eval_work_once")]

    def __str__(self) -> str:
        return f"{self.run_id} on {self.queue}"


class EvalHold(models.Model):
    """A unit of a run in flight (an answer, a verdict) holding its worst case against the run's
    limits, whichever piece or process it runs in (``arena.evals.budget``): counted until it is
    given back, as the unit's spend is recorded, or until ``held_until`` passes unrenewed (its
    worker was killed)."""

    run = models.ForeignKey(EvalRun, on_delete=models.CASCADE, related_name="holds")
    owner = models.CharField(max_length=32)  # the piece's lease token, whose beat renews it
    queue = models.CharField(max_length=100)  # the piece's, to tell whose it is
    cost = models.DecimalField(max_digits=18, decimal_places=8)  # the worst case, rounded up
    calls = models.PositiveSmallIntegerField(default=0)  # judge calls it may make
    held_until = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["run", "held_until"], name="eval_hold_live")]

    def __str__(self) -> str:
        return f"{self.run_id}: ${self.cost}, {self.calls} calls until {self.held_until}"


class EvalPrompt(models.Model):
    """The run's prompts, copied in, so later edits to curated prompts change nothing."""

    run = models.ForeignKey(EvalRun, on_delete=models.CASCADE, related_name="prompts")
    index = models.PositiveIntegerField()
    text = models.TextField()
    category = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        ordering = ["run", "index"]
        constraints = [models.UniqueConstraint(fields=["run", "index"], name="eval_prompt_index")]

    def __str__(self) -> str:
        return f"{self.run_id}#{self.index}"


class EvalAnswer(models.Model):
    Status = AnswerStatus

    prompt = models.ForeignKey(EvalPrompt, on_delete=models.CASCADE, related_name="answers")
    model = models.ForeignKey(ModelEntry, on_delete=models.PROTECT, related_name="+")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    text = models.TextField(blank=True, default="")
    ttft_ms = models.FloatField(null=True, blank=True)
    total_ms = models.FloatField(null=True, blank=True)
    output_tokens = models.PositiveIntegerField(null=True, blank=True)
    cost = models.DecimalField(max_digits=14, decimal_places=8, null=True, blank=True)
    cost_status = models.CharField(
        max_length=16, choices=CostStatus.choices, blank=True, default=""
    )
    error_message = models.TextField(blank=True, default="")

    class Meta:
        # One answer per prompt and model, ever: a resumed run never generates one twice.
        constraints = [models.UniqueConstraint(fields=["prompt", "model"], name="eval_answer_once")]

    def __str__(self) -> str:
        return f"{self.model_id} on {self.prompt_id}"


class PairVerdictFields(models.Model):
    """What one pairwise judgement gave (``arena.judges.pairwise``): its level ("" when the
    judge never gave one in the form asked), the calls it took and their cost, and the exchange
    itself, for review."""

    level = models.CharField(max_length=8, blank=True, default="")  # "": missing
    done = models.BooleanField(default=False)
    attempts = models.PositiveSmallIntegerField(default=0)
    cost = models.DecimalField(max_digits=14, decimal_places=8, null=True, blank=True)
    request = models.TextField(blank=True, default="")
    reply = models.TextField(blank=True, default="")
    problem = models.TextField(blank=True, default="")

    class Meta:
        abstract = True


class EvalVerdict(PairVerdictFields):
    """The judge on one model's answer against the baseline's, in one order."""

    prompt = models.ForeignKey(EvalPrompt, on_delete=models.CASCADE, related_name="verdicts")
    model = models.ForeignKey(ModelEntry, on_delete=models.PROTECT, related_name="+")
    model_first = models.BooleanField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["prompt", "model", "model_first"], name="eval_verdict_once"
            )
        ]

    def __str__(self) -> str:
        return f"{self.model_id} vs baseline on {self.prompt_id} ({self.level or 'missing'})"


class BattleVerdict(PairVerdictFields):
    """Calibration: the judge on an arena battle after its human vote, in one order (``a_first``:
    the battle's side A shown as A). Kept apart from the votes: never counted in the human
    leaderboard, never shown to raters."""

    vote = models.ForeignKey(Vote, on_delete=models.PROTECT, related_name="+")
    judge = models.ForeignKey(ModelEntry, on_delete=models.PROTECT, related_name="+")
    a_first = models.BooleanField()
    created_at = models.DateTimeField(auto_now_add=True)  # when it was claimed
    taken_at = models.DateTimeField(null=True, blank=True)  # when a worker started on it

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["vote", "judge", "a_first"], name="battle_verdict_once")
        ]

    def __str__(self) -> str:
        return f"{self.judge_id} on vote {self.vote_id} ({self.level or 'missing'})"
