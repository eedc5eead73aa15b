"""Admin: gold items, withdrawn or served again; they are made from battles."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from arena.admin.common import ReadOnly, change_link, set_active_actions
from arena.battles import gold
from arena.integrity import selectors
from arena.records.models import GoldItem


@admin.register(GoldItem)
class GoldItemAdmin(ReadOnly, admin.ModelAdmin):
    """Gold items are made from battles (the battle list's "Mark as gold" actions) and only
    withdrawn or served again here: their correct side decides past agreement."""

    list_display = (
        "id",
        "source_link",
        "correct_side",
        "note",
        "active",
        "times_served",
        "agreement",
        "created_at",
    )
    list_filter = ("active", "correct_side")
    list_select_related = ("source",)
    fields = ("source_link", "correct_side", "note", "active", "times_served", "agreement")
    readonly_fields = fields
    actions = ("withdraw_items", "serve_items")

    def has_gold_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("arena.change_golditem")

    def get_queryset(self, request: HttpRequest) -> QuerySet[GoldItem]:
        return selectors.gold_items_with_use(super().get_queryset(request))

    @admin.display(description="source battle", ordering="source")
    def source_link(self, item: GoldItem) -> str:
        return change_link(item.source, item.source_id)

    @admin.display(description="times served", ordering="times_served")
    def times_served(self, item: GoldItem) -> int:
        return item.times_served

    @admin.display(description="agreement")
    def agreement(self, item: GoldItem) -> str:
        return str(selectors.gold_item_agreement(item=item))

    serve_items, withdraw_items = set_active_actions(
        apply=lambda ids, active, _by: gold.gold_set_active(item_ids=ids, active=active),
        permission="gold",
        on=("Serve selected gold items again", "{n} gold item(s) served again."),
        off=("Stop serving selected gold items", "{n} gold item(s) withdrawn."),
    )
