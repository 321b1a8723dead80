"""Reading an owner's uploaded CSV file of numeric columns.

:func:`parse_csv` turns the raw bytes of an upload into a header of column
names and a float64 matrix, or raises :class:`CsvError` listing what is wrong
in words an owner can act on ("line 5, column 'age': not a number: 'abc'").
It never returns partial data: a file is accepted whole or not at all.

This module is plain Python and numpy; it does not import Django.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass

import numpy as np

__all__ = ["MAX_REPORTED", "MAX_NAME_LENGTH", "CellError", "CsvError", "ParsedCsv", "parse_csv"]

#: At most this many problems are collected before reading stops.
MAX_REPORTED = 20
#: The longest column name accepted, in characters.
MAX_NAME_LENGTH = 64
#: How many problems ``str(CsvError)`` spells out before "and N more".
_SHOWN_IN_SUMMARY = 5
#: A cell quoted in a message is cut to this many characters.
_QUOTE_LENGTH = 30

_BOM = b"\xef\xbb\xbf"
# A plain decimal number with ASCII digits: no underscores, no NaN or
# infinity, no hexadecimal, none of the other spellings float() accepts.
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


@dataclass(frozen=True)
class CellError:
    """One problem in the file.

    ``row`` is the 1-based line number in the file (the header is line 1), or
    None for a problem with the whole file; ``column`` is the header name of
    the column concerned, or None if the problem is not about one column.
    """

    row: int | None
    column: str | None
    message: str

    def describe(self) -> str:
        """The problem as one phrase, e.g. "line 5, column 'age': empty cell"."""
        where = []
        if self.row is not None:
            where.append(f"line {self.row}")
        if self.column is not None:
            where.append(f"column {self.column!r}")
        return f"{', '.join(where)}: {self.message}" if where else self.message


class CsvError(ValueError):
    """The file was rejected; ``errors`` lists why, in file order.

    ``errors`` holds at most :data:`MAX_REPORTED` problems. ``truncated`` is
    True when reading stopped there although the file had more problems.
    """

    def __init__(self, errors: list[CellError], truncated: bool = False):
        self.errors = list(errors)
        self.truncated = truncated
        shown = [e.describe() for e in self.errors[:_SHOWN_IN_SUMMARY]]
        summary = "; ".join(shown)
        hidden = len(self.errors) - len(shown)
        if hidden:
            summary += f"; and {hidden} more"
        if truncated:
            summary += f" (checking stopped after {MAX_REPORTED} problems)"
        super().__init__(summary)


@dataclass(frozen=True)
class ParsedCsv:
    """An accepted file: the header names (stripped) and the values, float64
    of shape ``(n_rows, n_columns)``."""

    columns: list[str]
    values: np.ndarray


class _Problems:
    """Collects problems until :data:`MAX_REPORTED`; notes whether there were more."""

    def __init__(self):
        self.errors: list[CellError] = []
        self.truncated = False

    def add(self, row: int | None, column: str | None, message: str) -> None:
        if len(self.errors) < MAX_REPORTED:
            self.errors.append(CellError(row, column, message))
        else:
            self.truncated = True

    def raise_if_any(self) -> None:
        if self.errors:
            raise CsvError(self.errors, self.truncated)


def _fail(message: str, row: int | None = None) -> CsvError:
    return CsvError([CellError(row, None, message)])


def _quoted(text: str) -> str:
    if len(text) <= _QUOTE_LENGTH:
        return repr(text)
    return repr(text[:_QUOTE_LENGTH]) + "..."


def _limit_text(x: float) -> str:
    """``1e15`` rather than ``1e+15``; ``1000`` stays ``1000``."""
    return format(x, "g").replace("e+", "e")


def _parse_number(cell: str, max_abs: float) -> float | str:
    """The value of a cell, or a message saying why it is not acceptable."""
    text = cell.strip()
    if not text:
        return "empty cell"
    if _NUMBER.fullmatch(text):
        value = float(text)  # overflows to +-inf beyond the float range
        if not abs(value) <= max_abs:
            return f"too large (limit {_limit_text(max_abs)})"
        return value
    body = text[1:] if text[0] in "+-" else text
    if body.lower() == "nan":
        return "NaN is not allowed"
    if body.lower() in ("inf", "infinity"):
        return "infinity is not allowed"
    signed_word = text[0] in "+-" and len(text) > 1 and not (text[1].isdigit() or text[1] == ".")
    if text[0] in "=@" or signed_word:
        return f"looks like a spreadsheet formula: {_quoted(text)}"
    return f"not a number: {_quoted(text)}"


def _decode(data: bytes) -> str:
    """The text of the file, without a UTF-8 byte order mark."""
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    if not data.strip():
        raise _fail("the file is empty")
    nul = data.find(b"\x00")
    if nul >= 0:
        raise _fail(
            "this is a binary file, not CSV text (it contains NUL bytes; "
            "text saved as UTF-16 looks like this too: save it as UTF-8)",
            row=data.count(b"\n", 0, nul) + 1,
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = data[exc.start]
        raise _fail(
            f"the file is not UTF-8 text (byte 0x{bad:02X} cannot be read); save it as 'CSV UTF-8'",
            row=data.count(b"\n", 0, exc.start) + 1,
        ) from None


def _is_blank(row: list[str]) -> bool:
    return all(not cell.strip() for cell in row)


#: A text cell starting with one of these is a formula in a spreadsheet (CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _check_header(row: list[str], max_columns: int) -> list[str]:
    """The stripped column names of the first line, or CsvError."""
    if _is_blank(row):
        raise _fail("the first line is blank; it must be a header of column names", row=1)
    if len(row) > max_columns:
        raise _fail(f"the file has {len(row)} columns; the limit is {max_columns}", row=1)
    names = [cell.strip() for cell in row]
    if all(_NUMBER.fullmatch(name) for name in names):
        raise _fail("the first line must be a header of column names", row=1)
    problems = _Problems()
    first_seen: dict[str, int] = {}
    for number, name in enumerate(names, start=1):
        if not name:
            problems.add(1, None, f"column {number} has no name")
        elif len(name) > MAX_NAME_LENGTH:
            problems.add(
                1, None, f"the name of column {number} is longer than {MAX_NAME_LENGTH} characters: {_quoted(name)}"
            )
        elif not name.isprintable():
            problems.add(
                1, None, f"the name of column {number} contains a character that cannot be printed: {_quoted(name)}"
            )
        elif name[0] in FORMULA_STARTS:
            problems.add(
                1, None, f"the name of column {number} looks like a spreadsheet formula: {_quoted(name)}"
            )
        elif name in first_seen:
            problems.add(1, name, f"column {number} has the same name as column {first_seen[name]}")
        else:
            first_seen[name] = number
    problems.raise_if_any()
    return names


def _cells(count: int) -> str:
    return f"{count} cell" if count == 1 else f"{count} cells"


def parse_csv(
    data: bytes,
    *,
    max_bytes: int = 5 * 1024 * 1024,
    max_rows: int = 100_000,
    max_columns: int = 50,
    max_abs: float = 1e15,
) -> ParsedCsv:
    """Validate an uploaded CSV file of numeric columns and return its values.

    The file must be UTF-8 text (a byte order mark is allowed) of at most
    ``max_bytes`` bytes, comma separated, quoted fields allowed. The first line
    is a header of at most ``max_columns`` unique, printable, non-empty names
    of at most 64 characters. Then come between 1 and ``max_rows`` data rows,
    each with one cell per column, each cell a finite decimal number (``12``,
    ``-3.5``, ``+4``, ``1e3``, ``.5``) of absolute value at most ``max_abs``.
    Blank lines at the end are ignored; elsewhere they are an error.

    Raises :class:`CsvError` naming the line and column of each problem (up
    to :data:`MAX_REPORTED`; reading goes on after a bad cell so the owner
    sees several at once). Limits on size, rows and columns, and problems
    with the file as a whole, are reported alone and at once.
    """
    if not isinstance(data, (bytes, bytearray)):
        raise _fail(f"expected the bytes of the file, got {type(data).__name__}")
    if len(data) > max_bytes:
        raise _fail(
            f"the file is larger than the limit of {_limit_text(max_bytes / 2**20)} MB "
            f"({len(data):,} bytes, the limit is {max_bytes:,})"
        )
    text = _decode(bytes(data))

    reader = csv.reader(io.StringIO(text, newline=""), strict=True, skipinitialspace=True)
    problems = _Problems()
    values: list[list[float]] = []  # the rows, kept while no problem is found
    n_rows = 0
    columns: list[str] | None = None
    blank_lines: list[int] = []  # blank lines not yet known to be in the middle
    line = 1  # the line on which the next record starts
    try:
        for row in reader:
            if problems.truncated:
                break
            start, line = line, reader.line_num + 1
            if columns is None:
                columns = _check_header(row, max_columns)
                continue
            if _is_blank(row):
                if len(blank_lines) <= MAX_REPORTED:  # more could never be reported
                    blank_lines.append(start)
                continue
            for blank in blank_lines:
                problems.add(blank, None, "blank line (blank lines are allowed only at the end)")
            blank_lines.clear()
            if n_rows == max_rows:
                raise _fail(f"the file has more than {max_rows:,} data rows (the limit)")
            n_rows += 1
            if len(row) != len(columns):
                problems.add(start, None, f"has {_cells(len(row))} but the header has {len(columns)}")
                continue
            parsed = [_parse_number(cell, max_abs) for cell in row]
            for name, item in zip(columns, parsed):
                if isinstance(item, str):
                    problems.add(start, name, item)
            if not problems.errors:
                values.append(parsed)
    except csv.Error as exc:
        problems.add(reader.line_num, None, f"the file is not valid CSV ({exc}); check the quotes on this line")
    problems.raise_if_any()
    if not n_rows:
        raise _fail("the file has a header but no data rows")
    matrix = np.array(values, dtype=np.float64).reshape(n_rows, len(columns))
    return ParsedCsv(columns=columns, values=matrix)
