from __future__ import annotations

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    # allauth's own app is "Accounts" in the admin too: one section of that name, not two.
    verbose_name = "Raters and staff"
    default_auto_field = "django.db.models.BigAutoField"
