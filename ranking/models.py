from __future__ import annotations

from django.db import models


class LeaderboardSnapshot(models.Model):
    """One computed leaderboard: versioned, reproducible from the vote log, never edited."""

    computed_at = models.DateTimeField(auto_now_add=True, db_index=True)
    cutoff = models.DateTimeField(help_text="Votes cast up to this time were considered")
    method = models.CharField(max_length=16, help_text="Interval method: bootstrap or sandwich")
    settings = models.JSONField(help_text="Everything that shapes the numbers, seed included")
    votes_used = models.PositiveIntegerField()
    votes_excluded = models.JSONField(default=dict, help_text="Votes left out, per reason")
    includes_simulated = models.BooleanField(default=False)
    style_coefs = models.JSONField(default=dict, blank=True)
    notes = models.JSONField(default=list, blank=True)
    # Per board ("all", "category:x", ...): head-to-head tallies (ranking.pairwise).
    pairs = models.JSONField(default=dict, blank=True)
    # Per model: answers in counted votes and how many of them were cut at the length limit.
    model_stats = models.JSONField(default=dict, blank=True)
    content_hash = models.CharField(max_length=64, help_text="SHA-256 of the rows")
    duration_s = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["-computed_at"]
        get_latest_by = "computed_at"

    def __str__(self) -> str:
        return f"Snapshot {self.pk} ({self.computed_at:%Y-%m-%d %H:%M})"


class LeaderboardRow(models.Model):
    class Section(models.TextChoices):
        RANKED = "ranked"
        PROVISIONAL = "provisional", "Not enough votes yet"
        DISCONNECTED = "disconnected", "Never compared with the ranked models"
        RETIRED = "retired"

    snapshot = models.ForeignKey(LeaderboardSnapshot, on_delete=models.CASCADE, related_name="rows")
    view = models.CharField(max_length=8)  # raw | style
    breakdown = models.CharField(max_length=120, default="all")  # all | category:x | language:x
    model_name = models.CharField(max_length=100)
    organisation = models.CharField(max_length=100, blank=True, default="")
    section = models.CharField(max_length=16, choices=Section.choices)
    score = models.FloatField(null=True)
    lower = models.FloatField(null=True)
    upper = models.FloatField(null=True)
    rank_best = models.PositiveIntegerField(null=True)
    rank_worst = models.PositiveIntegerField(null=True)
    votes = models.PositiveIntegerField()
    wins = models.PositiveIntegerField(default=0)
    losses = models.PositiveIntegerField(default=0)
    ties = models.PositiveIntegerField(default=0)
    both_bad = models.PositiveIntegerField(default=0)
    both_bad_rate = models.FloatField(null=True)
    # The variant and its exposure (docs/publication.md): its line, whether it ran as a preview,
    # when it was retired; its share of the battles drawn up to the cutoff and its share under
    # active sampling from this snapshot (each sums to 1 over a snapshot's models).
    line = models.CharField(max_length=100, blank=True, default="")
    preview = models.BooleanField(default=False)
    retired_at = models.DateTimeField(null=True, blank=True)
    battle_share = models.FloatField(null=True)
    sampling_weight = models.FloatField(null=True)

    # A model's place: its score, interval, rank range and the votes behind them.
    RANK_FIELDS = ("score", "lower", "upper", "rank_best", "rank_worst", "votes")
    # A row's columns in the public JSON and CSV downloads, in this order.
    EXPORT_FIELDS = (
        "model_name",
        "organisation",
        "section",
        *RANK_FIELDS,
        "wins",
        "losses",
        "ties",
        "both_bad",
        "both_bad_rate",
        "line",
        "preview",
        "retired_at",
        "battle_share",
        "sampling_weight",
    )

    class Meta:
        ordering = ["snapshot", "view", "breakdown", "rank_best", "-score", "model_name"]
        indexes = [
            models.Index(fields=["snapshot", "view", "breakdown"]),
            # A model's page reads its rows across every snapshot.
            models.Index(fields=["model_name", "view", "breakdown"]),
        ]

    def __str__(self) -> str:
        return f"{self.model_name} ({self.view}, {self.breakdown})"
