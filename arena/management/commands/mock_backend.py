from __future__ import annotations

import asyncio
import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from arena.devtools.demo import demo_mock_config
from arena.devtools.mock_server import MockServer


class Command(BaseCommand):
    help = (
        "Serve the deterministic mock model as an OpenAI-compatible HTTP server "
        "(SSE streaming; /v1/models, /v1/chat/completions, /health)."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=9100)
        parser.add_argument(
            "--replicas", type=int, default=1, help="Serve N replicas on consecutive ports."
        )
        parser.add_argument(
            "--config",
            type=Path,
            help='JSON: {"model id": {"ttft_ms": .., "tokens_per_s": .., '
            '"answer_tokens": .., "style": .., "misbehaviour": ..}}',
        )
        parser.add_argument(
            "--demo",
            action="store_true",
            help="Serve the demo models' speeds and styles (see demo); a --config entry for "
            "the same model id replaces the demo's.",
        )
        parser.add_argument("--ttft-ms", type=float, default=150.0)
        parser.add_argument("--tokens-per-s", type=float, default=60.0)
        parser.add_argument("--api-key-env", help="Require this environment variable's key.")

    def handle(
        self,
        *args,
        host: str,
        port: int,
        replicas: int,
        config: Path | None,
        demo: bool,
        ttft_ms: float,
        tokens_per_s: float,
        api_key_env: str | None,
        **options,
    ) -> None:
        import os

        models: dict[str, dict] = demo_mock_config() if demo else {}
        if config is not None:
            try:
                models.update(json.loads(config.read_text()))
            except (OSError, ValueError) as exc:
                raise CommandError(f"Cannot read {config}: {exc}") from exc
            if not all(isinstance(v, dict) for v in models.values()):
                raise CommandError(f"{config} must hold a JSON object of model id -> settings.")
        api_key = os.environ.get(api_key_env) if api_key_env else None
        if api_key_env and not api_key:
            raise CommandError(f"The environment variable {api_key_env} is not set.")
        servers = [
            MockServer(
                host=host,
                port=port + i,
                models=models,
                default={"ttft_ms": ttft_ms, "tokens_per_s": tokens_per_s},
                api_key=api_key,
            )
            for i in range(replicas)
        ]

        async def run() -> None:
            for server in servers:
                await server.start()
                self.stdout.write(f"mock backend replica serving {server.url}")
            # Backends refuse loopback and private addresses unless an operator allows them.
            self.stdout.write(
                f"(models pointed here need ARENA_BACKEND_ALLOW_HOSTS to include {host})"
            )
            await asyncio.Event().wait()

        try:
            asyncio.run(run())
        except KeyboardInterrupt:
            pass
