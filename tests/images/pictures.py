"""Images the tests send, made by Pillow."""

from __future__ import annotations

import io

from PIL import Image


def picture(
    fmt: str = "PNG", size: tuple[int, int] = (64, 48), colour=(200, 30, 30), **save
) -> bytes:
    """A small image in ``fmt``, encoded by Pillow."""
    image = Image.new("RGB", size, colour)
    out = io.BytesIO()
    image.save(out, fmt, **save)
    return out.getvalue()
