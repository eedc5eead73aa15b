"""Admin: the models raters meet, their backends and prices, and the pool page."""

from __future__ import annotations

import json

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db import models
from django.http import HttpRequest
from django.urls import URLPattern, path
from django.utils.html import format_html_join
from django.utils.safestring import mark_safe

from arena.admin.common import set_active_actions
from arena.admin.pools import pools_view
from arena.backends.registry import images_problem, settings_help, settings_problems
from arena.backends.secrets import MAX_DEPTH as SETTINGS_MAX_DEPTH
from arena.backends.secrets import redacted, secret_problems
from arena.catalog import services as catalog_services
from arena.catalog.models import ModelEntry, ModelPrice, ModelRetirement
from arena.core.errors import ServiceError
from arena.core.text import text_clean


class SettingsJSONField(forms.JSONField):
    """JSON that may be hostile: too deep to parse is a form error, not a crash."""

    def to_python(self, value):
        try:
            return super().to_python(value)
        except RecursionError:
            raise ValidationError("This JSON is nested too deep.") from None

    def bound_data(self, data, initial):
        try:
            return super().bound_data(data, initial)
        except RecursionError:
            return forms.fields.InvalidJSONInput(data)

    def prepare_value(self, value):
        shown = super().prepare_value(value)
        # JSON may spell a lone surrogate ("\ud800"), which no page can carry: shown escaped.
        if isinstance(shown, str) and not isinstance(value, forms.fields.InvalidJSONInput):
            try:
                shown.encode("utf-8")
            except UnicodeEncodeError:
                shown = json.dumps(value, cls=self.encoder)
        return shown


class BackendSettingsField(SettingsJSONField):
    """Backend settings as the form shows them: a key an older row (or a refused submission)
    holds is never sent back to the page; saving it replaced is refused until it is fixed."""

    def prepare_value(self, value):
        if isinstance(value, dict | list):
            value = redacted(value)
        return super().prepare_value(value)


def _settings_problems(value: object, depth: int = 0) -> list[str]:
    """NUL characters and lone surrogates (PostgreSQL stores no such JSON) and nesting past
    the limit."""
    if depth > SETTINGS_MAX_DEPTH:
        return [f"Backend settings may nest at most {SETTINGS_MAX_DEPTH} levels deep."]
    if isinstance(value, str):
        if "\x00" in value:
            return ["Backend settings may not contain NUL characters."]
        if text_clean(value) != value:
            return ["Backend settings may not contain lone surrogates (broken characters)."]
        return []
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for key, item in items:
        if found := _settings_problems(key, depth + 1) + _settings_problems(item, depth + 1):
            return found
    return []


class ModelEntryForm(forms.ModelForm):
    class Meta:
        model = ModelEntry
        field_classes = {
            "backend_settings": BackendSettingsField,
            "supported_params": SettingsJSONField,
        }
        fields = (
            "public_name",
            "organisation",
            "vendor",
            "line",
            "preview",
            "model_id",
            "backend",
            "backend_settings",
            "supported_params",
            "takes_images",
            "active",
        )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if "backend_settings" in self.fields:  # not for those who may only view the model
            self.fields["backend_settings"].help_text = settings_help()

    def clean_supported_params(self) -> list:
        value = self.cleaned_data["supported_params"]
        if value is None:
            return []
        if not isinstance(value, list) or not all(
            isinstance(p, str) and p and text_clean(p) == p for p in value
        ):
            raise ValidationError('Supported params must be a list of names, e.g. ["top_p"].')
        return value

    def clean(self) -> dict:
        data = super().clean()
        # A preview variant counts against the publication policy's limit when it is added, or
        # when an existing model becomes one.
        if data.get("preview") and not (self.instance.pk and self.instance.preview):
            try:
                catalog_services.preview_check(
                    organisation=data.get("organisation", ""), model=self.instance
                )
            except ServiceError as exc:
                self.add_error("preview", exc.message)
        if data.get("takes_images") and (problem := images_problem(data.get("backend", ""))):
            self.add_error("takes_images", problem)
        return data

    def clean_backend_settings(self) -> dict:
        value = self.cleaned_data["backend_settings"]
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise ValidationError("Backend settings must be a JSON object, e.g. {}.")
        kind = self.cleaned_data.get("backend", "")
        problems = _settings_problems(value) or (
            secret_problems(value) + settings_problems(kind, value)
        )
        if problems:
            raise ValidationError(problems)
        return value


