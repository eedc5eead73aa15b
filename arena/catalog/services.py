"""Writes of the catalog."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from arena.backends import openrouter
from arena.backends.outbound import url_problems
from arena.catalog.models import ModelEntry, ModelRetirement
from arena.core.errors import ServiceError


def model_upsert(*, public_name: str, **fields: object) -> ModelEntry:
    """The model of this public name with ``fields`` set, created if there is none."""
    model, _ = ModelEntry.objects.update_or_create(public_name=public_name, defaults=fields)
    return model


def models_set_active(*, model_ids: list[int], active: bool, by: object | None = None) -> int:
    """Put models into battles (or take them out); how many changed. A model taken out is
    retired: it keeps its votes and its row on every later board that counts them, marked
    with the day it was retired; who did it, and when, is kept in ModelRetirement."""
    action = ModelRetirement.Action.REINSTATE if active else ModelRetirement.Action.RETIRE
    with transaction.atomic():
        changed = list(
            ModelEntry.objects.select_for_update()
            .filter(pk__in=model_ids)
            .exclude(active=active)
            .values_list("pk", flat=True)
        )
        now = timezone.now()
        ModelEntry.objects.filter(pk__in=changed).update(
            active=active, retired_at=None if active else now
        )
        ModelRetirement.objects.bulk_create(
            ModelRetirement(model_id=pk, action=action, by=by, at=now) for pk in changed
        )
    return len(changed)


PREVIEW_WINDOW = timedelta(days=90)


def preview_check(*, organisation: str, model: ModelEntry | None = None) -> None:
    """Under the ``limit`` publication policy, refuse a preview variant past the limit: at
    most ``MODEL_PREVIEW_LIMIT`` previews per organisation added in 90 days. Under
    ``publish_all`` (the default) every variant may be tested, as every one is published."""
    policy = settings.ARENA["MODEL_PUBLICATION"]
    if policy != "limit":
        return
    limit = settings.ARENA["MODEL_PREVIEW_LIMIT"]
    since = timezone.now() - PREVIEW_WINDOW
    previews = ModelEntry.objects.filter(
        organisation=organisation, preview=True, created_at__gte=since
    )
    if model is not None and model.pk is not None:
        previews = previews.exclude(pk=model.pk)
    if previews.count() >= limit:
        who = organisation or "a model without an organisation"
        raise ServiceError(
            "preview_limit",
            f"The publication policy allows at most {limit} preview variants per organisation "
            f"in 90 days, and {who} has {previews.count()} since {since:%Y-%m-%d}. Release or "
            "publish one of them under its line instead, or wait.",
        )


# The shared parameters and the values seed 001 allows: 0 <= temperature <= 2,
# 0 < top_p <= 1 (0 would keep no token at all), max_tokens a whole number from 1 (each
# model's own ceiling is its backend's "max_tokens").
PARAM_NAMES = ("temperature", "top_p", "max_tokens")
MAX_TOKENS_CEILING = 2**31 - 1


def params_valid(*, params: dict) -> dict:
    """The shared parameters that are set, checked and typed; unset ones (None or "") are
    left out, so they are not sent. A wrong name or value is a ServiceError "bad_param"."""
    out: dict = {}
    for name, value in (params or {}).items():
        if name not in PARAM_NAMES:
            raise ServiceError("bad_param", f"Unknown parameter {name!r}.")
        if value is None or value == "":
            continue
        if isinstance(value, bool):
            raise ServiceError("bad_param", f"{name!r} must be a number.")
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ServiceError("bad_param", f"{name!r} must be a number.") from None
        if name == "max_tokens":
            if not number.is_integer() or not 1 <= number <= MAX_TOKENS_CEILING:
                why = f"'max_tokens' must be a whole number from 1 to {MAX_TOKENS_CEILING}."
                raise ServiceError("bad_param", why)
            out[name] = int(number)
        elif name == "top_p" and not 0 < number <= 1:
            raise ServiceError("bad_param", "'top_p' must be more than 0 and at most 1.")
        elif name == "temperature" and not 0 <= number <= 2:
            raise ServiceError("bad_param", "'temperature' must be between 0 and 2.")
        else:
            out[name] = number
    return out


def params_check(*, models: list[ModelEntry], params: dict) -> None:
    """A shared parameter out of its range (``params_valid``), or one that one of the models
    cannot take, refuses the run (a battle, a compare run, an evaluation); it is never
    dropped for one side only."""
    params_valid(params=params)
    for model in models:
        if missing := model.params_unsupported(params):
            raise ServiceError(
                "unsupported_param",
                f"{model.public_name} does not support {missing[0]!r}. Clear it for all models, "
                "or remove the model.",
            )


def openrouter_sync(
    *, models: list[ModelEntry] | None = None, url: str = "", fresh: bool = False
) -> list[str]:
    """Set the shared parameters of OpenRouter's models (``models``, else every one) from
    OpenRouter's catalog at ``url``: those of PARAM_NAMES its ``supported_parameters`` lists.
    An OpenRouter model is an OpenAI-compatible one whose base_url is on the catalog's host.
    One line a model, saying what was done; a ServiceError when the catalog cannot be read.
    ``url``: OpenRouter's own catalog (openrouter.CATALOG_URL) when empty."""
    url = url or openrouter.CATALOG_URL
    if problems := url_problems(url, "url"):
        raise ServiceError("bad_url", problems[0])
    chosen = models if models is not None else list(ModelEntry.objects.all())
    served = [
        m
        for m in chosen
        if m.backend == ModelEntry.Backend.OPENAI_COMPATIBLE
        and openrouter.served_by(str((m.backend_settings or {}).get("base_url") or ""), url=url)
    ]
    if not served:
        return ["No OpenRouter model (an OpenAI-compatible model whose base_url is on the "
                f"catalog's host, {url}) to read."]  # fmt: skip
    try:
        catalog = openrouter.catalog_read(url=url, fresh=fresh)
    except openrouter.CatalogError as exc:
        raise ServiceError("catalog_unreadable", str(exc)) from None
    lines = []
    for model in served:
        listed = catalog.get(model.model_id)
        if listed is None:
            lines.append(
                f"{model.public_name}: {model.model_id!r} is not in the catalog; unchanged."
            )
            continue
        supported = [p for p in PARAM_NAMES if p in listed]
        if supported != list(model.supported_params or []):
            model.supported_params = supported
            model.save(update_fields=["supported_params"])
        lines.append(f"{model.public_name}: supports {', '.join(supported) or 'none of them'}.")
    return lines


def images_check(*, models: list[ModelEntry], judge: ModelEntry | None) -> None:
    """Every model asked about images, and the judge that reads its answers, must read them
    (a refusal would only come back as each one's error once the run had started)."""
    blind = [m.public_name for m in models if not m.takes_images]
    if blind:
        raise ServiceError(
            "model_no_images",
            f"{', '.join(blind)} {'does' if len(blind) == 1 else 'do'} not read images: remove "
            "them from the run, or remove the images.",
        )
    if judge is not None and not judge.takes_images:
        raise ServiceError(
            "judge_no_images",
            f"The judge {judge.public_name} does not read images: pick a judge that does, "
            "or remove the images.",
        )
