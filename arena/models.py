from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from arena.text import prompt_hash


class Prompt(models.Model):
    class Source(models.TextChoices):
        CURATED = "curated", "Curated"
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


def standard_params() -> list[str]:
    return ["temperature", "top_p", "max_tokens"]


class ModelEntry(models.Model):
    """A model raters can meet in battle, and how to reach it."""

    class Backend(models.TextChoices):
        MOCK = "mock", "Mock (deterministic, in-process)"
        OPENAI_COMPATIBLE = "openai_compatible", "OpenAI-compatible (vLLM, TGI, Ollama, ...)"
        OPENAI = "openai", "OpenAI"
        ANTHROPIC = "anthropic", "Anthropic Messages"
        GEMINI = "gemini", "Google Gemini"

    public_name = models.CharField(max_length=100, unique=True)
    organisation = models.CharField(max_length=100, blank=True, default="")
    vendor = models.CharField("family / vendor", max_length=100, blank=True, default="")
    model_id = models.CharField(max_length=200, help_text="The id the backend knows it by")
    backend = models.CharField(max_length=32, choices=Backend.choices, default=Backend.MOCK)
    backend_settings = models.JSONField(
        default=dict,
        blank=True,
        help_text="Backend options, e.g. base_url, api_key_env; for the mock: ttft_ms, "
        "tokens_per_s, answer_tokens, style, misbehaviour. Never an API key itself.",
    )
    supported_params = models.JSONField(
        default=standard_params,
        blank=True,
        help_text="The shared parameters this model accepts. Leave one out (e.g. temperature "
        "for a model that refuses a custom value) and the model sits out runs that set it.",
    )
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["public_name"]
        verbose_name = "model"

    def __str__(self) -> str:
        return self.public_name


class Battle(models.Model):
    class Status(models.TextChoices):
        GENERATING = "generating", "Generating"
        READY = "ready", "Ready for a vote"
        VOTED = "voted", "Voted"
        VOID = "void", "Void"

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


class CostStatus(models.TextChoices):
    KNOWN = "known", "Known"
    ESTIMATED = "estimated", "Estimated"
    UNKNOWN = "unknown", "Unknown (no price for that date)"
    EXAMPLE = "example", "Example pricing (mock): not a real cost"


class ModelPrice(models.Model):
    """A model's list price from a date on; the price in force is the latest one not after it."""

    model = models.ForeignKey(ModelEntry, on_delete=models.CASCADE, related_name="prices")
    input_per_million = models.DecimalField(max_digits=12, decimal_places=4)
    output_per_million = models.DecimalField(max_digits=12, decimal_places=4)
    effective_from = models.DateField()
    source_note = models.CharField(max_length=300, help_text="Where the price comes from")
    is_example = models.BooleanField(
        default=False, help_text="Example pricing for a mock model: shown as such, costs zero"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["model", "-effective_from"]
        constraints = [
            models.UniqueConstraint(fields=["model", "effective_from"], name="price_date_unique")
        ]

    def __str__(self) -> str:
        return f"{self.model} from {self.effective_from}"


class Answer(models.Model):
    class Side(models.TextChoices):
        A = "a", "A"
        B = "b", "B"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        OK = "ok", "Complete"
        PARTIAL = "partial", "Partial (stream cut)"
        ERROR = "error", "Error"

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
    error_kind = models.CharField(max_length=32, blank=True, default="")
    error_message = models.TextField(blank=True, default="")
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
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

    @property
    def is_terminal(self) -> bool:
        return self.status in {self.Status.OK, self.Status.PARTIAL, self.Status.ERROR}


class AppendOnlyError(Exception):
    pass


class Vote(models.Model):
    """One rater's verdict on one battle: an append-only event, never updated or deleted.

    Everything later analysis needs is copied in at write time, so the log stands on its own
    even if prompts or models are edited afterwards. The database refuses UPDATE and DELETE.
    """

    class Choice(models.TextChoices):
        A = "a", "A is better"
        B = "b", "B is better"
        TIE = "tie", "Tie"
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

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"Vote {self.pk} on {self.battle_id}: {self.choice}"

    def save(self, *args, **kwargs) -> None:
        if not self._state.adding:
            raise AppendOnlyError("Votes are append-only and cannot be changed.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AppendOnlyError("Votes are append-only and cannot be deleted.")


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


class VoteFlag(models.Model):
    """Why a vote does not count, or an admin's review of that: an append-only event log.

    A flag is a row with ``action=flag``; an admin confirms or lifts it with a new row pointing
    at it. A vote counts unless it has a flag that has not been lifted.
    """

    class Reason(models.TextChoices):
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
        FLAG = "flag", "Flag"
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

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["reason", "action"])]

    def __str__(self) -> str:
        return f"{self.get_action_display()}: {self.reason} on vote {self.vote_id}"

    def save(self, *args, **kwargs) -> None:
        if not self._state.adding:
            raise AppendOnlyError("Flags are append-only: review a flag with a new row.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AppendOnlyError("Flags are append-only and cannot be deleted.")
