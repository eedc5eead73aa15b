"""Admin: curate prompts and models, inspect battles, and read (never edit) the vote log."""

from __future__ import annotations

import re

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.validators import FileExtensionValidator
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import URLPattern, path
from django.utils.text import Truncator

from arena import costs, services
from arena.admin_pools import pools_view
from arena.models import Battle, ModelEntry, ModelPrice, Prompt, Turn, Vote
from arena.text import prompt_hash

# Prompts ------------------------------------------------------------------------------------

IMPORT_MAX_BYTES = 5 * 1024 * 1024


class PromptForm(forms.ModelForm):
    class Meta:
        model = Prompt
        fields = ("text", "system_prompt", "category", "language", "source", "active")

    def clean_text(self) -> str:
        text = self.cleaned_data["text"].strip()
        limit = settings.ARENA["PROMPT_MAX_CHARS"]
        if len(text) > limit:
            raise ValidationError(
                f"The prompt is {len(text):,} characters; the limit is {limit:,}."
            )
        # text_hash is unique but not a form field, so the duplicate would otherwise surface as
        # an IntegrityError on save instead of a message here.
        twin = Prompt.objects.filter(text_hash=prompt_hash(text)).exclude(pk=self.instance.pk)
        if twin.exists():
            raise ValidationError(
                "The same prompt (ignoring case and spacing) already exists: "
                f"#{twin.values_list('pk', flat=True)[0]}."
            )
        return text


class PromptImportForm(forms.Form):
    file = forms.FileField(
        label="Prompt file",
        validators=[FileExtensionValidator(["jsonl", "ndjson", "csv"])],
        help_text="JSONL (one object a line) or CSV with a header row. Fields: text (required), "
        "category, language, system_prompt. UTF-8, at most 5 MB.",
    )

    def clean(self) -> dict:
        cleaned = super().clean()
        upload = cleaned.get("file")
        if upload is None:
            return cleaned
        if upload.size > IMPORT_MAX_BYTES:
            self.add_error(
                "file",
                f"The file is {upload.size / 1024 / 1024:.1f} MB; the limit is "
                f"{IMPORT_MAX_BYTES // 1024 // 1024} MB. Nothing was imported.",
            )
            return cleaned
        data = upload.read()
        try:
            data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            self.add_error(
                "file",
                f"The file is not UTF-8 text (byte {exc.start} cannot be decoded). Save it as "
                "UTF-8 and upload it again. Nothing was imported.",
            )
            return cleaned
        cleaned["data"] = data
        return cleaned


@admin.register(Prompt)
class PromptAdmin(admin.ModelAdmin):
    form = PromptForm
    change_list_template = "admin/arena/prompt/change_list.html"
    list_display = (
        "short_text",
        "category",
        "language",
        "source",
        "active",
        "usage_count",
        "created_at",
    )
    list_filter = ("category", "language", "source", "active")
    search_fields = ("text", "category")
    readonly_fields = ("text_hash", "usage_count", "created_at")
    actions = ("offer_prompts", "withdraw_prompts")

    @admin.display(description="text", ordering="text")
    def short_text(self, prompt: Prompt) -> str:
        return Truncator(prompt.text).chars(80)

    @admin.action(description="Offer selected prompts to raters", permissions=["change"])
    def offer_prompts(self, request: HttpRequest, queryset: QuerySet[Prompt]) -> None:
        changed = services.prompts_set_active(
            prompt_ids=list(queryset.values_list("pk", flat=True)), active=True
        )
        self.message_user(request, f"{changed} prompt(s) activated.", messages.SUCCESS)

    @admin.action(description="Stop offering selected prompts", permissions=["change"])
    def withdraw_prompts(self, request: HttpRequest, queryset: QuerySet[Prompt]) -> None:
        changed = services.prompts_set_active(
            prompt_ids=list(queryset.values_list("pk", flat=True)), active=False
        )
        self.message_user(request, f"{changed} prompt(s) deactivated.", messages.SUCCESS)

    def get_urls(self) -> list[URLPattern]:
        opts = self.opts
        # Before the defaults: their "<path:object_id>/" pattern would swallow "import/".
        return [
            path(
                "import/",
                self.admin_site.admin_view(self.import_view),
                name=f"{opts.app_label}_{opts.model_name}_import",
            ),
            *super().get_urls(),
        ]

    def import_view(self, request: HttpRequest) -> TemplateResponse:
        if not self.has_add_permission(request):
            raise PermissionDenied
        report = None
        if request.method == "POST":
            form = PromptImportForm(request.POST, request.FILES)
            if form.is_valid():
                upload = form.cleaned_data["file"]
                report = services.prompts_import(
                    data=form.cleaned_data["data"], filename=upload.name
                )
                level = messages.WARNING if report.rejected else messages.SUCCESS
                self.message_user(request, f"Imported {upload.name}: {report.summary()}", level)
                form = PromptImportForm()
        else:
            form = PromptImportForm()
        context = {
            **self.admin_site.each_context(request),
            "title": "Import prompts",
            "opts": self.opts,
            "form": form,
            "report": report,
        }
        return TemplateResponse(request, "admin/arena/prompt/import.html", context)


# Models -------------------------------------------------------------------------------------

