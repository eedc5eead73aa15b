"""What the admin areas share: read-only inspection, staff reads, links between rows."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import admin, messages
from django.db.models import Model, QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html


class ReadOnly:
    """Inspection only: these rows change through services (as raters play, or by actions)."""

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


class LogAdmin(StaffReads, ReadOnly):
    """An append-only log: every staff member reads it, nobody adds, edits or deletes rows."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        return request.user.is_active and request.user.is_staff

    def get_actions(self, request: HttpRequest) -> dict:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions


def set_active_actions(
    *,
    apply: Callable[[list[int], bool, object], int],
    permission: str,
    on: tuple[str, str],
    off: tuple[str, str],
) -> tuple[Callable, Callable]:
    """Two actions that switch the selected rows on and off through a service:
    ``apply(ids, active, user)`` returns how many changed; ``on`` and ``off`` are each a
    (description, message with ``{n}``)."""

    def action(active: bool, description: str, done: str) -> Callable:
        @admin.action(description=description, permissions=[permission])
        def act(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet) -> None:
            changed = apply(list(queryset.values_list("pk", flat=True)), active, request.user)
            modeladmin.message_user(request, done.format(n=changed), messages.SUCCESS)

        return act

    return action(True, *on), action(False, *off)


class YesNoFilter(admin.SimpleListFilter):
    """A list filter with two choices; ``labels`` names them and ``chosen`` filters by one."""

    labels: tuple[str, str] = ("Yes", "No")

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list:
        return [("yes", self.labels[0]), ("no", self.labels[1])]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() in ("yes", "no"):
            return self.chosen(queryset, self.value() == "yes")
        return queryset

    def chosen(self, queryset: QuerySet, yes: bool) -> QuerySet:
        raise NotImplementedError


def yes_no_filter(name: str, *, labels: tuple[str, str], no_lookup: str) -> type[YesNoFilter]:
    """A YesNoFilter whose "no" is one boolean lookup (``banned_at__isnull``): named ``name`` in
    the list and in the query string."""

    def chosen(self: YesNoFilter, queryset: QuerySet, yes: bool) -> QuerySet:
        return queryset.filter(**{no_lookup: not yes})

    attrs = {"title": name, "parameter_name": name, "labels": labels, "chosen": chosen}
    return type(f"{name.title()}Filter", (YesNoFilter,), attrs)
