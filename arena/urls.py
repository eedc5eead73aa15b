from __future__ import annotations

from allauth.account import views as account_views
from django.contrib import admin
from django.urls import URLPattern, include, path

from accounts.ratelimits import View, limit_view
from arena.battles import views
from arena.compare import views as compare_views
from arena.datasets import views as datasets_views
from arena.evals import views as evals_views
from arena.images import views as images_views
from ranking import views as ranking_views


def _board(
    route: str, page: View | None = None, *, name: str = "", **formats: View
) -> list[URLPattern]:
    """A board's page at ``route/`` (where it has one) and its data at ``route.<format>``, named
    ``name`` (``route`` with dashes for slashes) and ``name-<format>``."""
    name = name or route.replace("/", "-")
    pages = [path(f"{route}/", page, name=name)] if page else []
    return pages + [
        path(f"{route}.{fmt}", view, name=f"{name}-{fmt}") for fmt, view in formats.items()
    ]


# The leaderboard's data, the current board's and a stored snapshot's, from the same views.
_LEADERBOARD_DATA = {"json": ranking_views.leaderboard_json, "csv": ranking_views.leaderboard_csv}


def _limited(
    route: str, view: View, name: str, action: str, *, account_field: str | None = None
) -> URLPattern:
    """allauth's view at its own path under accounts/ and its own name, behind our limits."""
    guarded = limit_view(action, account_field=account_field)(view)
    return path(f"accounts/{route}", guarded, name=name)


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
    *_board("leaderboard", ranking_views.leaderboard, **_LEADERBOARD_DATA),
    path("leaderboard/model/<path:name>/", ranking_views.model_page, name="leaderboard-model"),
    *_board(
        "leaderboard/judge", evals_views.leaderboard_judge, json=evals_views.leaderboard_judge_json
    ),
    *_board("calibration", evals_views.calibration_page, json=evals_views.calibration_json),
    path("datasets/audit/", datasets_views.audit_page, name="datasets-audit"),
    *_board("leaderboard/<int:snapshot_id>", name="snapshot", **_LEADERBOARD_DATA),
    # allauth's own paths and names, rate-limited; listed first, so they win over include().
    _limited("signup/", account_views.signup, "account_signup", "signup", account_field="email"),
    _limited("login/", account_views.login, "account_login", "login", account_field="login"),
    _limited(
        "password/reset/",
        account_views.password_reset,
        "account_reset_password",
        "password_reset",
        account_field="email",
    ),
    # A signed-in session's password checks: a stolen session must not make them an
    # unthrottled oracle for the password (allauth's own limits allow several a minute).
    _limited("password/change/", account_views.password_change, "account_change_password", "login"),
    _limited("reauthenticate/", account_views.reauthenticate, "account_reauthenticate", "login"),
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
