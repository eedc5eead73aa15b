from __future__ import annotations

import hashlib
import io

import pytest
from PIL import ExifTags, Image

from arena.core.errors import ServiceError
from arena.images.safety import image_clean
from tests.images.pictures import picture

LIMITS = {"max_bytes": 5_000_000, "max_pixels": 25_000_000}


def _refusal(data: bytes, **limits) -> str:
    with pytest.raises(ServiceError) as refused:
        image_clean(data, **{**LIMITS, **limits})
    return refused.value.code


def _gps_jpeg() -> bytes:
    exif = Image.Exif()
    exif[ExifTags.Base.Make] = "PhoneMaker"
    gps = exif.get_ifd(ExifTags.IFD.GPSInfo)
    gps[ExifTags.GPS.GPSLatitudeRef] = "N"
    gps[ExifTags.GPS.GPSLatitude] = (48.0, 51.0, 29.0)
    return picture("JPEG", exif=exif)


def test_a_photos_exif_location_is_gone_after_cleaning():
    sent = _gps_jpeg()
    assert Image.open(io.BytesIO(sent)).getexif().get_ifd(ExifTags.IFD.GPSInfo)

    clean = image_clean(sent, **LIMITS)

    kept = Image.open(io.BytesIO(clean.data))
    assert kept.format == "JPEG" and clean.content_type == "image/jpeg"
    assert dict(kept.getexif()) == {}
    assert b"Exif" not in clean.data and b"PhoneMaker" not in clean.data


def test_png_text_and_colour_profile_are_not_kept():
    from PIL import PngImagePlugin

    info = PngImagePlugin.PngInfo()
    info.add_text("Author", "Alice Example")
    image = Image.new("RGBA", (20, 20), (1, 2, 3, 128))
    out = io.BytesIO()
    image.save(out, "PNG", pnginfo=info, icc_profile=b"\0" * 128)

    clean = image_clean(out.getvalue(), **LIMITS)

    assert b"Alice Example" not in clean.data and b"iCCP" not in clean.data
    assert Image.open(io.BytesIO(clean.data)).getpixel((3, 3)) == (1, 2, 3, 128)


def test_the_clean_copy_is_named_by_the_hash_of_its_own_bytes_and_is_the_same_each_time():
    first = image_clean(picture("PNG"), **LIMITS)
    again = image_clean(picture("PNG"), **LIMITS)
    assert first.sha256 == hashlib.sha256(first.data).hexdigest() == again.sha256
    assert (first.width, first.height) == (64, 48)


def test_each_format_is_kept_as_itself_and_a_gif_as_its_first_frame_in_png():
    assert image_clean(picture("WEBP"), **LIMITS).content_type == "image/webp"
    frames = [Image.new("RGB", (10, 10), c) for c in ((255, 0, 0), (0, 0, 255))]
    out = io.BytesIO()
    frames[0].save(out, "GIF", save_all=True, append_images=frames[1:])

    clean = image_clean(out.getvalue(), **LIMITS)

    assert clean.content_type == "image/png"
    kept = Image.open(io.BytesIO(clean.data)).convert("RGB")
    assert kept.getpixel((5, 5)) == (255, 0, 0)


def test_the_orientation_exif_gave_is_applied_before_exif_is_dropped():
    exif = Image.Exif()
    exif[ExifTags.Base.Orientation] = 6  # rotated 90 degrees: the upright picture is 48 x 64
    clean = image_clean(picture("JPEG", size=(64, 48), exif=exif), **LIMITS)
    assert (clean.width, clean.height) == (48, 64)


def test_a_file_that_is_not_an_image_is_refused():
    assert _refusal(b"<html><script>alert(1)</script></html>") == "image_unreadable"
    assert _refusal(b"") == "image_empty"


def test_a_file_whose_header_claims_an_image_it_is_not_is_refused():
    png = picture("PNG")
    assert _refusal(png[:60]) == "image_unreadable"  # the header, then nothing decodable
    assert _refusal(png[:33] + b"\0" * 400) == "image_unreadable"


def test_other_image_formats_are_refused():
    out = io.BytesIO()
    Image.new("RGB", (8, 8)).save(out, "BMP")
    assert _refusal(out.getvalue()) == "image_unreadable"


def test_an_image_over_the_byte_limit_is_refused_not_cut():
    sent = picture("PNG")
    with pytest.raises(ServiceError) as refused:
        image_clean(sent, max_bytes=len(sent) - 1, max_pixels=LIMITS["max_pixels"])
    assert refused.value.code == "image_too_large"
    assert "at most" in refused.value.message


def test_a_decompression_bomb_is_refused_from_its_header_before_it_is_decoded():
    # 10,000 x 10,000 pixels of one colour: a few kilobytes on disk, 100 million pixels decoded.
    out = io.BytesIO()
    Image.new("1", (10_000, 10_000)).save(out, "PNG")
    bomb = out.getvalue()
    assert len(bomb) < 100_000

    with pytest.raises(ServiceError) as refused:
        image_clean(bomb, **LIMITS)
    assert refused.value.code == "image_too_many_pixels"
    assert "10,000 x 10,000" in refused.value.message


def test_an_image_past_pillows_own_bomb_limit_is_the_same_refusal():
    out = io.BytesIO()
    Image.new("1", (20_000, 10_000)).save(out, "PNG")  # 200 million pixels: Pillow raises
    assert _refusal(out.getvalue()) == "image_too_many_pixels"
