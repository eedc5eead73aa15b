from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from arena.backends.openrouter import CATALOG_URL
from arena.catalog.services import openrouter_sync
from arena.core.errors import ServiceError


class Command(BaseCommand):
    help = (
        "Read which shared parameters (temperature, top_p, max_tokens) each OpenRouter model "
        "supports from OpenRouter's models catalog, and set them on the models. The catalog "
        "is cached for an hour; --fresh reads it again."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--url", default=CATALOG_URL, help=f"the catalog (default {CATALOG_URL})"
        )
        parser.add_argument("--fresh", action="store_true", help="read it again, not from cache")

    def handle(self, *args, url: str, fresh: bool, **options) -> None:
        try:
            lines = openrouter_sync(url=url, fresh=fresh)
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        for line in lines:
            self.stdout.write(line)
