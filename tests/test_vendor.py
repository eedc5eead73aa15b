"""The browser libraries in static/vendor/ are exactly the files package-lock.json pins: the
versions package.json names, copied unchanged from the packages npm installs (`npm ci`)."""

from __future__ import annotations

import json
import os
import re

import pytest

from tests.helpers import ROOT

PACKAGE = json.loads((ROOT / "package.json").read_text())
LOCK = json.loads((ROOT / "package-lock.json").read_text())
VENDOR = ROOT / "static" / "vendor"
MODULES = ROOT / "node_modules"


def _copies() -> list[tuple[str, str]]:
    """(source under node_modules, copy under static/vendor) for every vendored file."""
    pairs = []
    for source, dest in PACKAGE["vendor"].items():
        if "*" in source:
            folder, ext = source.rsplit("/", 1)[0], source.split("*")[1]
            names = sorted(p.name for p in (VENDOR / dest).glob(f"*{ext}"))
            assert names, f"nothing vendored for {source}"
            pairs += [(f"{folder}/{name}", f"{dest}{name}") for name in names]
        else:
            pairs.append((source, dest))
    return pairs


def test_every_dependency_is_pinned_to_the_version_the_lockfile_holds():
    for name, version in PACKAGE["dependencies"].items():
        assert re.fullmatch(r"\d+\.\d+\.\d+", version), f"{name} is not pinned: {version}"
        assert LOCK["packages"][f"node_modules/{name}"]["version"] == version


def test_every_vendored_file_is_there_and_comes_from_a_pinned_package():
    packages = set(PACKAGE["dependencies"])
    for source, dest in _copies():
        assert (VENDOR / dest).is_file(), f"static/vendor/{dest} is missing: npm run vendor"
        owner = "/".join(source.split("/")[:2]) if source.startswith("@") else source.split("/")[0]
        assert owner in packages


def test_the_vendored_files_are_the_installed_packages_files_unchanged():
    if not MODULES.is_dir():
        if os.environ.get("CI"):
            pytest.fail("node_modules is missing: CI runs `npm ci` before the tests")
        pytest.skip("no node_modules: run `npm ci` to check static/vendor/ against the lockfile")
    for source, dest in PACKAGE["vendor"].items():  # every file a wildcard names, no fewer
        if "*" in source:
            folder, ext = source.rsplit("/", 1)[0], source.split("*")[1]
            installed = sorted(p.name for p in (MODULES / folder).glob(f"*{ext}"))
            assert installed == sorted(p.name for p in (VENDOR / dest).glob(f"*{ext}"))
    for source, dest in _copies():
        installed = MODULES / source
        assert installed.read_bytes() == (VENDOR / dest).read_bytes(), (
            f"static/vendor/{dest} differs from {source}: npm ci && npm run vendor"
        )
