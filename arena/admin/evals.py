"""Admin: evaluation runs, started here (or with ``manage.py autoeval``), with their progress,
time left, and their judge leaderboard once done."""

from __future__ import annotations

import json

from django import forms
from django.contrib import admin
from django.db import transaction
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join

from arena.catalog.models import ModelEntry
from arena.core.errors import ServiceError
from arena.evals import exports, selectors, services
from arena.evals.models import EvalRun

RUN_EVALS = "arena.run_evals"


class EvalRunForm(forms.ModelForm):
    """A new run: curated prompts chosen by category / language (or an uploaded JSONL of
    {text, category}), the models, a baseline, a judge, one parameter set and a budget."""

    category = forms.CharField(required=False, help_text="curated prompts of this category")
    language = forms.CharField(required=False, help_text="and this language (e.g. en)")
    limit = forms.IntegerField(required=False, min_value=1, help_text="at most this many")
    prompts_file = forms.FileField(
        required=False,
        help_text='or a prompt file, as curated imports take: JSONL of {"text": ..., '
        '"category": ...}, or CSV',
    )
    params_json = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text='one parameter set for every model, as JSON, e.g. {"temperature": 0.7}',
    )
    seed = forms.IntegerField(required=False, help_text="empty: a random one (recorded)")

    class Meta:
        model = EvalRun
        fields = ("name", "contestants", "baseline", "judge", "budget", "max_judge_calls", "public")

    def clean_params_json(self) -> dict:
        raw = self.cleaned_data["params_json"].strip()
        try:
            params = json.loads(raw) if raw else {}
        except ValueError as exc:
            raise forms.ValidationError(f"Not JSON: {exc}") from None
        if not isinstance(params, dict):
            raise forms.ValidationError("The parameters are a JSON object.")
        return params

    def clean(self) -> dict:
        data = super().clean()
        if self.errors:
            return data
        try:
            if data.get("prompts_file"):
                prompts = services.prompts_from_file(
                    data["prompts_file"].read(), filename=data["prompts_file"].name
                )
            else:
                chosen = services.prompts_select(
                    category=data.get("category") or "",
                    language=data.get("language") or "",
                    limit=data.get("limit") or 0,
                )
                prompts = [(p.text, p.category) for p in chosen]
            run = EvalRun(
                baseline=data["baseline"],
                judge=data["judge"],
                params=data["params_json"],
                budget=data.get("budget"),
                max_judge_calls=data.get("max_judge_calls"),
            )
            contestants = [m.pk for m in data["contestants"]]
            services.eval_check(run=run, prompts=prompts, model_ids=contestants)
        except ServiceError as exc:
            raise forms.ValidationError(exc.message) from None
        data["prompts"] = prompts
        return data


@admin.register(EvalRun)
class EvalRunAdmin(admin.ModelAdmin):
    list_display = ("name", "status", "progress_bar", "judge", "baseline", "public", "created_at")
    list_filter = ("status", "public")
    list_select_related = ("judge", "baseline")
    readonly_fields = ("progress_bar", "judge_leaderboard")
    fields = ("name", "status", "note", "judge", "baseline", "budget", "max_judge_calls",
              "seed", "public", "progress_bar", "judge_leaderboard")  # fmt: skip

    def get_form(self, request: HttpRequest, obj: EvalRun | None = None, **kwargs):
        if obj is None:
            kwargs["form"] = EvalRunForm
            kwargs["fields"] = None
        return super().get_form(request, obj, **kwargs)

    def get_fields(self, request: HttpRequest, obj: EvalRun | None = None):
        if obj is None:
            return ("name", "category", "language", "limit", "prompts_file", "contestants",
                    "baseline", "judge", "params_json", "budget", "max_judge_calls", "seed",
                    "public")  # fmt: skip
        return self.fields

    def get_readonly_fields(self, request: HttpRequest, obj: EvalRun | None = None):
        if obj is None:
            return ()
        # Once made, a run is a record: only whether it is shown publicly may change.
        return [f for f in self.fields if f != "public"]

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name in ("baseline", "judge"):
            kwargs["queryset"] = ModelEntry.objects.order_by("public_name")
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def save_model(self, request: HttpRequest, obj: EvalRun, form, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        data = form.cleaned_data
        run = services.eval_create(
            user=request.user,
            name=data["name"],
            prompts=data["prompts"],
            model_ids=[m.pk for m in data["contestants"]],
            baseline_id=data["baseline"].pk,
            judge_id=data["judge"].pk,
            params=data["params_json"],
            budget=data["budget"],
            max_judge_calls=data["max_judge_calls"],
            seed=services.seed_from(data["seed"]),
            public=data["public"],
        )
        transaction.on_commit(lambda: services.eval_enqueue(run_id=run.pk))
        obj.pk = obj.id = run.pk  # what the admin logs and shows next is the run made

    def save_related(self, request, form, formsets, change: bool) -> None:
        if change:  # a new run's models were set by eval_create
            super().save_related(request, form, formsets, change)

    # Starting a run spends money on every contestant and the judge, and changing one publishes
    # it: both take the named permission; the model's generic add and change ones are not
    # enough. Reading runs takes the generic view permission or the named one.
    def has_add_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(RUN_EVALS)

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return request.user.has_perm(RUN_EVALS)

    def has_view_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return request.user.has_perm(RUN_EVALS) or super().has_view_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    @admin.display(description="progress")
    def progress_bar(self, run: EvalRun) -> str:
        p = selectors.progress(run_id=run.pk)
        return format_html(
            '<progress max="100" value="{}"></progress> {}', round(100 * p.share), p.line()
        )

    @admin.display(description="judge leaderboard (an LLM judge's opinion, not human votes)")
    def judge_leaderboard(self, run: EvalRun) -> str:
        if run.status not in (EvalRun.Status.DONE, EvalRun.Status.BUDGET):
            return "when the run is done"
        data = exports.as_data(run)
        boards: dict[tuple[str, str], list[dict]] = {}
        for row in data["rows"]:
            boards.setdefault((row["view"], row["breakdown"]), []).append(row)
        tables = format_html_join(
            "",
            "<h4>{} · {}</h4><table><tr><th>model</th><th>score</th><th>95% interval</th>"
            "<th>rank</th><th>win rate vs baseline</th><th>cost</th></tr>{}</table>",
            (
                (view, breakdown, format_html_join("", _ROW, (_cells(r) for r in rows)))
                for (view, breakdown), rows in boards.items()
            ),
        )
        return format_html(
            "{}<p>position bias {}% over {} pairs; {} verdicts missing; "
            'exports: <code>manage.py export_eval {} --format json|csv|arena</code></p>',
            tables, round(100 * data["position_bias"]), data["pairs"], data["missing_verdicts"],
            run.pk,
        )  # fmt: skip


_ROW = "<tr><td>{}</td><td>{}</td><td>[{}, {}]</td><td>{}–{}</td><td>{}</td><td>${}</td></tr>"


def _cells(row: dict) -> tuple:
    def whole(x: float | None) -> str:
        return "–" if x is None else str(round(x))

    rate = row["win_rate"]
    return (
        row["model"], whole(row["score"]), whole(row["lower"]), whole(row["upper"]),
        row["rank_best"], row["rank_worst"], "–" if rate is None else f"{rate:.0%}", row["cost"],
    )  # fmt: skip
