from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from arena import views
from ranking import views as ranking_views

urlpatterns = [
    path("", views.arena_page, name="arena"),
    path("api/prompts/random/", views.random_prompt, name="random-prompt"),
    path("leaderboard/", ranking_views.leaderboard, name="leaderboard"),
    path("leaderboard.json", ranking_views.leaderboard_json, name="leaderboard-json"),
    path("leaderboard.csv", ranking_views.leaderboard_csv, name="leaderboard-csv"),
    path(
        "leaderboard/<int:snapshot_id>.json", ranking_views.leaderboard_json, name="snapshot-json"
    ),
    path("leaderboard/<int:snapshot_id>.csv", ranking_views.leaderboard_csv, name="snapshot-csv"),
    path("accounts/", include("allauth.urls")),
    path("admin/", admin.site.urls),
]
