from __future__ import annotations

from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponseRedirect
from django.urls import path, reverse

from ranking import services, snapshots
from ranking.models import LeaderboardRow, LeaderboardSnapshot


class RowInline(admin.TabularInline):
    model = LeaderboardRow
    fields = (
        "view",
        "breakdown",
        "section",
        "model_name",
        *LeaderboardRow.RANK_FIELDS,
        "both_bad_rate",
    )
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def get_queryset(self, request):
        return snapshots.rows_overall(rows=super().get_queryset(request))


@admin.register(LeaderboardSnapshot)
class LeaderboardSnapshotAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "computed_at",
        "cutoff",
        "method",
        "votes_used",
        "votes_excluded",
        "includes_simulated",
        "duration_s",
    )
    readonly_fields = [f.name for f in LeaderboardSnapshot._meta.fields]
    inlines = (RowInline,)
    change_list_template = "admin/ranking/leaderboardsnapshot/change_list.html"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def get_urls(self):
        return [
            path(
                "recompute/",
                self.admin_site.admin_view(self.recompute_view),
                name="ranking_leaderboardsnapshot_recompute",
            ),
            *super().get_urls(),
        ]

    def recompute_view(self, request: HttpRequest) -> HttpResponseRedirect:
        target = reverse("admin:ranking_leaderboardsnapshot_changelist")
        if request.method != "POST":
            return HttpResponseRedirect(target)
        if not request.user.has_perm("ranking.view_leaderboardsnapshot"):
            messages.error(request, "You may not recompute the leaderboard.")
            return HttpResponseRedirect(target)
        try:
            snapshot = services.leaderboard_recompute()
        except Exception as exc:  # shown to the admin; the previous snapshot stays published
            messages.error(request, f"Recompute failed, the previous snapshot stays: {exc}")
        else:
            messages.success(
                request, f"Snapshot {snapshot.pk} computed from {snapshot.votes_used} votes."
            )
        return HttpResponseRedirect(target)
