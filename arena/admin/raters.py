"""Admin: users, and for raters their pool, ban state and measured quality.

Registered here rather than in ``accounts``, which stays a leaf: the ban and the counts come
from integrity.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse

from accounts.models import User
from arena.admin.common import yes_no_filter
from arena.admin.noted_actions import note_action
from arena.core.errors import ServiceError
from arena.integrity import selectors, services

BannedFilter = yes_no_filter(
    "banned", labels=("Banned", "Not banned"), no_lookup="banned_at__isnull"
)


@admin.register(User)
class UserAdmin(BaseUserAdmin):
    ordering = ("email",)
    list_display = (
        "email",
        "rater_pool",
        "banned",
        "gold_agreement",
        "vote_count",
        "flagged_vote_count",
        "is_staff",
        "is_active",
        "date_joined",
    )
    list_filter = ("rater_pool", BannedFilter, "is_staff", "is_active")
    search_fields = ("email", "first_name", "last_name")
    # Ban state changes only through the actions, so that a ban also flags the past votes.
    integrity_fields = (
        "banned_at",
        "ban_reason",
        "gold_agreement",
        "vote_count",
        "flagged_vote_count",
    )
    readonly_fields = ("terms_version", "terms_accepted_at", *integrity_fields)
    fieldsets = (
        (None, {"fields": ("email", "password")}),
        ("Rater", {"fields": ("rater_pool", "first_name", "last_name")}),
        ("Rater's terms", {"fields": ("terms_version", "terms_accepted_at")}),
        (
            "Integrity",
            {
                "fields": integrity_fields,
                "description": "Ban or unban from the list of users (actions), so that a ban "
                "also flags every past vote of the rater.",
            },
        ),
        ("Permissions", {"fields": ("is_active", "is_staff", "is_superuser", "groups")}),
        ("Dates", {"fields": ("last_login", "date_joined")}),
    )
    add_fieldsets = ((None, {"classes": ("wide",), "fields": ("email", "password1", "password2")}),)
    actions = ("ban_raters", "unban_raters")

    def get_queryset(self, request: HttpRequest) -> QuerySet[User]:
        return selectors.raters_with_vote_counts(super().get_queryset(request))

    @admin.display(description="banned", boolean=True, ordering="banned_at")
    def banned(self, user: User) -> bool:
        return user.is_banned

    @admin.display(description="gold agreement")
    def gold_agreement(self, user: User) -> str:
        # One query per row; a page is at most list_per_page raters.
        return str(selectors.rater_gold_agreement(rater=user))

    @admin.display(description="votes", ordering="votes_total")
    def vote_count(self, user: User) -> int:
        return user.votes_total

    @admin.display(description="flagged votes", ordering="votes_flagged")
    def flagged_vote_count(self, user: User) -> int:
        return user.votes_flagged

    @admin.action(description="Ban selected raters", permissions=["change"])
    def ban_raters(self, request: HttpRequest, queryset: QuerySet[User]) -> TemplateResponse | None:
        def apply(reason: str) -> None:
            banned = flagged = 0
            for rater in queryset.order_by("pk"):
                try:
                    flagged += services.rater_ban(rater=rater, by=request.user, reason=reason)
                except ServiceError as exc:
                    self.message_user(request, exc.message, messages.ERROR)
                    continue
                banned += 1
            if banned:
                self.message_user(
                    request,
                    f"{banned} rater(s) banned; {flagged} past vote(s) flagged and no longer "
                    "counted.",
                    messages.SUCCESS,
                )

        return note_action(
            self,
            request,
            queryset,
            title="Ban selected raters",
            intro="Banned raters can no longer start battles or vote, and every vote they have "
            "cast is flagged so it stops counting; nothing is deleted.",
            submit="Ban",
            apply=apply,
            label="Reason",
            help_text="Recorded on the account and on each flag.",
        )

    @admin.action(description="Unban selected raters", permissions=["change"])
    def unban_raters(self, request: HttpRequest, queryset: QuerySet[User]) -> None:
        banned = [u for u in queryset if u.is_banned]
        for rater in banned:
            services.rater_unban(rater=rater)
        if not banned:
            self.message_user(request, "None of the selected raters was banned.", messages.WARNING)
            return
        self.message_user(
            request,
            f"{len(banned)} rater(s) unbanned. Their past votes stay flagged until an admin "
            "lifts the flags.",
            messages.SUCCESS,
        )
