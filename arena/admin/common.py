"""What the admin areas share: read-only inspection, staff reads, links between rows."""

from __future__ import annotations

from django.db.models import Model
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html


class ReadOnly:
    """Inspection only: battles change through services, as raters play them."""

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class StaffReads:
    """The vote log and its flags are open to every staff member to read."""

    def has_view_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return request.user.is_active and request.user.is_staff


def change_link(obj: Model, text: object = None) -> str:
    opts = obj._meta
    url = reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[obj.pk])
    return format_html('<a href="{}">{}</a>', url, text if text is not None else obj)
