"""Compare mode's pages: the form, a run (live, through server-sent events), the history, and
the exports. Thin edges: parse, call a service or selector, respond."""

from __future__ import annotations

import asyncio
import json
import time

from asgiref.sync import sync_to_async
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from accounts.ratelimits import limit_view
from arena.compare import exports, selectors, services
from arena.compare.models import CompareRun
from arena.core.errors import ServiceError
from arena.generation.streams import START, answer_streams

EXPORTS = {
    "json": ("application/json", exports.as_json),
    "csv": ("text/csv; charset=utf-8", exports.as_csv),
    "md": ("text/markdown; charset=utf-8", exports.as_markdown),
}


def _allowed(request: HttpRequest) -> None:
    if not services.compare_allowed(user=request.user):
        raise PermissionDenied(services.FORBIDDEN)


def _run_of(request: HttpRequest, run_id: object) -> CompareRun:
    run = selectors.run_for(run_id=run_id, user=request.user)
    if run is None:
        raise Http404("No such compare run.")
    return run


@login_required
@limit_view("compare_run")
def compare_page(request: HttpRequest) -> HttpResponse:
    _allowed(request)
    error = ""
    form = selectors.form_defaults(previous_id=request.GET.get("from"), user=request.user)
    if request.method == "POST":
        form, error = selectors.form_from_post(request.POST)
        try:
            if error:
                raise ServiceError("bad_form", error)
            run = services.compare_start(
                user=request.user,
                prompt=form["prompt"],
                model_ids=form["model_ids"],
                system_prompt=form["system_prompt"],
                params=form["params"],
                judge_id=form["judge_id"],
                seed=int(form["seed"]) if form["seed"] else None,
                previous_id=form["previous"] or None,
            )
        except ServiceError as exc:
            error = exc.message
            if exc.code == "unknown_previous":
                form["previous"] = ""  # so the next submit is not refused for it again
        else:
            services.compare_enqueue(run_id=run.pk)
            return redirect("compare-run", run_id=run.pk)
    context = {**selectors.form_choices(user=request.user), "form": form, "error": error}
    return render(request, "compare/form.html", context, status=400 if error else 200)


@login_required
@require_GET
def run_page(request: HttpRequest, run_id: str) -> HttpResponse:
    _allowed(request)
    run = _run_of(request, run_id)
    return render(request, "compare/run.html", {"run": run, "data": exports.run_data(run)})


@login_required
@require_POST
def run_cancel(request: HttpRequest, run_id: str) -> HttpResponse:
    _allowed(request)
    run = _run_of(request, run_id)
    services.compare_cancel(run_id=run.pk, user=request.user)
    return redirect("compare-run", run_id=run.pk)


@login_required
@require_GET
def history(request: HttpRequest) -> HttpResponse:
    _allowed(request)
    return render(request, "compare/history.html", {"runs": selectors.history(user=request.user)})


@login_required
@require_GET
def run_export(request: HttpRequest, run_id: str, fmt: str) -> HttpResponse:
    _allowed(request)
    if fmt not in EXPORTS:
        raise Http404("Exports are json, csv or md.")
    run = _run_of(request, run_id)
    content_type, export = EXPORTS[fmt]
    response = HttpResponse(export(run), content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="compare-{run.pk}.{fmt}"'
    return response


def _event(name: str, data: dict) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


async def run_events(request: HttpRequest, run_id: str) -> StreamingHttpResponse:
    """Server-sent events while the run lasts: each pane's text as it arrives ("delta"), each
    answer as saved when it ends ("answer": timings, tokens, cost, error), then the run with
    the judge's verdict ("run"). No pacing: compare mode is not blind."""
    user = await request.auser()
    if not user.is_authenticated or not await sync_to_async(services.compare_allowed)(user=user):
        raise PermissionDenied(services.FORBIDDEN)
    run = await sync_to_async(selectors.run_for)(run_id=run_id, user=user)
    if run is None:
        raise Http404("No such compare run.")
    return StreamingHttpResponse(_events(run), content_type="text/event-stream")


async def _events(run: CompareRun):
    slots = await sync_to_async(lambda: list(run.answers.values_list("slot", flat=True)))()
    keys = {services.stream_key(run_id=run.pk, slot=slot): slot for slot in slots}
    cursors = dict.fromkeys(keys, START)
    sent: set[int] = set()
    deadline = time.monotonic() + run.deadline_s + services.STALE_GRACE_S + 600
    streams = answer_streams()
    checked = 0.0
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
        if status in selectors.ENDED:
            data = await sync_to_async(lambda: exports.run_data(selectors.run_fresh(run.pk)))()
            yield _event("run", {"status": data["status"], "verdict": data["verdict"]})
            return
        await asyncio.sleep(0.15)