_SECRET_WORDS = frozenset(
    {"key", "apikey", "token", "secret", "password", "passwd", "authorization", "credential"}
)
_REFERENCE_SUFFIXES = ("_env", "_file")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _names_a_secret(name: str) -> bool:
    """True for api_key, apiKey, access_token, client-secret...; not for answer_tokens."""
    # Whole words only, so length settings like max_tokens or tokens_per_s stay allowed.
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()
    return bool(_SECRET_WORDS.intersection(re.split(r"[^a-z0-9]+", spaced)))


def _secret_problems(value: object, where: str = "") -> list[str]:
    problems: list[str] = []
    if isinstance(value, list):
        for i, item in enumerate(value):
            problems += _secret_problems(item, f"{where}[{i}]")
    if not isinstance(value, dict):
        return problems
    for key, item in value.items():
        name = f"{where}.{key}" if where else str(key)
        if str(key).lower().endswith(_REFERENCE_SUFFIXES):
            # A pasted key in the *_env slot would be exactly the leak this check prevents.
            if str(key).lower().endswith("_env") and not (
                isinstance(item, str) and _ENV_NAME.match(item)
            ):
                problems.append(
                    f"'{name}' must be the name of an environment variable (letters, digits "
                    "and underscores), not its value."
                )
            continue
        if _names_a_secret(str(key)):
            problems.append(
                f"'{name}' looks like a secret. Never store a key here: put it in an environment "
                f"variable and give its name as '{key}_env' (or a file path as '{key}_file')."
            )
        problems += _secret_problems(item, name)
    return problems


class ModelEntryForm(forms.ModelForm):
    class Meta:
        model = ModelEntry
        fields = (
            "public_name",
            "organisation",
            "vendor",
            "model_id",
            "backend",
            "backend_settings",
            "supported_params",
            "active",
        )

    def clean_backend_settings(self) -> dict:
        value = self.cleaned_data["backend_settings"]
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise ValidationError("Backend settings must be a JSON object, e.g. {}.")
        problems = _secret_problems(value)
        if problems:
            raise ValidationError(problems)
        return value


class ModelPriceInline(admin.TabularInline):
    model = ModelPrice
    fields = (
        "effective_from",
        "input_per_million",
        "output_per_million",
        "source_note",
        "is_example",
    )
    extra = 0
    verbose_name = "price per million tokens"
    verbose_name_plural = (
        "prices per million tokens (the latest on or before an answer's day applies)"
    )


@admin.register(ModelEntry)
class ModelEntryAdmin(admin.ModelAdmin):
    form = ModelEntryForm
    list_display = ("public_name", "organisation", "vendor", "backend", "model_id", "active")
    list_filter = ("backend", "active", "vendor")
    search_fields = ("public_name", "model_id", "organisation")
    readonly_fields = ("created_at",)
    inlines = (ModelPriceInline,)
    change_list_template = "admin/arena/modelentry/change_list.html"

    def get_urls(self) -> list[URLPattern]:
        opts = self.opts
        return [
            path(
                "pools/",
                self.admin_site.admin_view(pools_view),
                name=f"{opts.app_label}_{opts.model_name}_pools",
            ),
            *super().get_urls(),
        ]


# Battles ------------------------------------------------------------------------------------


class _ReadOnly:
    """Inspection only: battles change through services, as raters play them."""

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class TurnInline(_ReadOnly, admin.TabularInline):
    model = Turn
    fields = ("index", "text", "shown_at", "answers_status", "answers_cost")
    readonly_fields = fields
    extra = 0

    @admin.display(description="answers")
    def answers_status(self, turn: Turn) -> str:
        return ", ".join(f"{a.side.upper()}: {a.get_status_display()}" for a in turn.answers.all())

    @admin.display(description="cost")
    def answers_cost(self, turn: Turn) -> str:
        return ", ".join(
            f"{a.side.upper()}: "
            + costs.cost_display(model=a.model, cost=a.cost, cost_status=a.cost_status)
            for a in turn.answers.all()
        )

    def get_queryset(self, request: HttpRequest) -> QuerySet[Turn]:
        return super().get_queryset(request).prefetch_related("answers__model")


@admin.register(Battle)
class BattleAdmin(_ReadOnly, admin.ModelAdmin):
    list_display = ("id", "rater", "model_a", "model_b", "status", "created_at")
    list_filter = ("status",)
    list_select_related = ("rater", "model_a", "model_b")
    search_fields = ("rater__email",)
    inlines = (TurnInline,)


# Votes --------------------------------------------------------------------------------------


@admin.register(Vote)
class VoteAdmin(_ReadOnly, admin.ModelAdmin):
    """The vote log is append-only: staff may read it, nobody may add, edit or delete here."""

    list_display = (
        "id",
        "created_at",
        "rater",
        "model_a",
        "model_b",
        "choice",
        "decision_ms",
        "prompt_category",
        "prompt_language",
    )
    list_filter = ("choice", "prompt_category", "prompt_language", "rater_pool")
    list_select_related = ("rater", "model_a", "model_b")
    date_hierarchy = "created_at"
    # Counting a large log on every page load is slow and tells nobody anything.
    show_full_result_count = False

    def has_view_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return request.user.is_active and request.user.is_staff

    def has_module_permission(self, request: HttpRequest) -> bool:
        return request.user.is_active and request.user.is_staff

    def get_actions(self, request: HttpRequest) -> dict:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions
