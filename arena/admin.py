"""Admin: curate prompts and models, inspect battles, read (never edit) the vote log, and review
integrity: flags, raters' gold agreement, gold items."""

from __future__ import annotations

import re

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.validators import FileExtensionValidator
from django.db import transaction
from django.db.models import Model, QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from django.utils.text import Truncator

from arena import costs, gold, review, services
from arena.admin_notes import note_action
from arena.admin_pools import pools_view
from arena.models import Battle, GoldItem, ModelEntry, ModelPrice, Prompt, Turn, Vote, VoteFlag
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


def _change_link(obj: Model, text: object = None) -> str:
    opts = obj._meta
    url = reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[obj.pk])
    return format_html('<a href="{}">{}</a>', url, text if text is not None else obj)


@admin.register(Battle)
class BattleAdmin(_ReadOnly, admin.ModelAdmin):
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
                except ValueError as exc:
                    self.message_user(
                        request, f"{battle} was not marked gold: {exc}", messages.ERROR
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


# Votes and flags ----------------------------------------------------------------------------


class _StaffReads:
    """The vote log and its flags are open to every staff member to read."""

    def has_view_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return request.user.is_active and request.user.is_staff


def _flag_author(flag: VoteFlag) -> str:
    return str(flag.created_by) if flag.created_by_id else "system"


def _flag_is_open(flag: VoteFlag) -> bool | None:
    # Reviews are neither open nor closed; only a flag row can keep a vote out.
    if flag.action != VoteFlag.Action.FLAG:
        return None
    lifted = getattr(flag, "is_lifted", None)
    if lifted is None:
        lifted = flag.reviews.filter(action=VoteFlag.Action.LIFT).exists()
    return not lifted


class VoteFlagInline(_StaffReads, _ReadOnly, admin.TabularInline):
    model = VoteFlag
    fk_name = "vote"
    fields = ("flag_link", "reason", "action", "review_of", "detail", "by", "created_at", "open")
    readonly_fields = fields
    ordering = ("created_at", "pk")
    extra = 0
    verbose_name = "flag or review"
    verbose_name_plural = "flags and reviews (append-only; review them from the flag list)"

    @admin.display(description="flag")
    def flag_link(self, flag: VoteFlag) -> str:
        return _change_link(flag, f"#{flag.pk}")

    @admin.display(description="by")
    def by(self, flag: VoteFlag) -> str:
        return _flag_author(flag)

    @admin.display(description="open", boolean=True)
    def open(self, flag: VoteFlag) -> bool | None:
        return _flag_is_open(flag)

    def get_queryset(self, request: HttpRequest) -> QuerySet[VoteFlag]:
        qs = super().get_queryset(request).select_related("created_by")
        return qs.annotate(is_lifted=review.flag_lifted())


class CountedFilter(admin.SimpleListFilter):
    title = "counted"
    parameter_name = "counted"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list:
        return [("yes", "Counted"), ("no", "Kept out by an open flag")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Vote]) -> QuerySet[Vote]:
        if self.value() == "yes":
            return queryset.filter(is_flagged=False)
        if self.value() == "no":
            return queryset.filter(is_flagged=True)
        return queryset


