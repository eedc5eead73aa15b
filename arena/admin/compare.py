"""Admin: the judge's rubrics (checked as the judge reads them), and compare runs to audit."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError

from arena.admin.common import ReadOnly
from arena.compare.models import CompareRun, Rubric
from arena.judges import rubric


class RubricForm(forms.ModelForm):
    class Meta:
        model = Rubric
        fields = ("name", "criteria", "is_default")

    def clean_criteria(self):
        try:
            criteria = rubric.rubric_from(self.cleaned_data["criteria"])
        except rubric.RubricError as exc:
            raise ValidationError(str(exc)) from None
        return rubric.rubric_as_data(criteria)


@admin.register(Rubric)
class RubricAdmin(admin.ModelAdmin):
    form = RubricForm
    list_display = ("name", "is_default", "updated_at")


@admin.register(CompareRun)
class CompareRunAdmin(ReadOnly, admin.ModelAdmin):
    """Runs are made in compare mode; here they are only read (verdicts, judge calls)."""

    list_display = ("created_at", "user", "status", "judge", "prompt")
    list_filter = ("status",)
    list_select_related = ("user", "judge")
    search_fields = ("prompt",)
