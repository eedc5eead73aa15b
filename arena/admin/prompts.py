"""Admin: curate prompts, one at a time or by importing a file."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.validators import FileExtensionValidator
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import URLPattern, path
from django.utils.text import Truncator

from arena.admin.common import set_active_actions
from arena.battles import prompts
from arena.battles.selectors import prompt_twin
from arena.core.errors import ServiceError
from arena.records.models import Prompt

IMPORT_MAX_BYTES = 5 * 1024 * 1024


class PromptForm(forms.ModelForm):
    class Meta:
        model = Prompt
        fields = ("text", "system_prompt", "category", "language", "source", "active")

    def clean_text(self) -> str:
        try:
            text = prompts.prompt_clean_text(self.cleaned_data["text"])
        except ServiceError as exc:
            raise ValidationError(exc.message) from None
        # text_hash is unique but not a form field, so the duplicate would otherwise surface as
        # an IntegrityError on save instead of a message here.
        twin = prompt_twin(text=text, exclude_pk=self.instance.pk)
        if twin is not None:
            raise ValidationError(
                f"The same prompt (ignoring case and spacing) already exists: #{twin}."
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

    offer_prompts, withdraw_prompts = set_active_actions(
        apply=lambda ids, active, _by: prompts.prompts_set_active(prompt_ids=ids, active=active),
        permission="change",
        on=("Offer selected prompts to raters", "{n} prompt(s) activated."),
        off=("Stop offering selected prompts", "{n} prompt(s) deactivated."),
    )

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
                report = prompts.prompts_import(
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
