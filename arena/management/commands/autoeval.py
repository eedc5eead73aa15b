from __future__ import annotations

import json
from decimal import Decimal, InvalidOperation
from pathlib import Path

from asgiref.sync import async_to_sync, sync_to_async
from django.core.management.base import BaseCommand, CommandError

from accounts.models import User
from arena.catalog.models import ModelEntry
from arena.catalog.selectors import model_by_name
from arena.core.errors import ServiceError
from arena.evals import running, selectors, services
from arena.management.files import IMAGE_HELP, image_files_store
from ranking.judged import interval_doubt


class Command(BaseCommand):
    help = (
        "An evaluation run: every model's answer to each prompt compared with the baseline's by "
        "the judge, in both orders; prints progress, then the judge leaderboard (an LLM judge's "
        "opinion, never mixed with the human votes)."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--prompts",
            required=True,
            help="a JSONL file of {text, category}, or curated prompts as "
            "'category=C,language=L,limit=N' (any part may be left out; 'all' for every one)",
        )
        parser.add_argument("--models", nargs="+", required=True, metavar="NAME")
        parser.add_argument("--baseline", required=True, metavar="NAME")
        parser.add_argument("--judge", required=True, metavar="NAME")
        parser.add_argument("--budget", help="stop once the answers cost this many USD")
        parser.add_argument("--max-judge-calls", type=int)
        parser.add_argument(
            "--image", action="append", type=Path, default=[], metavar="PATH", help=IMAGE_HELP
        )
        parser.add_argument("--seed", type=int)
        parser.add_argument("--name", default="")
        parser.add_argument("--user", help="who runs it (default: the first superuser)")
        parser.add_argument("--json", action="store_true")
        parser.add_argument(
            "--background",
            action="store_true",
            help="queue it on the workers and return (follow it in the admin)",
        )

    def handle(self, *args, **o) -> None:
        users = User.objects.filter(is_active=True)
        user = (
            users.filter(email=o["user"]).first()
            if o["user"]
            else users.filter(is_superuser=True).first()
        )
        if user is None:
            raise CommandError("No such user: pass --user EMAIL, or create a superuser first.")
        try:
            budget = Decimal(o["budget"]) if o["budget"] else None
        except InvalidOperation:
            raise CommandError("--budget must be a number of USD, e.g. 2.50") from None
        try:
            run = services.eval_create(
                user=user,
                name=o["name"] or f"autoeval of {', '.join(o['models'])}",
                prompts=self._prompts(o["prompts"]),
                model_ids=[self._model(name).pk for name in o["models"]],
                baseline_id=self._model(o["baseline"]).pk,
                judge_id=self._model(o["judge"]).pk,
                budget=budget,
                max_judge_calls=o["max_judge_calls"],
                seed=services.seed_from(o["seed"]),
                images=image_files_store(user=user, paths=o["image"]),
            )
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        export = f"python manage.py export_eval {run.pk} --format json|csv|arena"
        if o["background"]:
            services.eval_enqueue(run_id=run.pk)
            self.stdout.write(f"evaluation run {run.pk} queued; once it ends, export it: {export}")
            return
        quiet = o["json"]
        if not quiet:
            self.stderr.write(f"evaluation run {run.pk}")
        shown = [""]

        async def report(_run) -> None:
            if quiet:
                return
            p = await sync_to_async(selectors.progress)(run_id=run.pk)
            line = f"[{'#' * round(20 * p.share):<20}] {p.line()}"
            if line != shown[0]:  # a line a change, not one a unit of work
                shown[0] = line
                self.stderr.write("\r" + line, ending="")

        done = async_to_sync(running.eval_execute)(run.pk, on_progress=report)
        if not quiet:
            shown[0] = ""
            async_to_sync(report)(done)  # how it ended, in place of the time left
            self.stderr.write("")
        result = selectors.judge_board(run_id=run.pk)
        rows = sorted(result.board.rows, key=lambda r: -r.score)
        if quiet:
            self.stdout.write(json.dumps({
                "run": run.pk, "export": export, "status": done.status, "note": done.note,
                "judge": run.judge.public_name, "baseline": run.baseline.public_name,
                "position_bias": result.position_bias, "missing_verdicts": result.missing,
                "rows": [{"model": r.model, "score": r.score, "lower": r.lower,
                          "upper": r.upper, "rank": [r.rank_best, r.rank_worst],
                          "win_rate": result.win_rate.get(r.model),
                          "cost": str(result.cost.get(r.model, 0))} for r in rows],
            }, indent=2))  # fmt: skip
            return
        self.stdout.write(
            f"LLM judge {run.judge.public_name} vs baseline {run.baseline.public_name}"
        )
        if done.note:
            self.stdout.write(done.note)
        for r in rows:
            rate = result.win_rate.get(r.model)
            doubt = interval_doubt(r.votes, r.lower, r.upper)
            self.stdout.write(
                f"{r.model}: {r.score:.0f} [{r.lower:.0f}, {r.upper:.0f}] rank "
                f"{r.rank_best}-{r.rank_worst} win rate "
                f"{'-' if rate is None else f'{rate:.0%}'} cost ${result.cost.get(r.model, 0):.4f}"
                + (f" (not ranked: {doubt})" if doubt else "")
            )
        if note := selectors.style_unrankable(run=run):
            self.stdout.write(note)
        self.stdout.write(
            f"position bias {result.position_bias:.0%} over {result.pairs} pairs; "
            f"{result.missing} verdicts missing"
        )
        self.stdout.write(f"evaluation run {run.pk}; export it: {export}")

    def _prompts(self, query: str) -> list[tuple[str, str]]:
        path = Path(query)
        if path.suffix == ".jsonl" or path.exists():
            try:
                return services.prompts_from_file(path.read_bytes(), filename=path.name)
            except OSError as exc:
                raise CommandError(f"--prompts: {exc}") from None
            except ServiceError as exc:
                raise CommandError(f"--prompts: {exc.message}") from None
        parts = {}
        if query != "all":
            for item in query.split(","):
                key, _, value = item.partition("=")
                if key not in ("category", "language", "limit") or not value:
                    raise CommandError(f"--prompts: cannot read {item!r}")
                parts[key] = value
        limit = parts.get("limit", "0")
        if not limit.isdigit():
            raise CommandError(f"--prompts: limit must be a whole number, not {limit!r}")
        chosen = services.prompts_select(
            category=parts.get("category", ""),
            language=parts.get("language", ""),
            limit=int(limit),
        )
        return [(p.text, p.category) for p in chosen]

    def _model(self, name: str) -> ModelEntry:
        model = model_by_name(name)
        if model is None:
            raise CommandError(f"No model named {name!r}.")
        return model
