"""The shared parameters' rules as seed 001 states them, checked once for battles, compare
runs and evaluations (catalog.services.params_valid)."""

from __future__ import annotations

import pytest

from arena.catalog.services import params_valid
from arena.core.errors import ServiceError


@pytest.mark.parametrize("top_p", [0, "0", -0.1, 1.01, "nan"])
def test_top_p_must_be_more_than_0_and_at_most_1(top_p):
    with pytest.raises(ServiceError, match="'top_p' must be more than 0 and at most 1"):
        params_valid(params={"top_p": top_p})


def test_the_edges_that_are_allowed_pass_typed_and_unset_ones_are_left_out():
    got = params_valid(params={"top_p": "1", "temperature": 0, "max_tokens": "64"})
    assert got == {"top_p": 1.0, "temperature": 0.0, "max_tokens": 64}
    assert params_valid(params={"top_p": 1e-9, "temperature": "", "max_tokens": None}) == {
        "top_p": 1e-9
    }


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"temperature": 2.5}, "'temperature' must be between 0 and 2"),
        ({"temperature": True}, "'temperature' must be a number"),
        ({"max_tokens": 0}, "'max_tokens' must be a whole number"),
        ({"max_tokens": 1.5}, "'max_tokens' must be a whole number"),
        ({"max_tokens": "many"}, "'max_tokens' must be a number"),
        ({"top_k": 5}, "Unknown parameter 'top_k'"),
    ],
)
def test_other_values_out_of_range_are_refused(params, message):
    with pytest.raises(ServiceError, match=message):
        params_valid(params=params)
