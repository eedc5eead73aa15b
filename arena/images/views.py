"""The images edge: a rater uploads an image, and fetches back only their own."""

from __future__ import annotations

from channels.db import database_sync_to_async
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from accounts.ratelimits import limit_view
from arena.core.errors import ServiceError
from arena.images import selectors, services

STATUS = {
    "image_too_large": 413,
    "image_too_many_pixels": 413,
    "not_found": 404,
}


def _refused(exc: ServiceError) -> JsonResponse:
    return JsonResponse(
        {"error": exc.code, "message": exc.message}, status=STATUS.get(exc.code, 400)
    )


@login_required
@require_POST
async def image_upload(request: HttpRequest) -> HttpResponse:
    """One image, the request's body itself (as the page sends it: no form to parse) or a
    multipart field ``image``: its hash, type and size, or why it was refused.

    Its work (the form read, Pillow's decode and encode, the write) runs on a thread of its
    own, not on the one thread every synchronous view of this process queues for: a crowd's
    uploads run side by side (Pillow lets go of the GIL as it codes), and the pages wait for
    none of them."""
    return await database_sync_to_async(_upload_limited, thread_sensitive=False)(request)


def _upload(request: HttpRequest) -> JsonResponse:
    # One byte past the limit is enough to refuse it, whatever the file's size.
    most = settings.IMAGES["MAX_BYTES"] + 1
    if request.content_type != "multipart/form-data":
        data = request.read(most)
    elif (sent := request.FILES.get("image")) is not None:
        data = sent.read(most)
    else:
        return _refused(ServiceError("image_missing", "Attach an image in the field 'image'."))
    try:
        image = services.image_store(user=request.user, data=data)
    except ServiceError as exc:
        return _refused(exc)
    return JsonResponse(
        {
            "sha256": image.sha256,
            "type": image.content_type,
            "width": image.width,
            "height": image.height,
            "size": image.size_bytes,
            "url": reverse("image", args=[image.sha256]),
        },
        status=201,
    )


@login_required
@require_GET
def image_view(request: HttpRequest, sha256: str) -> HttpResponse:
    try:
        image = selectors.image_for_viewer(user=request.user, sha256=sha256)
    except ServiceError as exc:
        return _refused(exc)
    response = HttpResponse(
        selectors.image_bytes(sha256=image.sha256, content_type=image.content_type),
        content_type=image.content_type,
    )
    # Only its sender may fetch it: no shared cache may keep it; never sniffed as anything else.
    response["Cache-Control"] = "private, max-age=3600"
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Disposition"] = "inline"
    return response


# Counted per account and network as the other actions are (accounts.ratelimits).
_upload_limited = limit_view("image_upload")(_upload)
