from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from arena.core.errors import ServiceError
from arena.core.roles import app_role_grant


class Command(BaseCommand):
    help = (
        "Grant a PostgreSQL role what the app needs, run as the tables' owner after migrate, so "
        "the app can connect as a role that cannot disable the vote log's triggers, truncate or "
        "drop tables (docs/vote_log.md)."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("role", help="The role the app connects as (it must exist).")

    def handle(self, *args, role: str, **options) -> None:
        try:
            statements = app_role_grant(role=role)
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(f"Granted {role!r} the app's privileges ({len(statements)} statements).")
