"""Admin actions that ask for a note first, on an intermediate page like the delete confirmation.

Integrity decisions (flag, confirm, lift, ban, mark gold) are read later by someone else, so
the admin says why before anything is recorded; the page re-posts the selection with the note.
"""

from __future__ import annotations

from collections.abc import Callable

from django import forms
from django.contrib import admin
from django.contrib.admin import helpers
from django.db.models import Model, QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse

# The marker the intermediate page posts; without it the action only shows the page.
APPLY = "apply"


class NoteForm(forms.Form):
    required_css_class = "required"  # the admin's mark for a field that must be filled in

    def __init__(self, *args, label: str, required: bool, max_length: int, help_text: str, **kw):
        super().__init__(*args, **kw)
        self.fields["note"] = forms.CharField(
            label=label,
            required=required,
            max_length=max_length,
            help_text=help_text,
            widget=forms.Textarea(attrs={"rows": 3, "cols": 70}),
        )


def note_action(
    modeladmin: admin.ModelAdmin,
    request: HttpRequest,
    queryset: QuerySet[Model],
    *,
    title: str,
    intro: str,
    submit: str,
    apply: Callable[[str], None],
    label: str = "Note",
    required: bool = True,
    max_length: int = 300,
    help_text: str = "",
) -> TemplateResponse | None:
    """Show the note page, or, once it is posted with a valid note, run ``apply(note)``.

    Returns None after applying, which sends the admin back to the list with its messages.
    """
    data = request.POST if APPLY in request.POST else None
    form = NoteForm(
        data, label=label, required=required, max_length=max_length, help_text=help_text
    )
    if form.is_bound and form.is_valid():
        apply(form.cleaned_data["note"])
        return None
    context = {
        **modeladmin.admin_site.each_context(request),
        "title": title,
        "intro": intro,
        "submit": submit,
        "form": form,
        "opts": modeladmin.opts,
        "queryset": queryset,
        "action": request.POST.get("action", ""),
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        "apply_marker": APPLY,
        "media": modeladmin.media,
    }
    return TemplateResponse(request, "admin/note_action.html", context)
