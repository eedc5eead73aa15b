import sys

import pytest

# The shared helpers assert too: let pytest explain their failures as it does a test's.
pytest.register_assert_rewrite("tests.helpers")

# Compiled test modules (pytest's assertion rewrites), and the project's modules imported from
# here on, are kept in the ignored __pycache__ folders whatever PYTHONDONTWRITEBYTECODE says
# (this machine sets it), or every xdist worker compiles and rewrites the ~300 test modules again
# on every run: a fifth of the fast layer's CPU. This package is imported before any test module
# or conftest (those pytest-django imports to set Django up come earlier, and are not kept).
sys.dont_write_bytecode = False
