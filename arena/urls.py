from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from arena import views

urlpatterns = [
    path("", views.arena_page, name="arena"),
    path("api/prompts/random/", views.random_prompt, name="random-prompt"),
    path("leaderboard/", views.leaderboard, name="leaderboard"),
    path("accounts/", include("allauth.urls")),
    path("admin/", admin.site.urls),
]