@admin.register(Vote)
class VoteAdmin(_StaffReads, _ReadOnly, admin.ModelAdmin):
    """The vote log is append-only: staff may read it, nobody may add, edit or delete here.
    Flagging a vote adds a VoteFlag row beside it; the vote itself is never touched."""

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
        "counted",
    )
    list_filter = (CountedFilter, "choice", "prompt_category", "prompt_language", "rater_pool")
    list_select_related = ("rater", "model_a", "model_b")
    date_hierarchy = "created_at"
    # Counting a large log on every page load is slow and tells nobody anything.
    show_full_result_count = False
    inlines = (VoteFlagInline,)
    actions = ("flag_votes",)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return request.user.is_active and request.user.is_staff

    def has_flag_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("arena.add_voteflag")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Vote]:
        return super().get_queryset(request).annotate(is_flagged=review.vote_flagged())

    def get_actions(self, request: HttpRequest) -> dict:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    @admin.display(description="counted", boolean=True, ordering="is_flagged")
    def counted(self, vote: Vote) -> bool:
        return not vote.is_flagged

    @admin.action(description="Flag selected votes", permissions=["flag"])
    def flag_votes(self, request: HttpRequest, queryset: QuerySet[Vote]) -> TemplateResponse | None:
        def apply(note: str) -> None:
            with transaction.atomic():
                votes = list(queryset)
                for vote in votes:
                    services.vote_flag(vote=vote, by=request.user, reason="admin", detail=note)
            self.message_user(
                request,
                f"{len(votes)} vote(s) flagged; they do not count until the flag is lifted.",
                messages.SUCCESS,
            )

        return note_action(
            self,
            request,
            queryset,
            title="Flag selected votes",
            intro="Each vote below gets an admin flag and stops counting on the leaderboard; "
            "the vote itself stays in the log unchanged.",
            submit="Flag",
            apply=apply,
            help_text="Why these votes should not count; shown to whoever reviews the flag.",
            max_length=2000,
        )


class FlagOpenFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "open"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list:
        return [("yes", "Open flags (vote not counted)"), ("no", "Lifted flags")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[VoteFlag]) -> QuerySet[VoteFlag]:
        if self.value() in ("yes", "no"):
            return queryset.filter(action=VoteFlag.Action.FLAG, is_lifted=self.value() == "no")
        return queryset


class ReviewInline(_StaffReads, _ReadOnly, admin.TabularInline):
    model = VoteFlag
    fk_name = "review_of"
    fields = ("action", "detail", "by", "created_at")
    readonly_fields = fields
    ordering = ("created_at", "pk")
    extra = 0
    verbose_name = "review"
    verbose_name_plural = "reviews"

    @admin.display(description="by")
    def by(self, flag: VoteFlag) -> str:
        return _flag_author(flag)


