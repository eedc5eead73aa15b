"""Prompts, battles, their turns and answers, and the append-only vote log."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.db import models

from arena.catalog.models import CostStatus, ModelEntry
from arena.core.answers import AnswerStatus
from arena.core.models import AppendOnlyModel
from arena.core.text import prompt_hash


class Prompt(models.Model):
    class Source(models.TextChoices):
        CURATED = "curated"
        RATER = "rater", "Typed by a rater"

    text = models.TextField()
    system_prompt = models.TextField(blank=True, default="")
    category = models.CharField(max_length=64, blank=True, default="", db_index=True)
    language = models.CharField(max_length=16, blank=True, default="", db_index=True)
    active = models.BooleanField(default=True)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.CURATED)
    text_hash = models.CharField(
        max_length=64, unique=True, editable=False, help_text="SHA-256 of the normalised text"
    )
    usage_count = models.PositiveIntegerField(default=0, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.text[:80]

    def save(self, *args, **kwargs) -> None:
        self.text_hash = prompt_hash(self.text)
        super().save(*args, **kwargs)


class Battle(models.Model):
    class Status(models.TextChoices):
        """A battle's life: generating, then ready (or waiting, when both answers finished
        but nobody has watched them to the end: resumable until its streams expire, then
        abandoned by the sweep), then voted; void from any state before the vote."""

        GENERATING = "generating"
        WAITING = "waiting", "Waiting for its rater"
        READY = "ready", "Ready for a vote"
        VOTED = "voted"
        VOID = "void"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT)
    prompt = models.ForeignKey(Prompt, on_delete=models.PROTECT, related_name="battles")
    model_a = models.ForeignKey(ModelEntry, on_delete=models.PROTECT, related_name="+")
    model_b = models.ForeignKey(ModelEntry, on_delete=models.PROTECT, related_name="+")
    system_prompt = models.TextField(blank=True, default="")
    params = models.JSONField(help_text="The one parameter set both sides received")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.GENERATING)
    void_reason = models.CharField(max_length=200, blank=True, default="")
    sampling_probability = models.FloatField(
        null=True, blank=True, help_text="Probability with which this pair was drawn"
    )
    # Integrity findings made while the battle ran (identity question or leak, identical
    # answers); each becomes a VoteFlag when the vote is cast.
    integrity_flags = models.JSONField(default=list, blank=True)
    gold = models.ForeignKey(
        "GoldItem",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="served",
        help_text="Set when this battle replays a gold item whose right answer is known",
    )
    images = models.JSONField(
        default=list,
        blank=True,
        help_text="The images attached to the first turn, in order: each one's sha256, type "
        "and size (arena/images)",
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=~models.Q(model_a=models.F("model_b")), name="battle_models_differ"
            )
        ]

    def __str__(self) -> str:
        return f"Battle {self.id}"

    # Answers coming or not yet watched to the end: what a new battle of its rater's abandons.
    UNWATCHED = (Status.GENERATING, Status.WAITING)
    # Not yet voted or void: what can still be carried on, or voided.
    UNFINISHED = (Status.GENERATING, Status.WAITING, Status.READY)

    @classmethod
    def between(cls, pair: tuple[ModelEntry, ModelEntry], /, **fields: Any) -> Battle:
        """A battle, not yet saved, between ``pair`` (A's model, then B's), with ``fields``."""
        model_a, model_b = pair
        return cls(model_a=model_a, model_b=model_b, **fields)

    def model_for(self, side: str) -> ModelEntry:
        return self.model_a if side == Answer.Side.A else self.model_b


class Turn(models.Model):
    battle = models.ForeignKey(Battle, on_delete=models.CASCADE, related_name="turns")
    index = models.PositiveSmallIntegerField()
    text = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    shown_at = models.DateTimeField(
        null=True, blank=True, help_text="When both answers had been fully shown to the rater"
    )

    class Meta:
        ordering = ["battle", "index"]
        constraints = [
            models.UniqueConstraint(fields=["battle", "index"], name="turn_index_unique")
        ]

    def __str__(self) -> str:
        return f"Turn {self.index} of {self.battle_id}"


class Answer(models.Model):
    class Side(models.TextChoices):
        A = "a"
        B = "b"

    Status = AnswerStatus

    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="answers")
    side = models.CharField(max_length=1, choices=Side.choices)
    model = models.ForeignKey(ModelEntry, on_delete=models.PROTECT, related_name="answers")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    text = models.TextField(blank=True, default="")
    truncated = models.BooleanField(default=False)
    finish_reason = models.CharField(max_length=32, blank=True, default="")
    input_tokens = models.PositiveIntegerField(null=True, blank=True)
    output_tokens = models.PositiveIntegerField(null=True, blank=True)
    tokens_estimated = models.BooleanField(default=False)
    ttft_ms = models.FloatField(null=True, blank=True)
    total_ms = models.FloatField(null=True, blank=True)
    # A reasoning model's thinking: kept for admins, never sent to a browser, never in the
    # vote's style counts; and the time to its first token, beside ttft_ms (visible text).
    reasoning = models.TextField(blank=True, default="")
    reasoning_ttft_ms = models.FloatField(null=True, blank=True)
    error_kind = models.CharField(max_length=32, blank=True, default="")
    error_message = models.TextField(blank=True, default="")
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Times handed to a worker again after its first worker stopped before writing any text.
    requeues = models.PositiveSmallIntegerField(default=0)
    # Where it ran: for admins and pool statistics only, never sent to a browser.
    replica = models.CharField(max_length=300, blank=True, default="")
    request_id = models.CharField(max_length=200, blank=True, default="")
    cost = models.DecimalField(max_digits=14, decimal_places=8, null=True, blank=True)
    cost_status = models.CharField(
        max_length=16, choices=CostStatus.choices, blank=True, default=""
    )

    class Meta:
        ordering = ["turn", "side"]
        constraints = [models.UniqueConstraint(fields=["turn", "side"], name="answer_side_unique")]

    def __str__(self) -> str:
        return f"Answer {self.side.upper()} of turn {self.turn_id}"

    TERMINAL = frozenset({Status.OK, Status.PARTIAL, Status.ERROR})

    @property
    def is_terminal(self) -> bool:
        return self.status in self.TERMINAL


class GoldItem(models.Model):
    """A battle whose right vote is known (one answer clearly wrong), replayed to crowd raters
    to measure how often each rater agrees."""

    source = models.OneToOneField(Battle, on_delete=models.PROTECT, related_name="gold_item")
    correct_side = models.CharField(
        max_length=1,
        choices=Answer.Side.choices,
        help_text="The better answer's side in the source battle",
    )
    note = models.CharField(max_length=300, blank=True, default="")
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"Gold item {self.pk} (from {self.source_id})"


class Vote(AppendOnlyModel):
    """One rater's verdict on one battle: an append-only event, never updated or deleted.

    Everything later analysis needs is copied in at write time, so the log stands on its own
    even if prompts or models are edited afterwards. The database refuses UPDATE and DELETE.
    """

    class Choice(models.TextChoices):
        A = "a", "A is better"
        B = "b", "B is better"
        TIE = "tie"
        BOTH_BAD = "both_bad", "Both are bad"

    battle = models.OneToOneField(Battle, on_delete=models.PROTECT, related_name="vote")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT)
    rater_pool = models.CharField(max_length=16)
    prompt = models.ForeignKey(Prompt, on_delete=models.PROTECT)
    prompt_hash = models.CharField(max_length=64, db_index=True)
    prompt_category = models.CharField(max_length=64, blank=True, default="")
    prompt_language = models.CharField(max_length=16, blank=True, default="")
    model_a = models.ForeignKey(ModelEntry, on_delete=models.PROTECT, related_name="+")
    model_b = models.ForeignKey(ModelEntry, on_delete=models.PROTECT, related_name="+")
    choice = models.CharField(max_length=16, choices=Choice.choices)
    decision_ms = models.PositiveIntegerField(
        help_text="Server-measured time from both answers fully shown to the vote"
    )
    turns = models.PositiveSmallIntegerField()
    params = models.JSONField()
    system_prompt = models.TextField(blank=True, default="")
    side_a = models.JSONField(help_text="tokens, finish reason, TTFT, latency, style counts")
    side_b = models.JSONField(help_text="tokens, finish reason, TTFT, latency, style counts")
    sampling_probability = models.FloatField(null=True, blank=True)
    simulated = models.BooleanField(
        default=False,
        db_index=True,
        help_text="Made up by the demo to fill the leaderboard; never counted unless asked for",
    )
    images = models.JSONField(
        default=list,
        blank=True,
        help_text="The battle's images: each one's sha256, type and size, never its bytes",
    )

    rows = "Votes"

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"Vote {self.pk} on {self.battle_id}: {self.choice}"

    @staticmethod
    def side_fields(
        *,
        model: ModelEntry,
        output_tokens: int,
        input_tokens: int,
        tokens_estimated: bool,
        finish_reason: str,
        ttft_ms: list[float | None],
        total_ms: list[float | None],
        style: dict[str, int],
    ) -> dict:
        """What the log keeps of one side (``side_a``/``side_b``): docs/vote_log.md."""
        return {
            "model": model.public_name,
            "model_id": model.model_id,
            "output_tokens": output_tokens,
            "input_tokens": input_tokens,
            "tokens_estimated": tokens_estimated,
            "finish_reason": finish_reason,
            "ttft_ms": ttft_ms,
            "total_ms": total_ms,
            "style": style,
        }

    @classmethod
    def fields_for(
        cls,
        *,
        battle: Battle,
        prompt: Prompt,
        choice: str,
        decision_ms: int,
        turns: int,
        side_a: dict,
        side_b: dict,
        **extra: object,
    ) -> dict:
        """A vote's row, copied in from its battle and prompt so it stands on its own;
        ``extra`` sets the remaining fields (``simulated``) or overrides a copied one."""
        return {
            "battle": battle,
            "rater": battle.rater,
            "rater_pool": battle.rater.rater_pool,
            "prompt": prompt,
            "prompt_hash": prompt.text_hash,
            "prompt_category": prompt.category,
            "prompt_language": prompt.language,
            "model_a": battle.model_a,
            "model_b": battle.model_b,
            "choice": choice,
            "decision_ms": decision_ms,
            "turns": turns,
            "params": battle.params,
            "system_prompt": battle.system_prompt,
            "side_a": side_a,
            "side_b": side_b,
            "sampling_probability": battle.sampling_probability,
            "images": battle.images,
            **extra,
        }
