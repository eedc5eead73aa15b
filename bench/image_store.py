"""What an attached image costs before its battle is queued: upload checks, decode, re-encode,
hash, storage write and rows (arena.images.services.image_store).

Not a test: it prints figures. Each round stores a different photo-like PNG of about
``--megabytes`` MB (a smooth gradient with noise, so it compresses as a photo does, not as a
flat screenshot), ``--rounds`` times, into a temporary images folder, on the bench's own
database (PostgreSQL arena_bench_images unless DATABASE_URL says otherwise). It prints p50,
p99 and max of the whole store and of the clean step alone (Pillow), against issue 29's target:
a 2 MB PNG stored and re-encoded in under 300 ms (p50 of 20).

    uv run python bench/image_store.py [--rounds 20] [--megabytes 2]
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import common  # noqa: E402

common.django_environment(database="arena_bench_images")

TARGET_P50_MS = 300.0


def photo(seed: int, megabytes: float) -> bytes:
    """A PNG of about ``megabytes`` MB that compresses like a photo."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    side = int((megabytes * 1_000_000 / 2.6) ** 0.5)  # about 2.6 bytes a pixel at this noise
    y, x = np.mgrid[0:side, 0:side]
    base = np.stack([x * 255 / side, y * 255 / side, (x + y) * 127 / side], axis=-1)
    pixels = (base + rng.normal(0, 18, base.shape)).clip(0, 255).astype(np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, "PNG")
    return out.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--megabytes", type=float, default=2.0)
    args = parser.parse_args()
    common.setup_database()
    from django.conf import settings

    from accounts.models import User
    from arena.images.safety import image_clean
    from arena.images.services import image_store

    folder = tempfile.mkdtemp(prefix="arena-bench-images-")
    settings.STORAGES["images"] = {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": folder, "allow_overwrite": True},
    }
    limits = {**settings.IMAGES, "MAX_BYTES": 20_000_000}
    settings.IMAGES = limits
    user = User.objects.create_user(f"bench-{uuid.uuid4().hex[:8]}@example.com", "x")
    images = [photo(seed, args.megabytes) for seed in range(args.rounds)]
    sizes = sorted(len(i) for i in images)
    stored, cleaned = [], []
    for data in images:
        start = time.perf_counter()
        image_clean(data, max_bytes=limits["MAX_BYTES"], max_pixels=limits["MAX_PIXELS"])
        cleaned.append((time.perf_counter() - start) * 1000)
    for data in images:
        start = time.perf_counter()
        image_store(user=user, data=data)
        stored.append((time.perf_counter() - start) * 1000)
    p50 = common.percentile(stored, 0.5)
    print(f"{args.rounds} PNGs of {sizes[0] / 1e6:.2f}-{sizes[-1] / 1e6:.2f} MB; folder {folder}")
    print(f"{'step':<22} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for name, times in (("clean (Pillow)", cleaned), ("image_store (all)", stored)):
        print(
            f"{name:<22} {common.percentile(times, 0.5):8.1f} "
            f"{common.percentile(times, 0.99):8.1f} {max(times):8.1f}"
        )
    verdict = "meets" if p50 <= TARGET_P50_MS else "MISSES"
    print(f"target: stored and re-encoded p50 <= {TARGET_P50_MS:.0f} ms: {p50:.1f} ms {verdict}")


if __name__ == "__main__":
    main()
