"""Admin: the models raters meet, their backends and prices, and the pool page."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.urls import URLPattern, path

from arena.admin.pools import pools_view
from arena.backends.http import secret_problems
from arena.catalog.models import ModelEntry, ModelPrice


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
        problems = secret_problems(value)
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
