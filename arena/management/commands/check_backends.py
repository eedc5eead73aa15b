"""Probe every active model's backend, replica by replica; exit status 1 if any is down."""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandError, CommandParser

from arena.backends.outbound import shown_url
from arena.catalog.selectors import models_active
from arena.generation import probes


def health_line(item: probes.ReplicaHealth) -> str:
    ttft = "-" if item.ttft_ms is None else f"{item.ttft_ms:.0f} ms"
    # A replica URL is shown without any credential an older row may carry in it.
    replica = shown_url(item.replica) if item.replica else "(adapter default URL)"
    parts = [item.model, replica, "up" if item.up else "down", ttft]
    if item.error_kind:
        parts.append(f"{item.error_kind}: {item.error_message}")
    if item.note:
        parts.append(item.note)
    return "  ".join(parts)


class Command(BaseCommand):
    help = (
        'Send a tiny request ("ping", 8 tokens) to every replica of every active model and '
        "print one line each: model, replica, up/down, TTFT, error. Exit status 1 if any is down."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--timeout",
            type=float,
            default=probes.PING_TIMEOUT_S,
            help="Seconds each probe may take.",
        )

    def handle(self, *args, timeout: float, **options) -> None:
        if timeout <= 0:
            raise CommandError("--timeout must be more than 0 seconds.")
        models = list(models_active())
        if not models:
            self.stdout.write("No active models.")
            return
        results = probes.probe_models(models=models, timeout_s=timeout)
        for item in results:
            self.stdout.write(health_line(item))
        down = sum(not item.up for item in results)
        if down:
            self.stderr.write(f"{down} of {len(results)} backend(s) down.")
            sys.exit(1)
