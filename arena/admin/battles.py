"""Admin: inspect battles (read only) and mark finished ones as gold."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse

from arena.admin.common import ReadOnly
from arena.admin.noted_actions import note_action
from arena.battles import gold
from arena.catalog import costs
from arena.core.errors import ServiceError
from arena.records.models import Battle, Turn


class TurnInline(ReadOnly, admin.TabularInline):
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
class BattleAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ("id", "rater", "model_a", "model_b", "status", "gold_role", "created_at")
    list_filter = ("status",)
    list_select_related = ("rater", "model_a", "model_b", "gold_item")
    search_fields = ("rater__email",)
    inlines = (TurnInline,)
    actions = ("mark_gold_a", "mark_gold_b")

    @admin.display(description="gold")
    def gold_role(self, battle: Battle) -> str:
        item = getattr(battle, "gold_item", None)
        if item is not None:
            state = "" if item.active else ", withdrawn"
            return f"gold item {item.pk} ({item.correct_side.upper()} better{state})"
        if battle.gold_id is not None:
            return f"replays gold item {battle.gold_id}"
        return ""

    def has_gold_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("arena.add_golditem")

    @admin.action(description="Mark as gold: A is better", permissions=["gold"])
    def mark_gold_a(
        self, request: HttpRequest, queryset: QuerySet[Battle]
    ) -> TemplateResponse | None:
        return self._mark_gold(request, queryset, "a")

    @admin.action(description="Mark as gold: B is better", permissions=["gold"])
    def mark_gold_b(
        self, request: HttpRequest, queryset: QuerySet[Battle]
    ) -> TemplateResponse | None:
        return self._mark_gold(request, queryset, "b")

    def _mark_gold(
        self, request: HttpRequest, queryset: QuerySet[Battle], side: str
    ) -> TemplateResponse | None:
        def apply(note: str) -> None:
            marked = 0
            for battle in queryset:
                try:
                    gold.gold_mark(battle_id=battle.pk, correct_side=side, note=note)
                except ServiceError as exc:
                    self.message_user(
                        request, f"{battle} was not marked gold: {exc.message}", messages.ERROR
                    )
                else:
                    marked += 1
            if marked:
                self.message_user(
                    request,
                    f"{marked} battle(s) marked gold with {side.upper()} as the better answer; "
                    "crowd raters will now sometimes be given them to measure agreement.",
                    messages.SUCCESS,
                )

        return note_action(
            self,
            request,
            queryset,
            title=f"Mark as gold: {side.upper()} is better",
            intro=f"Answer {side.upper()} of each battle below will be the known better answer "
            "when its first turn is replayed to crowd raters.",
            submit="Mark as gold",
            apply=apply,
            required=False,
            help_text="Optional: why the other answer is clearly worse.",
        )
