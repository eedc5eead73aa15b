"""What an uploaded image may be, and the clean copy that is kept of it.

Every image is decoded and encoded again with Pillow: a file that is not the image it claims to
be fails to decode, and what is kept carries only pixels. EXIF (a photo's location, camera and
time), text chunks, XMP and colour profiles are not written again. Limits are checked before
the pixels are decoded: the byte size first, then the dimensions from the header, so a small
file that would decompress to an enormous image (a decompression bomb) is refused unread.
"""

from __future__ import annotations

import hashlib
import io
import warnings
from dataclasses import dataclass

from PIL import Image, ImageOps, UnidentifiedImageError

from arena.core.errors import ServiceError

# The formats taken, and the type each is kept as: a GIF's first frame becomes a PNG.
KEPT_AS = {"PNG": "PNG", "JPEG": "JPEG", "WEBP": "WEBP", "GIF": "PNG"}
CONTENT_TYPES = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp"}
EXTENSIONS = {"image/png": "png", "image/jpeg": "jpg", "image/webp": "webp"}
NOT_AN_IMAGE = "That file is not a PNG, JPEG, WebP or GIF image."


@dataclass(frozen=True)
class CleanImage:
    data: bytes
    content_type: str
    width: int
    height: int
    sha256: str


def _too_many(max_pixels: int) -> str:
    return f"An image may have at most {max_pixels:,} pixels."


def _megabytes(n: int) -> str:
    return f"{n / 1_000_000:.1f} MB"


def image_clean(data: bytes, *, max_bytes: int, max_pixels: int) -> CleanImage:
    """The clean copy of ``data``, or a ServiceError saying which limit or rule refused it."""
    if not data:
        raise ServiceError("image_empty", "That file is empty.")
    if len(data) > max_bytes:
        raise ServiceError(
            "image_too_large",
            f"That image is {_megabytes(len(data))}; an image may be at most "
            f"{_megabytes(max_bytes)}.",
        )
    try:
        with warnings.catch_warnings():
            # Our own limit decides below; Pillow's (a warning, an error past twice it) stays
            # as a backstop, and its error is the same refusal.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as probe:  # reads the header only
                source_format, (width, height) = probe.format, probe.size
    except Image.DecompressionBombError:
        raise ServiceError("image_too_many_pixels", _too_many(max_pixels)) from None
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError):
        raise ServiceError("image_unreadable", NOT_AN_IMAGE) from None
    if source_format not in KEPT_AS:
        raise ServiceError("image_unreadable", NOT_AN_IMAGE)
    if width * height > max_pixels:
        raise ServiceError(
            "image_too_many_pixels",
            f"That image is {width:,} x {height:,} pixels. {_too_many(max_pixels)}",
        )
    try:
        with Image.open(io.BytesIO(data)) as image:
            image.seek(0)  # an animation's first frame
            image.load()
            # The orientation EXIF gave is applied before EXIF is dropped: photos stay upright.
            upright = ImageOps.exif_transpose(image)
            # What the encoders would otherwise carry over from the file (an ICC profile, text,
            # dpi): only transparency is pixels.
            upright.info = {k: v for k, v in upright.info.items() if k == "transparency"}
            kept_format = KEPT_AS[source_format]
            encoded = _encode(upright, kept_format)
            width, height = upright.size
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError, EOFError):
        raise ServiceError("image_unreadable", NOT_AN_IMAGE) from None
    return CleanImage(
        data=encoded,
        content_type=CONTENT_TYPES[kept_format],
        width=width,
        height=height,
        sha256=hashlib.sha256(encoded).hexdigest(),
    )


def _encode(image: Image.Image, kept_format: str) -> bytes:
    out = io.BytesIO()
    if kept_format == "JPEG":
        if image.mode not in ("L", "RGB"):
            image = image.convert("RGB")
        image.save(out, "JPEG", quality=90)
    elif kept_format == "WEBP":
        if image.mode not in ("RGB", "RGBA"):
            image = image.convert("RGBA")
        image.save(out, "WEBP", quality=90)
    else:
        if image.mode not in ("1", "L", "LA", "P", "RGB", "RGBA"):
            image = image.convert("RGBA")
        # Level 1: a screenshot or chart compresses nearly as well, several times faster.
        image.save(out, "PNG", compress_level=1)
    return out.getvalue()
