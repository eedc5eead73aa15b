import pytest

# The shared helpers assert too: let pytest explain their failures as it does a test's.
pytest.register_assert_rewrite("tests.helpers")
