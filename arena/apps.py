from __future__ import annotations

from django.apps import AppConfig


class ArenaConfig(AppConfig):
    name = "arena"
    default_auto_field = "django.db.models.BigAutoField"
