"""Compare mode's pages: the form, a run (live, through server-sent events), the history, and
the exports. Thin edges: parse, call a service or selector, respond. A signed-in account
without compare mode gets a page saying what it is and who may use it; the events and exports
answer JSON errors (401 signed out, 403 not allowed, 404 no such run), never a sign-in page."""

from __future__ import annotations

import asyncio
import json
import time
from functools import wraps

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    JsonResponse,
    StreamingHttpResponse,
)
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from accounts.ratelimits import limit_view
from arena.compare import exports, selectors, services
from arena.compare.models import CompareRun
from arena.core.errors import ServiceError
from arena.generation.streams import START, answer_streams
from arena.images.services import image_store

EXPORTS = {
    "json": ("application/json", exports.as_json),
    "csv": ("text/csv; charset=utf-8", exports.as_csv),
    "md": ("text/markdown; charset=utf-8", exports.as_markdown),
}


# How long the events wait, once a run has ended, for answers its worker is still saving
# (a cancel takes effect at the worker's next look, every half second).
SAVING_GRACE_S = 5.0


def compare_view(view):
    """Signed in (else the sign-in page) and allowed compare mode (else the page that says
    what it is and who may use it, with a 403)."""

    @login_required
    @wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if not services.compare_allowed(user=request.user):
            context = {"access": settings.COMPARE["ACCESS"], "message": services.FORBIDDEN}
            return render(request, "compare/forbidden.html", context, status=403)
        return view(request, *args, **kwargs)

    return wrapped


def json_error(status: int, code: str, message: str) -> JsonResponse:
    return JsonResponse({"error": code, "message": message}, status=status)


def _json_refusal(user) -> JsonResponse | None:
    if not user.is_authenticated:
        return json_error(401, "sign_in", "Sign in to use compare mode.")
    if not services.compare_allowed(user=user):
        return json_error(403, "forbidden", services.FORBIDDEN)
    return None


NO_RUN = (404, "not_found", "No such compare run.")


def _run_of(request: HttpRequest, run_id: object) -> CompareRun:
    run = selectors.run_for(run_id=run_id, user=request.user)
    if run is None:
        raise Http404("No such compare run.")
    return run


@compare_view
@limit_view("compare_run")
def compare_page(request: HttpRequest) -> HttpResponse:
    error = ""
    form = selectors.form_defaults(previous_id=request.GET.get("from"), user=request.user)
    if request.method == "POST":
        form, error = selectors.form_from_post(request.POST)
        try:
            if error:
                raise ServiceError("bad_form", error)
            # Each new file is kept (or refused) first; the form keeps what was kept, by hash.
            for sent in request.FILES.getlist("images"):
                data = sent.read(settings.IMAGES["MAX_BYTES"] + 1)
                form["images"].append(image_store(user=request.user, data=data).sha256)
            run = services.compare_start(
                user=request.user,
                prompt=form["prompt"],
                model_ids=form["model_ids"],
                system_prompt=form["system_prompt"],
                params=form["params"],
                judge_id=form["judge_id"],
                seed=int(form["seed"]) if form["seed"] else None,
                previous_id=form["previous"] or None,
                images=form["images"],
            )
        except ServiceError as exc:
            error = exc.message
            if exc.code == "unknown_previous":
                form["previous"] = ""  # so the next submit is not refused for it again
        else:
            services.compare_enqueue(run_id=run.pk)
            return redirect("compare-run", run_id=run.pk)
    context = {
        **selectors.form_choices(user=request.user),
        "form": form,
        "error": error,
        "image_max_count": settings.IMAGES["MAX_COUNT"],
        "image_max_mb": settings.IMAGES["MAX_BYTES"] / 1_000_000,
    }
    return render(request, "compare/form.html", context, status=400 if error else 200)


@compare_view
@require_GET
def run_page(request: HttpRequest, run_id: str) -> HttpResponse:
    run = _run_of(request, run_id)
    return render(request, "compare/run.html", {"run": run, "data": selectors.run_page(run=run)})


