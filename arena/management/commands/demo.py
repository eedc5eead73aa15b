from __future__ import annotations

import io
import socket
from urllib.parse import urlsplit

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from arena.devtools.demo import (
    ADMIN_EMAIL,
    DEMO_JUDGE,
    OPERATORS_GROUP,
    RATER_EMAIL,
    demo_evaluate,
    demo_seed,
)
from ranking.refresher import refresher_start
from ranking.services import leaderboard_recompute


def port_free(host: str, port: int) -> bool:
    """Whether nothing listens on ``host:port`` just now."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        # Closed connections lingering in TIME_WAIT do not count; a listener does.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def allow_demo_hosts(replicas: list[str]) -> list[str]:
    """The demo's mock replicas run on this machine (or beside it, in compose): their hosts
    and loopback are allowed to backends explicitly, as an operator allows theirs with
    ARENA_BACKEND_ALLOW_HOSTS; other processes (Celery workers) need that variable set."""
    hosts = ["127.0.0.1", "localhost", "::1", *(urlsplit(u).hostname or "" for u in replicas)]
    allowed = list(getattr(settings, "ARENA_BACKEND_ALLOW_HOSTS", []) or [])
    allowed += [h for h in dict.fromkeys(hosts) if h and h not in allowed]
    settings.ARENA_BACKEND_ALLOW_HOSTS = allowed
    return allowed


def _tag_summary(output: str) -> str:
    """tag_prompts's closing lines (votes tagged; the labeller's texts and cost) in one."""
    lines = [line.strip() for line in output.splitlines()]
    return " ".join(line for line in lines if line.startswith(("Tagged", "Labeller:")))


class Command(BaseCommand):
    help = "Migrate, seed demo data (idempotent) and serve the app on http://127.0.0.1:8000."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--no-serve", action="store_true", help="Seed only, do not serve.")
        parser.add_argument(
            "--mock-replicas",
            nargs="+",
            metavar="URL",
            help="Serve the demo models from these mock_backend replicas (OpenAI-compatible "
            "HTTP, e.g. http://mock:9100/v1) instead of in-process.",
        )

    def handle(
        self,
        *args,
        port: int,
        host: str,
        no_serve: bool,
        mock_replicas: list[str] | None,
        **options,
    ) -> None:
        if not no_serve and not port_free(host, port):
            # Checked before seeding: seeding again would reset the passwords a running demo
            # printed, and then serving would fail on the port anyway.
            raise CommandError(
                f"{host}:{port} is in use (is another demo running?). Stop it, or pass "
                "--port to serve on another, or --no-serve to only seed."
            )
        call_command("migrate", interactive=False, verbosity=0)
        allow_demo_hosts(mock_replicas or [])
        seed = demo_seed(mock_replicas=mock_replicas)
        if not settings.TAGGER_MODEL:  # the mock judge labels the demo's prompts, as votes come
            settings.TAGGER_MODEL = DEMO_JUDGE
        tagged = io.StringIO()
        call_command("tag_prompts", "--quiet", stdout=tagged)
        snapshot = leaderboard_recompute(include_simulated=True)
        run, judged = demo_evaluate()
        url = f"http://{host}:{port}/"
        self.stdout.write(
            f"Demo data ready: {seed.models} mock models; prompts: {seed.prompts.summary()}\n"
            f"  manage.py tag_prompts: {_tag_summary(tagged.getvalue())}\n"
            f"  Leaderboard snapshot {snapshot.pk} from {snapshot.votes_used} votes "
            f"({seed.simulated_votes or 'no new'} simulated votes added; marked as simulated)\n"
            f"  Evaluation run {run.pk} ({run.status}; judge tab of the leaderboard) and "
            f"{judged or 'no new'} calibration verdicts on simulated battles (/calibration/)\n"
            f"  Rater: {RATER_EMAIL} / {seed.rater_password}\n"
            f"  Admin: {ADMIN_EMAIL} / {seed.admin_password}   ({url}admin/)\n"
            f"  Staff who run the arena: add them to the group {OPERATORS_GROUP!r} (compare, "
            "evaluation runs, calibration, the pools page); the staff flag alone opens none\n"
            "  (Passwords are new on every run.)"
        )
        if no_serve:
            return
        # No beat here: the server keeps the leaderboard current itself as votes come in.
        if refresher_start(every_s=settings.RANKING_REFRESH_S):
            self.stdout.write(
                f"  The leaderboard is recomputed every {settings.RANKING_REFRESH_S:g} s when "
                "new votes have come in (RANKING_REFRESH_S)."
            )
        self.stdout.write(f"Serving on {url}  (Ctrl+C to stop)")
        call_command("runserver", f"{host}:{port}", use_reloader=False, use_threading=True)
