"""The one rule for every CSV the project writes: text that a spreadsheet would read as a
formula is written with a leading quote; numbers stay numbers."""

from __future__ import annotations

import csv
import io
from decimal import Decimal

import pytest

from arena.core.csv_safe import SafeDictWriter, SafeWriter, cell

HYPERLINK = '=HYPERLINK("http://x","click")'


@pytest.mark.parametrize(
    "text",
    [
        HYPERLINK,
        "+1+cmd|' /C calc'!A0",
        "-2+3",
        "@SUM(A1:A2)",
        "\t=1",
        "\r=1",
        "\uff1d1+1",
        " =1",
        "\u00a0@x",
        "\n=1",
    ],
)
def test_text_that_starts_like_a_formula_gets_a_leading_quote(text):
    assert cell(text) == "'" + text


@pytest.mark.parametrize(
    "value", [-0.5, 3, Decimal("-1.25"), None, "", "-0.5", "+3", "1e-3", "Alpha", "a=b", "x =1"]
)
def test_numbers_empty_cells_and_plain_text_are_left_as_they_are(value):
    assert cell(value) == value


def test_the_writers_neutralise_every_text_cell_and_keep_numbers_numeric():
    out = io.StringIO()
    SafeWriter(out).writerow([HYPERLINK, -0.5, "@x", 7])
    table = SafeDictWriter(out, fieldnames=["name", "score"])
    table.writeheader()
    table.writerows([{"name": "-1+1", "score": -1.5}])
    table.writerow({"name": "ok", "score": Decimal("-2")})
    rows = list(csv.reader(io.StringIO(out.getvalue())))
    assert rows == [
        ["'" + HYPERLINK, "-0.5", "'@x", "7"],
        ["name", "score"],
        ["'-1+1", "-1.5"],
        ["ok", "-2"],
    ]


def test_every_text_cell_is_quoted_so_no_separator_can_cut_a_formula_out_of_it():
    out = io.StringIO()
    SafeWriter(out).writerow(["x;=cmd|' /C calc'!A0", -0.5, None])
    SafeDictWriter(out, fieldnames=["name", "score"]).writerow({"name": "a;@b", "score": 2})
    # Split as a spreadsheet in a ";" locale would, honouring the quotes: nothing starts a formula.
    for line in out.getvalue().splitlines():
        cells = next(csv.reader([line], delimiter=";"))
        assert not any(c.lstrip().startswith(("=", "@")) for c in cells), cells
    assert out.getvalue().splitlines() == ['"x;=cmd|\' /C calc\'!A0",-0.5,""', '"a;@b",2']