@compare_view
@require_POST
def run_cancel(request: HttpRequest, run_id: str) -> HttpResponse:
    """Cancel, from the form (back to the page) or the page's script (JSON: the page keeps the
    text that has arrived and goes on listening for what is saved)."""
    run = _run_of(request, run_id)
    stopped = services.compare_cancel(run_id=run.pk, user=request.user)
    if "application/json" in request.headers.get("Accept", ""):
        return JsonResponse({"cancelled": stopped})
    return redirect("compare-run", run_id=run.pk)


@compare_view
@require_GET
def history(request: HttpRequest) -> HttpResponse:
    return render(request, "compare/history.html", {"runs": selectors.history(user=request.user)})


@require_GET
def run_export(request: HttpRequest, run_id: str, fmt: str) -> HttpResponse:
    if refused := _json_refusal(request.user):
        return refused
    if fmt not in EXPORTS:
        return json_error(404, "not_found", "Exports are json, csv or md.")
    run = selectors.run_for(run_id=run_id, user=request.user)
    if run is None:
        return json_error(*NO_RUN)
    content_type, export = EXPORTS[fmt]
    response = HttpResponse(export(run), content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="compare-{run.pk}.{fmt}"'
    return response


def _event(name: str, data: dict) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


async def run_events(request: HttpRequest, run_id: str) -> StreamingHttpResponse:
    """Server-sent events while the run lasts: each pane's text as it arrives ("delta"), an
    answer's time to first token once its worker has kept it ("first"), each answer as saved
    when it ends ("answer": timings, tokens, cost, error), then the run with the judge's
    verdict ("run"). No pacing: compare mode is not blind."""
    user = await request.auser()
    if refused := await sync_to_async(_json_refusal)(user):
        return refused
    run = await sync_to_async(selectors.run_for)(run_id=run_id, user=user)
    if run is None:
        return json_error(*NO_RUN)
    return StreamingHttpResponse(_events(run), content_type="text/event-stream")


async def _events(run: CompareRun):
    slots = await sync_to_async(lambda: list(run.answers.values_list("slot", flat=True)))()
    keys = {services.stream_key(run_id=run.pk, slot=slot): slot for slot in slots}
    cursors = dict.fromkeys(keys, START)
    sent: set[int] = set()
    first: set[int] = set()
    deadline = time.monotonic() + run.deadline_s + services.STALE_GRACE_S + 600
    streams = answer_streams()
    checked = 0.0
    ended_at = None
    while time.monotonic() < deadline:
        try:
            entries = await streams.read({k: c for k, c in cursors.items() if keys[k] not in sent})
        except Exception:  # the streams are away: the saved answers come at the end
            entries = []
        ended = False
        for entry in entries:
            cursors[entry.key] = entry.id
            ended = ended or bool(entry.done)
            if entry.text:
                yield _event("delta", {"slot": keys[entry.key], "text": entry.text})
        # The database only when an answer has ended, or once a second (a final entry lost
        # with Redis, the judge's verdict), not on every tick.
        if not ended and time.monotonic() - checked < 1.0:
            await asyncio.sleep(0.15)
            continue
        checked = time.monotonic()
        status, answers = await sync_to_async(selectors.run_progress)(run_id=run.pk)
        for answer in answers:
            if answer["slot"] not in sent and answer["status"] not in ("pending", "running"):
                sent.add(answer["slot"])
                yield _event("answer", answer)
            elif answer["slot"] not in first and answer["ttft_ms"] is not None:
                # Measured by the worker at the first text, kept as the answer's: the page
                # shows it then, never an estimate of its own.
                first.add(answer["slot"])
                yield _event("first", {"slot": answer["slot"], "ttft_ms": answer["ttft_ms"]})
        unended = any(a["status"] in selectors.UNENDED for a in answers)
        if status in selectors.ENDED:
            # A cancelled run's answers are saved, with the text that had arrived, once its
            # worker notices: wait for them (a little), so the page never loses that text.
            ended_at = ended_at or time.monotonic()
            if unended and time.monotonic() - ended_at < SAVING_GRACE_S:
                await asyncio.sleep(0.15)
                continue
            data = await sync_to_async(lambda: exports.run_data(selectors.run_fresh(run.pk)))()
            yield _event("run", {"status": data["status"], "verdict": data["verdict"]})
            return
        await asyncio.sleep(0.15)