@admin.register(VoteFlag)
class VoteFlagAdmin(_StaffReads, _ReadOnly, admin.ModelAdmin):
    """Flags and their reviews: an append-only log. The actions add review rows through the
    services; no row is ever edited or deleted here."""

    list_display = (
        "id",
        "vote_link",
        "rater",
        "reason",
        "action",
        "reviewed_flag",
        "by",
        "created_at",
        "open",
        "short_detail",
    )
    list_filter = (FlagOpenFilter, "reason", "action")
    list_select_related = ("vote__rater", "created_by")
    # "__exact" on the id compares as text, so an email typed in the box is no error.
    search_fields = ("vote__id__exact", "vote__rater__email")
    search_help_text = "A vote id, or (part of) the rater's email."
    date_hierarchy = "created_at"
    fields = (
        "vote_link",
        "rater",
        "reason",
        "action",
        "reviewed_flag",
        "detail",
        "by",
        "created_at",
        "open",
    )
    readonly_fields = fields
    inlines = (ReviewInline,)
    actions = ("confirm_flags", "lift_flags")

    def has_module_permission(self, request: HttpRequest) -> bool:
        return request.user.is_active and request.user.is_staff

    def has_review_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("arena.add_voteflag")

    def get_queryset(self, request: HttpRequest) -> QuerySet[VoteFlag]:
        return super().get_queryset(request).annotate(is_lifted=review.flag_lifted())

    def get_actions(self, request: HttpRequest) -> dict:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    @admin.display(description="vote", ordering="vote")
    def vote_link(self, flag: VoteFlag) -> str:
        return _change_link(flag.vote, f"Vote {flag.vote_id}")

    @admin.display(description="rater", ordering="vote__rater__email")
    def rater(self, flag: VoteFlag) -> str:
        return str(flag.vote.rater)

    @admin.display(description="reviews flag")
    def reviewed_flag(self, flag: VoteFlag) -> str:
        return _change_link(flag.review_of, f"#{flag.review_of_id}") if flag.review_of_id else ""

    @admin.display(description="by", ordering="created_by__email")
    def by(self, flag: VoteFlag) -> str:
        return _flag_author(flag)

    @admin.display(description="open", boolean=True)
    def open(self, flag: VoteFlag) -> bool | None:
        return _flag_is_open(flag)

    @admin.display(description="detail")
    def short_detail(self, flag: VoteFlag) -> str:
        return Truncator(flag.detail).chars(80)

    @admin.action(description="Confirm selected flags", permissions=["review"])
    def confirm_flags(
        self, request: HttpRequest, queryset: QuerySet[VoteFlag]
    ) -> TemplateResponse | None:
        return self._review(request, queryset, VoteFlag.Action.CONFIRM)

    @admin.action(description="Lift selected flags", permissions=["review"])
    def lift_flags(
        self, request: HttpRequest, queryset: QuerySet[VoteFlag]
    ) -> TemplateResponse | None:
        return self._review(request, queryset, VoteFlag.Action.LIFT)

    def _review(
        self, request: HttpRequest, queryset: QuerySet[VoteFlag], action: str
    ) -> TemplateResponse | None:
        verb = "confirmed" if action == VoteFlag.Action.CONFIRM else "lifted"

        def apply(note: str) -> None:
            done = 0
            for flag in queryset.order_by("pk"):
                try:
                    services.flag_review(flag=flag, by=request.user, action=action, note=note)
                except ValidationError as exc:
                    self.message_user(
                        request,
                        f"Row {flag.pk} ({flag}) was not {verb}: {' '.join(exc.messages)}",
                        messages.ERROR,
                    )
                    continue
                done += 1
                if action == VoteFlag.Action.CONFIRM and flag.is_lifted:
                    # A lift is final for counting; a later confirmation only records the view.
                    self.message_user(
                        request,
                        f"Flag {flag.pk} had already been lifted, so its vote still counts; "
                        "flag the vote again to keep it out.",
                        messages.WARNING,
                    )
            if done:
                outcome = (
                    "their votes stay out of the leaderboard"
                    if action == VoteFlag.Action.CONFIRM
                    else "their votes count again unless another flag on them is open"
                )
                self.message_user(request, f"{done} flag(s) {verb}; {outcome}.", messages.SUCCESS)

        return note_action(
            self,
            request,
            queryset,
            title=f"{'Confirm' if action == VoteFlag.Action.CONFIRM else 'Lift'} selected flags",
            intro=f"Each flag below will be {verb} by a new review row; the flag itself stays "
            "in the log unchanged. Only flags can be reviewed, not reviews.",
            submit="Confirm" if action == VoteFlag.Action.CONFIRM else "Lift",
            apply=apply,
            help_text="Why; recorded with the review.",
            max_length=2000,
        )


# Gold ---------------------------------------------------------------------------------------


@admin.register(GoldItem)
class GoldItemAdmin(admin.ModelAdmin):
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

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_gold_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("arena.change_golditem")

    def get_queryset(self, request: HttpRequest) -> QuerySet[GoldItem]:
        return review.gold_items_with_use(super().get_queryset(request))

    @admin.display(description="source battle", ordering="source")
    def source_link(self, item: GoldItem) -> str:
        return _change_link(item.source, item.source_id)

    @admin.display(description="times served", ordering="times_served")
    def times_served(self, item: GoldItem) -> int:
        return item.times_served

    @admin.display(description="agreement")
    def agreement(self, item: GoldItem) -> str:
        return str(review.gold_item_agreement(item=item))

    @admin.action(description="Stop serving selected gold items", permissions=["gold"])
    def withdraw_items(self, request: HttpRequest, queryset: QuerySet[GoldItem]) -> None:
        changed = review.gold_set_active(
            item_ids=list(queryset.values_list("pk", flat=True)), active=False
        )
        self.message_user(request, f"{changed} gold item(s) withdrawn.", messages.SUCCESS)

    @admin.action(description="Serve selected gold items again", permissions=["gold"])
    def serve_items(self, request: HttpRequest, queryset: QuerySet[GoldItem]) -> None:
        changed = review.gold_set_active(
            item_ids=list(queryset.values_list("pk", flat=True)), active=True
        )
        self.message_user(request, f"{changed} gold item(s) served again.", messages.SUCCESS)
