from __future__ import annotations

from allauth.account import views as account_views
from django.contrib import admin
from django.urls import include, path

from accounts.ratelimits import limit_view
from arena.battles import views
from arena.compare import views as compare_views
from arena.datasets import views as datasets_views
from arena.evals import views as evals_views
from arena.images import views as images_views
from ranking import views as ranking_views

urlpatterns = [
    path("", views.arena_page, name="arena"),
    path("api/prompts/random/", views.random_prompt, name="random-prompt"),
    path("terms/accept/", views.terms_accept_view, name="terms-accept"),
    path("images/", images_views.image_upload, name="image-upload"),
    path("images/<str:sha256>/", images_views.image_view, name="image"),
    path("compare/", compare_views.compare_page, name="compare"),
    path("compare/history/", compare_views.history, name="compare-history"),
    path("compare/<uuid:run_id>/", compare_views.run_page, name="compare-run"),
    path("compare/<uuid:run_id>/events", compare_views.run_events, name="compare-events"),
    path("compare/<uuid:run_id>/cancel", compare_views.run_cancel, name="compare-cancel"),
    path(
        "compare/<uuid:run_id>/export.<str:fmt>",
        compare_views.run_export,
        name="compare-export",
    ),
    path("leaderboard/", ranking_views.leaderboard, name="leaderboard"),
    path("leaderboard/model/<path:name>/", ranking_views.model_page, name="leaderboard-model"),
    path("leaderboard/judge/", evals_views.leaderboard_judge, name="leaderboard-judge"),
    path(
        "leaderboard/judge.json", evals_views.leaderboard_judge_json, name="leaderboard-judge-json"
    ),
    path("calibration/", evals_views.calibration_page, name="calibration"),
    path("calibration.json", evals_views.calibration_json, name="calibration-json"),
    path("datasets/audit/", datasets_views.audit_page, name="datasets-audit"),
    path("leaderboard.json", ranking_views.leaderboard_json, name="leaderboard-json"),
    path("leaderboard.csv", ranking_views.leaderboard_csv, name="leaderboard-csv"),
    path(
        "leaderboard/<int:snapshot_id>.json", ranking_views.leaderboard_json, name="snapshot-json"
    ),
    path("leaderboard/<int:snapshot_id>.csv", ranking_views.leaderboard_csv, name="snapshot-csv"),
    # allauth's own paths and names, rate-limited; listed first, so they win over include().
    path(
        "accounts/signup/",
        limit_view("signup", account_field="email")(account_views.signup),
        name="account_signup",
    ),
    path(
        "accounts/login/",
        limit_view("login", account_field="login")(account_views.login),
        name="account_login",
    ),
    path(
        "accounts/password/reset/",
        limit_view("password_reset", account_field="email")(account_views.password_reset),
        name="account_reset_password",
    ),
    # A signed-in session's password checks: a stolen session must not make them an
    # unthrottled oracle for the password (allauth's own limits allow several a minute).
    path(
        "accounts/password/change/",
        limit_view("login")(account_views.password_change),
        name="account_change_password",
    ),
    path(
        "accounts/reauthenticate/",
        limit_view("login")(account_views.reauthenticate),
        name="account_reauthenticate",
    ),
    path("accounts/", include("allauth.urls")),
    # The admin's sign-in is a second door to the same accounts: the same limits and the same
    # counters as allauth's (a guess here uses up the account's allowance there too), answered
    # with the same 429. Its form names the account in "username". Listed before admin.site.urls
    # so these win; reverse("admin:login") still gives this path. The admin's password change
    # checks the old password, as allauth's does.
    path("admin/login/", limit_view("login", account_field="username")(admin.site.login)),
    path(
        "admin/password_change/",
        admin.site.admin_view(limit_view("login")(admin.site.password_change), cacheable=True),
    ),
    path("admin/", admin.site.urls),
]

# Our rate limits raise Ratelimited (a PermissionDenied); allauth's call handler429 directly.
handler403 = "accounts.views.permission_denied"
handler429 = "accounts.views.rate_limited"
