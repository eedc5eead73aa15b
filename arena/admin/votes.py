"""Admin: read (never edit) the vote log; flag votes and review flags, each a new row."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.utils.text import Truncator

from arena.admin.common import (
    LogAdmin,
    ReadOnly,
    StaffReads,
    YesNoFilter,
    change_link,
    yes_no_filter,
)
from arena.admin.noted_actions import note_action
from arena.core.errors import ServiceError
from arena.integrity import selectors, services
from arena.integrity.models import VoteFlag
from arena.records.models import Vote


class FlagColumns:
    """Who raised a flag, and whether it still keeps its vote out."""

    @admin.display(description="by", ordering="created_by__email")
    def by(self, flag: VoteFlag) -> str:
        return str(flag.created_by) if flag.created_by_id else "system"

    @admin.display(description="open", boolean=True)
    def open(self, flag: VoteFlag) -> bool | None:
        # Reviews are neither open nor closed; only a flag row can keep a vote out.
        return flag.is_open if flag.action == VoteFlag.Action.FLAG else None


class VoteFlagInline(FlagColumns, StaffReads, ReadOnly, admin.TabularInline):
    model = VoteFlag
    fk_name = "vote"
    fields = ("flag_link", "reason", "action", "review_of", "detail", "by", "created_at", "open")
    readonly_fields = fields
    ordering = ("created_at", "pk")
    extra = 0
    verbose_name = "flag or review"
    verbose_name_plural = "flags and reviews (append-only; review them from the flag list)"

    @admin.display(description="flag")
    def flag_link(self, flag: VoteFlag) -> str:
        return change_link(flag, f"#{flag.pk}")

    def get_queryset(self, request: HttpRequest) -> QuerySet[VoteFlag]:
        qs = super().get_queryset(request).select_related("created_by")
        return qs.annotate(is_open=selectors.flag_open())


CountedFilter = yes_no_filter(
    "counted", labels=("Counted", "Kept out by an open flag"), no_lookup="is_flagged"
)


@admin.register(Vote)
class VoteAdmin(LogAdmin, admin.ModelAdmin):
    """The vote log is append-only: staff may read it, nobody may add, edit or delete here.
    Flagging a vote adds a VoteFlag row beside it; the vote itself is never touched."""

    list_display = (
        "id",
        "created_at",
        "rater",
        "model_a",
        "model_b",
        "choice",
        "decision_ms",
        "prompt_category",
        "prompt_language",
        "counted",
    )
    list_filter = (CountedFilter, "choice", "prompt_category", "prompt_language", "rater_pool")
    list_select_related = ("rater", "model_a", "model_b")
    date_hierarchy = "created_at"
    # Counting a large log on every page load is slow and tells nobody anything.
    show_full_result_count = False
    inlines = (VoteFlagInline,)
    actions = ("flag_votes",)

    def has_flag_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("arena.add_voteflag")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Vote]:
        return super().get_queryset(request).annotate(is_flagged=selectors.vote_flagged())

    @admin.display(description="counted", boolean=True, ordering="is_flagged")
    def counted(self, vote: Vote) -> bool:
        return not vote.is_flagged

    @admin.action(description="Flag selected votes", permissions=["flag"])
    def flag_votes(self, request: HttpRequest, queryset: QuerySet[Vote]) -> TemplateResponse | None:
        def apply(note: str) -> None:
            with transaction.atomic():
                votes = list(queryset)
                for vote in votes:
                    services.vote_flag(vote=vote, by=request.user, detail=note)
            self.message_user(
                request,
                f"{len(votes)} vote(s) flagged; they do not count until the flag is lifted.",
                messages.SUCCESS,
            )

        return note_action(
            self,
            request,
            queryset,
            title="Flag selected votes",
            intro="Each vote below gets an admin flag and stops counting on the leaderboard; "
            "the vote itself stays in the log unchanged.",
            submit="Flag",
            apply=apply,
            help_text="Why these votes should not count; shown to whoever reviews the flag.",
            max_length=2000,
        )


class FlagOpenFilter(YesNoFilter):
    title = "state"
    parameter_name = "open"
    labels = ("Open flags (vote not counted)", "Lifted flags")

    def chosen(self, queryset: QuerySet[VoteFlag], yes: bool) -> QuerySet[VoteFlag]:
        return queryset.filter(action=VoteFlag.Action.FLAG, is_open=yes)


class ReviewInline(FlagColumns, StaffReads, ReadOnly, admin.TabularInline):
    model = VoteFlag
    fk_name = "review_of"
    fields = ("action", "detail", "by", "created_at")
    readonly_fields = fields
    ordering = ("created_at", "pk")
    extra = 0
    verbose_name = "review"
    verbose_name_plural = "reviews"


@admin.register(VoteFlag)
class VoteFlagAdmin(FlagColumns, LogAdmin, admin.ModelAdmin):
    """Flags and their reviews: an append-only log. The actions add review rows through the
    services; no row is ever edited or deleted here."""

    list_display = (
        "id",
        "vote_link",
        "rater",
        "reason",
        "action",
        "reviewed_flag",
        "by",
        "created_at",
        "open",
        "short_detail",
    )
    list_filter = (FlagOpenFilter, "reason", "action")
    list_select_related = ("vote__rater", "created_by")
    # "__exact" on the id compares as text, so an email typed in the box is no error.
    search_fields = ("vote__id__exact", "vote__rater__email")
    search_help_text = "A vote id, or (part of) the rater's email."
    date_hierarchy = "created_at"
    fields = (
        "vote_link",
        "rater",
        "reason",
        "action",
        "reviewed_flag",
        "detail",
        "by",
        "created_at",
        "open",
    )
    readonly_fields = fields
    inlines = (ReviewInline,)
    actions = ("confirm_flags", "lift_flags")

    def has_review_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("arena.add_voteflag")

    def get_queryset(self, request: HttpRequest) -> QuerySet[VoteFlag]:
        return (
            super()
            .get_queryset(request)
            .annotate(is_lifted=selectors.flag_lifted(), is_open=selectors.flag_open())
        )

    @admin.display(description="vote", ordering="vote")
    def vote_link(self, flag: VoteFlag) -> str:
        return change_link(flag.vote, f"Vote {flag.vote_id}")

    @admin.display(description="rater", ordering="vote__rater__email")
    def rater(self, flag: VoteFlag) -> str:
        return str(flag.vote.rater)

    @admin.display(description="reviews flag")
    def reviewed_flag(self, flag: VoteFlag) -> str:
        return change_link(flag.review_of, f"#{flag.review_of_id}") if flag.review_of_id else ""

    @admin.display(description="detail")
    def short_detail(self, flag: VoteFlag) -> str:
        return Truncator(flag.detail).chars(80)

    @admin.action(description="Confirm selected flags", permissions=["review"])
    def confirm_flags(
        self, request: HttpRequest, queryset: QuerySet[VoteFlag]
    ) -> TemplateResponse | None:
        return self._review(request, queryset, VoteFlag.Action.CONFIRM)

    @admin.action(description="Lift selected flags", permissions=["review"])
    def lift_flags(
        self, request: HttpRequest, queryset: QuerySet[VoteFlag]
    ) -> TemplateResponse | None:
        return self._review(request, queryset, VoteFlag.Action.LIFT)

    def _review(
        self, request: HttpRequest, queryset: QuerySet[VoteFlag], action: str
    ) -> TemplateResponse | None:
        verb = "confirmed" if action == VoteFlag.Action.CONFIRM else "lifted"

        def apply(note: str) -> None:
            done = 0
            for flag in queryset.order_by("pk"):
                try:
                    services.flag_review(flag=flag, by=request.user, action=action, note=note)
                except ServiceError as exc:
                    self.message_user(
                        request,
                        f"Row {flag.pk} ({flag}) was not {verb}: {exc.message}",
                        messages.ERROR,
                    )
                    continue
                done += 1
                if action == VoteFlag.Action.CONFIRM and flag.is_lifted:
                    # A lift is final for counting; a later confirmation only records the view.
                    self.message_user(
                        request,
                        f"Flag {flag.pk} had already been lifted, so its vote still counts; "
                        "flag the vote again to keep it out.",
                        messages.WARNING,
                    )
            if done:
                outcome = (
                    "their votes stay out of the leaderboard"
                    if action == VoteFlag.Action.CONFIRM
                    else "their votes count again unless another flag on them is open"
                )
                self.message_user(request, f"{done} flag(s) {verb}; {outcome}.", messages.SUCCESS)

        return note_action(
            self,
            request,
            queryset,
            title=f"{'Confirm' if action == VoteFlag.Action.CONFIRM else 'Lift'} selected flags",
            intro=f"Each flag below will be {verb} by a new review row; the flag itself stays "
            "in the log unchanged. Only flags can be reviewed, not reviews.",
            submit="Confirm" if action == VoteFlag.Action.CONFIRM else "Lift",
            apply=apply,
            help_text="Why; recorded with the review.",
            max_length=2000,
        )
