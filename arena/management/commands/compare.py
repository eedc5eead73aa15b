from __future__ import annotations

from pathlib import Path

from asgiref.sync import async_to_sync
from django.core.management.base import BaseCommand, CommandError

from accounts.models import User
from arena.catalog.costs import cost_display, plain
from arena.catalog.models import ModelEntry
from arena.catalog.selectors import model_by_name
from arena.compare import exports, services
from arena.compare.totals import run_totals
from arena.core.errors import ServiceError
from arena.judges import rubric
from arena.management.files import IMAGE_HELP, file_read, image_files_store


class Command(BaseCommand):
    help = (
        "Run one prompt on 2-8 named models side by side (compare mode) and have the blind "
        "judge score them; one line per model, then the judge's lines. The run is saved."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("prompt")
        parser.add_argument("--models", nargs="+", required=True, metavar="NAME",
                            help="public names of the models")  # fmt: skip
        parser.add_argument(
            "--judge", help="the judge's public name (default: COMPARE_JUDGE_MODEL)"
        )
        parser.add_argument("--no-judge", action="store_true")
        parser.add_argument("--system", default="")
        parser.add_argument("--temperature", type=float)
        parser.add_argument("--top-p", type=float)
        parser.add_argument("--max-tokens", type=int)
        parser.add_argument(
            "--image",
            action="append",
            type=Path,
            default=[],
            metavar="PATH",
            help=IMAGE_HELP,
        )
        parser.add_argument("--seed", type=int)
        parser.add_argument("--rubric", type=Path, help="a rubric as JSON or YAML")
        parser.add_argument("--user", help="who runs it (default: the first superuser)")
        parser.add_argument("--json", action="store_true", help="print the run's JSON export")

    def handle(self, *args, **o) -> None:
        user = self._user(o["user"])
        models = [self._model(name) for name in o["models"]]
        judge = None
        if not o["no_judge"]:
            judge = self._model(o["judge"]) if o["judge"] else services.default_judge()
        try:
            images = image_files_store(user=user, paths=o["image"])
            run = services.compare_start(
                user=user,
                prompt=o["prompt"],
                model_ids=[m.pk for m in models],
                system_prompt=o["system"],
                params={
                    "temperature": o["temperature"],
                    "top_p": o["top_p"],
                    "max_tokens": o["max_tokens"],
                },  # fmt: skip
                judge_id=judge.pk if judge else None,
                seed=o["seed"],
                rubric=self._rubric(o["rubric"]) if o["rubric"] else None,
                images=images,
            )
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        run = async_to_sync(services.compare_execute)(run.pk)
        if o["json"]:
            self.stdout.write(exports.as_json(run))
            return
        if all(m.backend == ModelEntry.Backend.MOCK for m in models):
            self.stdout.write("mock models: generated answers and example pricing, no keys used")
        for answer in run.answers.select_related("model"):
            self.stdout.write(self._line(answer))
        self._judge_lines(run)
        self.stdout.write(self._total_line(run))

    def _total_line(self, run) -> str:
        """The run's total cost with its status, the answers' and the judge's parts."""
        totals = run_totals(run=run)

        def shown(total) -> str:
            return f"${plain(total.amount)} ({total.status or 'none'})"

        line = f"total {shown(totals.run)}: answers {shown(totals.answers)}"
        if run.judge is not None:
            est = " estimated" if totals.judge_tokens_estimated else ""
            line += (
                f", judge {shown(totals.judge)} over {totals.judge_calls} calls, "
                f"{totals.judge_input_tokens} in / {totals.judge_output_tokens} out tokens{est}"
            )
        return line

    def _line(self, a) -> str:
        tokens = f"{a.output_tokens}{' (estimated)' if a.tokens_estimated else ''}"
        cost = cost_display(model=a.model, cost=a.cost, cost_status=a.cost_status)
        ttft = f"{a.ttft_ms:.0f}" if a.ttft_ms is not None else "-"
        line = (
            f"{a.label} {a.model.public_name}: ttft_ms={ttft} total_ms={a.total_ms or 0:.0f} "
            f"tokens={tokens} cost={cost} finish={a.finish_reason or '-'}"
            f"{' (truncated)' if a.truncated else ''} status={a.status}"
        )
        return line + (f" error={a.error_message}" if a.error_message else "")

    def _judge_lines(self, run) -> None:
        if run.judge is None:
            return
        verdict = run.verdict
        names = {a.label: a.model.public_name for a in run.answers.select_related("model")}
        winner = verdict.get("winner", "")
        shown = names.get(winner, "tie" if winner == "tie" else "-")
        self.stdout.write(f"judge {run.judge.public_name}: winner {shown}")
        if verdict.get("mock"):
            self.stdout.write(f"judge: {verdict['mock']}")
        for answer in run.answers.select_related("model"):
            score = verdict.get("overall", {}).get(answer.label)
            detail = answer.not_judged or (f"overall {score:.2f}" if score is not None else "-")
            self.stdout.write(f"judge {answer.label} {answer.model.public_name}: {detail}")
        if verdict.get("scope"):
            self.stdout.write(f"judge: {verdict['scope']}")
        if verdict.get("missing"):
            self.stdout.write(f"judge: criteria not scored: {', '.join(verdict['missing'])}")
        if verdict.get("head_to_head"):
            self.stdout.write(f"judge: head-to-head, both orders: {verdict['head_to_head']}")
        if verdict.get("temperature_dropped"):
            self.stdout.write("judge: the judge rejected temperature 0; asked without it")

    def _user(self, email: str | None) -> User:
        users = User.objects.filter(is_active=True)
        user = (
            users.filter(email=email).first() if email else users.filter(is_superuser=True).first()
        )
        if user is None:
            raise CommandError("No such user: pass --user EMAIL, or create a superuser first.")
        return user

    def _model(self, name: str) -> ModelEntry:
        model = model_by_name(name)
        if model is None:
            known = ", ".join(
                ModelEntry.objects.filter(active=True).values_list("public_name", flat=True)
            )
            raise CommandError(f"No model named {name!r}. Active models: {known}.")
        return model

    def _rubric(self, path: Path) -> object:
        try:
            return rubric.rubric_text(file_read(path, "--rubric"))  # checked by compare_start
        except rubric.RubricError as exc:
            raise CommandError(f"--rubric: {exc}") from None
