"""CSV that a spreadsheet opens as data: the one place every CSV the project writes goes through.

A cell that begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is read by Excel,
LibreOffice and Google Sheets as a formula (``=HYPERLINK(...)``, ``=cmd|...``), and model names,
organisations, categories and answers are written by people we do not trust. OWASP's rule: such
a cell is written with a single quote in front, which spreadsheets show as text. Spaces before
the sign do not hide it (LibreOffice can trim them), and every text cell is written in double
quotes, so a spreadsheet that splits on ``;`` (Excel in many locales) cannot cut a formula out of
the middle of one (``x;=cmd|...``).

Only text is touched. A number (int, float, Decimal; a negative score such as ``-0.5``) is
written as the csv module writes it and stays a number in the sheet; so does text that is
nothing but a plain decimal number (``"-0.5"``, ``"1e-3"``: a cost as a decimal string), since
no spreadsheet reads that as a formula. ``None`` stays an empty cell. Numbers are written bare
(``csv.QUOTE_NONNUMERIC``); a spreadsheet reads a quoted plain number as a number too.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Mapping
from typing import Any

# OWASP's list, plus the full-width forms of the four signs, which some spreadsheets fold into
# the ASCII ones on input.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")
QUOTE = "'"
_LEADING_SPACE = " \u00a0\n"
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def cell(value: Any) -> Any:
    """``value`` as a CSV cell that cannot be read as a formula: text starting with a formula
    character gets a leading ``'``; anything else (numbers, None, safe text) is returned as is."""
    if not isinstance(value, str) or not value.lstrip(_LEADING_SPACE).startswith(FORMULA_STARTS):
        return value
    if _PLAIN_NUMBER.fullmatch(value):
        return value  # "-0.5" is a number to every spreadsheet, never a formula
    return QUOTE + value


def row(values: Iterable[Any]) -> list[Any]:
    return [cell(v) for v in values]


class SafeWriter:
    """``csv.writer`` with every cell through ``cell``."""

    def __init__(self, out: Any, **kwargs: Any) -> None:
        self._writer = csv.writer(out, **{"quoting": csv.QUOTE_NONNUMERIC, **kwargs})

    def writerow(self, values: Iterable[Any]) -> Any:
        return self._writer.writerow(row(values))

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for values in rows:
            self.writerow(values)


class SafeDictWriter(csv.DictWriter):
    """``csv.DictWriter`` with every value (and the header's names) through ``cell``."""

    def __init__(self, out: Any, fieldnames: Any, **kwargs: Any) -> None:
        super().__init__(out, fieldnames, **{"quoting": csv.QUOTE_NONNUMERIC, **kwargs})

    def writeheader(self) -> Any:
        return self.writer.writerow(row(self.fieldnames))

    def writerow(self, rowdict: Mapping[str, Any]) -> Any:
        return super().writerow({k: cell(v) for k, v in rowdict.items()})

    def writerows(self, rowdicts: Iterable[Mapping[str, Any]]) -> None:
        for rowdict in rowdicts:
            self.writerow(rowdict)
