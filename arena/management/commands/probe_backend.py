"""Send one streamed request to a backend and print what the arena would make of it.

The ``--json`` output is a stable contract (docs/backends.md): scripts and CI parse it.
"""

from __future__ import annotations

import json
import sys

from django.core.management.base import BaseCommand, CommandError, CommandParser

from arena.backends.registry import installed_kinds
from arena.core.text import estimate_tokens
from arena.generation import probes
from arena.generation.runner import StreamResult

SUCCESS = {"ok", "truncated"}


def probe_report(result: StreamResult, *, prompt: str) -> dict:
    """The documented JSON object for one probe: exactly these keys, always."""
    if result.error_kind:
        status = result.status  # partial (some text came) or error
    elif result.truncated:
        status = "truncated"
    else:
        status = "ok"
    input_tokens, output_tokens = result.input_tokens, result.output_tokens
    estimated = result.tokens_estimated or input_tokens is None or output_tokens is None
    if input_tokens is None:  # a server may report completion tokens only
        input_tokens = estimate_tokens(prompt)
    if output_tokens is None:
        output_tokens = estimate_tokens(result.text)
    return {
        "status": status,
        "text": result.text,
        "ttft_ms": None if result.ttft_ms is None else round(result.ttft_ms, 1),
        "total_ms": round(result.total_ms, 1),
        "finish_reason": result.finish_reason or None,
        "usage": {
            "input_tokens": int(input_tokens),
            "output_tokens": int(output_tokens),
            "estimated": bool(estimated),
        },
        "error": (
            {"kind": result.error_kind, "message": result.error_message}
            if result.error_kind
            else None
        ),
        "request_id": result.request_id or None,
    }


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f} ms"


class Command(BaseCommand):
    help = (
        "Send one streamed chat request to a backend through its adapter and the arena's "
        "runner, and print the normalised result. Exit status 0 for ok or truncated, else 1."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--kind", required=True, help="Backend kind, e.g. openai_compatible.")
        parser.add_argument(
            "--url", default="", help="Base URL up to and including /v1 (HTTP kinds)."
        )
        parser.add_argument("--model", required=True, help="The model id the backend knows.")
        parser.add_argument(
            "--api-key-env",
            help="Name of the environment variable holding the API key (never the key itself).",
        )
        parser.add_argument("--prompt", required=True, help="The user message to send.")
        parser.add_argument("--max-tokens", type=int, default=64)
        parser.add_argument(
            "--timeout", type=float, default=30.0, help="Seconds for the whole answer."
        )
        parser.add_argument(
            "--json",
            action="store_true",
            dest="as_json",
            help="Print exactly one JSON object (see docs/backends.md) and nothing else.",
        )

    def handle(
        self,
        *args,
        kind: str,
        url: str,
        model: str,
        api_key_env: str | None,
        prompt: str,
        max_tokens: int,
        timeout: float,
        as_json: bool,
        **options,
    ) -> None:
        kinds = installed_kinds()
        if kind not in kinds:
            raise CommandError(
                f"Unknown backend kind {kind!r}. Installed kinds: {', '.join(kinds)}."
            )
        if max_tokens < 1:
            raise CommandError("--max-tokens must be at least 1.")
        if timeout <= 0:
            raise CommandError("--timeout must be more than 0 seconds.")
        conf: dict = {}
        if url:
            conf["base_url"] = url
        if api_key_env:
            conf["api_key_env"] = api_key_env
        sent = probes.Probe(kind, conf, model, prompt, max_tokens, timeout)
        result = probes.run(probes.probe(sent))
        report = probe_report(result, prompt=prompt)
        if as_json:
            self.stdout.write(json.dumps(report))
        else:
            self._summary(report)
        if report["status"] not in SUCCESS:
            # Like `migrate --check`: a failed probe is an outcome, not a usage error.
            sys.exit(1)

    def _summary(self, report: dict) -> None:
        usage = report["usage"]
        lines = [
            f"status:        {report['status']}",
            f"finish reason: {report['finish_reason'] or '-'}",
            f"TTFT:          {_ms(report['ttft_ms'])}",
            f"total:         {_ms(report['total_ms'])}",
            f"tokens:        {usage['input_tokens']} in, {usage['output_tokens']} out"
            + (" (estimated)" if usage["estimated"] else ""),
            f"request id:    {report['request_id'] or '-'}",
        ]
        if report["error"]:
            lines.append(f"error:         {report['error']['kind']}: {report['error']['message']}")
        lines.append("text:")
        lines += [f"  {line}" for line in (report["text"] or "(none)").splitlines()]
        self.stdout.write("\n".join(lines))