class ModelPriceInline(admin.StackedInline):
    model = ModelPrice
    fieldsets = (
        (None, {"fields": (("effective_from", "input_per_million", "output_per_million"),
                           "is_example")}),
        ("Source", {"fields": (("source_url", "retrieved_on"), "source_note")}),
        ("What makes a cost at this price estimated", {"fields": (
            "is_from_price",
            ("long_context_threshold", "long_context_input_per_million",
             "long_context_output_per_million"),
            "reasoning_billing_confirmed",
        )}),
    )  # fmt: skip
    extra = 0
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}
    verbose_name = "price per million tokens"
    verbose_name_plural = (
        "prices per million tokens (the latest on or before an answer's day applies)"
    )


@admin.register(ModelEntry)
class ModelEntryAdmin(admin.ModelAdmin):
    form = ModelEntryForm
    list_display = (
        "public_name", "organisation", "line", "preview", "backend", "model_id", "takes_images",
        "active", "retired_at",
    )  # fmt: skip
    list_filter = ("backend", "active", "preview", "takes_images", "vendor")
    search_fields = ("public_name", "model_id", "organisation", "line")
    readonly_fields = ("created_at", "retired_at", "retirement_record")
    inlines = (ModelPriceInline,)
    change_list_template = "admin/arena/modelentry/change_list.html"
    actions = ("activate_models", "deactivate_models", "sync_openrouter")

    activate_models, deactivate_models = set_active_actions(
        apply=lambda ids, active, by: catalog_services.models_set_active(
            model_ids=ids, active=active, by=by
        ),
        permission="change",
        on=("Put selected models into battles", "{n} model(s) activated."),
        off=("Retire selected models (out of battles; kept on the board)", "{n} model(s) retired."),
    )

    @admin.action(
        description="Read supported parameters from OpenRouter's catalog", permissions=["change"]
    )
    def sync_openrouter(self, request: HttpRequest, queryset) -> None:
        """The selected OpenRouter models' shared parameters, as OpenRouter's models catalog
        lists them (catalog.services.openrouter_sync; the catalog is cached an hour)."""
        try:
            lines = catalog_services.openrouter_sync(models=list(queryset))
        except ServiceError as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return
        for line in lines:
            self.message_user(request, line, messages.INFO)

    def save_model(self, request: HttpRequest, obj: ModelEntry, form, change: bool) -> None:
        # The form's "active" box retires a model (or puts it back) as the actions do: through
        # the service that records who did it and when.
        switched = change and "active" in form.changed_data
        if switched:
            obj.active = not obj.active
        super().save_model(request, obj, form, change)
        if switched:
            catalog_services.models_set_active(
                model_ids=[obj.pk], active=not obj.active, by=request.user
            )
            obj.refresh_from_db()

    def _view_only(self, request: HttpRequest, obj: ModelEntry | None) -> bool:
        return obj is not None and not self.has_change_permission(request, obj)

    def get_readonly_fields(self, request: HttpRequest, obj: ModelEntry | None = None):
        shown = tuple(super().get_readonly_fields(request, obj))
        return (*shown, "settings_shown") if self._view_only(request, obj) else shown

    def get_fields(self, request: HttpRequest, obj: ModelEntry | None = None):
        # Read-only, the admin would print the stored JSON itself, with any key an older row
        # holds: those who may only view a model see its settings redacted, as the form shows.
        fields = super().get_fields(request, obj)
        if self._view_only(request, obj):
            return [f for f in fields if f != "backend_settings"]
        return fields

    @admin.display(description="retirement record")
    def retirement_record(self, obj: ModelEntry) -> str:
        """Who retired the model, or put it back, and when (catalog.services.models_set_active):
        shown, never edited (the record is append-only)."""
        rows = ModelRetirement.objects.filter(model=obj).select_related("by")
        if obj.pk is None or not rows:
            return "never retired"
        return format_html_join(
            mark_safe("<br>"),
            "{} {} by {}",
            (
                (r.get_action_display(), f"{r.at:%Y-%m-%d %H:%M} UTC", r.by or "a command")
                for r in rows
            ),
        )

    @admin.display(description="backend settings")
    def settings_shown(self, obj: ModelEntry) -> str:
        return json.dumps(redacted(obj.backend_settings), indent=2, ensure_ascii=False)

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
