"""The models raters meet and how to reach them, with their list prices."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone

from arena.backends.registry import Kind
from arena.core.models import AppendOnlyModel

# Seconds a model's answer may take when its backend settings name no "timeout_s".
DEFAULT_TIMEOUT_S = 120.0


def standard_params() -> list[str]:
    return ["temperature", "top_p", "max_tokens"]


class ModelEntry(models.Model):
    """A model raters can meet in battle, and how to reach it."""

    Backend = Kind  # the backend registry's kinds

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
    takes_images = models.BooleanField(
        "reads images",
        default=False,
        help_text="The model reads images; only models marked are drawn for an image battle "
        "(its backend must carry images).",
    )
    line = models.CharField(
        max_length=100,
        blank=True,
        default="",
        help_text="The model line this variant belongs to, with its organisation (e.g. "
        '"Quartz" of "Example AI"); every variant of a line is published',
    )
    preview = models.BooleanField(
        default=False,
        help_text="Runs as a preview under a codename (its public name) before its release; "
        "shown as a preview on the leaderboard",
    )
    active = models.BooleanField(default=True)
    # When it was last taken out of battles (catalog.services.models_set_active); the record
    # of who retired what and when is ModelRetirement.
    retired_at = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["public_name"]
        verbose_name = "model"
        permissions = [("view_pools", "Can see the GPU pools page")]

    def __str__(self) -> str:
        return self.public_name

    @property
    def pool_queue(self) -> str:
        """The pool queue its answers go to (backend settings' "queue"), so workers can be
        sized per GPU pool; "" for the default generation queue."""
        return str(self.backend_settings.get("queue") or "")

    @property
    def timeout_s(self) -> float:
        """How long one of its answers (or a judge's reply) may take, in seconds."""
        return float(self.backend_settings.get("timeout_s") or DEFAULT_TIMEOUT_S)

    def params_unsupported(self, params: dict) -> list[str]:
        """Shared parameters that are set but that this model does not declare it supports."""
        supported = set(self.supported_params or [])
        return sorted(k for k, v in params.items() if v is not None and k not in supported)


class CostStatus(models.TextChoices):
    KNOWN = "known"
    ESTIMATED = "estimated"
    UNKNOWN = "unknown", "Unknown (no price for that date)"
    EXAMPLE = "example", "Example pricing (mock): not a real cost"


class ModelPrice(models.Model):
    """A model's list price from a date on; the price in force is the latest one not after it."""

    model = models.ForeignKey(ModelEntry, on_delete=models.CASCADE, related_name="prices")
    input_per_million = models.DecimalField(max_digits=12, decimal_places=4)
    output_per_million = models.DecimalField(max_digits=12, decimal_places=4)
    effective_from = models.DateField()
    source_url = models.URLField(
        max_length=500, blank=True, default="", help_text="The page the price was read from"
    )
    retrieved_on = models.DateField(
        null=True, blank=True, help_text="The day the price was read from that page"
    )
    source_note = models.CharField(
        max_length=300, blank=True, default="", help_text="Anything more about where it comes from"
    )
    is_example = models.BooleanField(
        default=False, help_text="Example pricing for a mock model: shown as such, costs zero"
    )
    # What makes a cost at this price "estimated" rather than "known" (catalog.costs):
    is_from_price = models.BooleanField(
        '"from" price',
        default=False,
        help_text='A "from" price (the lowest of several the vendor lists): costs are estimated',
    )
    long_context_threshold = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Input tokens above which the long-context prices apply to the whole request "
        "(costs past it are estimated); empty: no long-context tier",
    )
    long_context_input_per_million = models.DecimalField(
        max_digits=12, decimal_places=4, null=True, blank=True
    )
    long_context_output_per_million = models.DecimalField(
        max_digits=12, decimal_places=4, null=True, blank=True
    )
    reasoning_billing_confirmed = models.BooleanField(
        default=False,
        help_text="The vendor bills reasoning tokens as output tokens and counts them in the "
        "usage it reports; unchecked, an answer that reasoned has an estimated cost",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["model", "-effective_from"]
        constraints = [
            models.UniqueConstraint(fields=["model", "effective_from"], name="price_date_unique")
        ]

    def __str__(self) -> str:
        return f"{self.model} from {self.effective_from}"

    def clean(self) -> None:
        tier = (self.long_context_input_per_million, self.long_context_output_per_million)
        given = [v is not None for v in (self.long_context_threshold, *tier)]
        if any(given) and not all(given):
            raise ValidationError(
                "A long-context tier needs its threshold and both of its prices (or none)."
            )


class ModelRetirement(AppendOnlyModel):
    """Who took a model out of battles, or put it back, and when: a log, never changed."""

    class Action(models.TextChoices):
        RETIRE = "retire", "Retired"
        REINSTATE = "reinstate", "Put back into battles"

    rows = "Retirement records"

    model = models.ForeignKey(ModelEntry, on_delete=models.PROTECT, related_name="retirements")
    action = models.CharField(max_length=16, choices=Action.choices)
    by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["-at", "-pk"]

    def __str__(self) -> str:
        return f"{self.model}: {self.get_action_display()} {self.at:%Y-%m-%d}"
