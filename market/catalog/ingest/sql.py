"""The SQL of reading cells (DuckDB): what a cell is once trimmed (missing, a number, a timestamp),
its flags (which types it does not fit, formula-like), and a column read as its confirmed type.

:mod:`.scan` asks DuckDB only about the cells its Arrow fast paths cannot settle (the distinct
texts of a batch's column), with these expressions, so both agree by construction; :mod:`.typed`
writes a typed file from the raw one with them. No Django.
"""

from __future__ import annotations

import duckdb

from .. import bounded
from ..bounded import Limits

#: Cells that mean "missing" (besides empty ones), compared after trimming spaces.
MISSING_MARKERS = ("NA", "N/A", "NaN", "nan", "null", "NULL", "None", "n/a", "NAN", "Null", "none")
_INTEGER_LIMIT = 2**53  # whole numbers beyond this are not exact in a double


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _connect(tmpdir: str | None = None, limits: Limits | None = None) -> duckdb.DuckDBPyConnection:
    limits = limits or Limits()
    con = duckdb.connect(config={
        "threads": limits.threads, "memory_limit": f"{limits.duckdb_memory // bounded.MiB}MB",
        "enable_external_access": True,
        # its allocator gives memory back after each query past a batch's worth (it would keep up to 128 MB:
        # many short queries, one a batch, held it all)
        "allocator_flush_threshold": f"{limits.batch_bytes // bounded.MiB}MB",
    })
    if tmpdir:
        con.execute(f"SET temp_directory = {_lit(tmpdir)}")
    return con


def _missing_sql(v: str) -> str:
    """SQL true when the text ``v`` (already trimmed) is missing."""
    markers = ", ".join(_lit(m) for m in MISSING_MARKERS)  # a list, not IN: DuckDB makes a long IN a join
    return (f"({v} IS NULL OR {v} = '' "
            f"OR (CASE WHEN length({v}) <= 4 THEN list_contains([{markers}], {v}) ELSE FALSE END))")


def _number_sql(v: str) -> str:
    """The trimmed text ``v`` as a double, or NULL; a failed cast is slow, so it is tried only on
    text that starts like a number."""
    starts = ", ".join(str(ord(c)) for c in "+-.0123456789")  # ascii() once per cell, not once per comparison
    return f"(CASE WHEN ascii({v}) IN ({starts}) THEN TRY_CAST({v} AS DOUBLE) END)"


_CHECKED = ("integer", "decimal", "boolean", "date", "datetime")
_WHAT = {
    "integer": "not whole numbers", "decimal": "not numbers", "boolean": "not true/false or yes/no",
    "date": "not dates (YYYY-MM-DD)", "datetime": "not dates or times (YYYY-MM-DD HH:MM:SS)",
}


def _typed_sql(kind: str, i: int, *, missing: bool = True) -> str:
    """Column ``i`` of :func:`_layers` as type ``kind`` (a strict cast: the checks said it fits); NULL
    where missing, unless ``missing`` is false (no cell of the column is: the check is left out)."""
    v = f"v{i}"
    if kind == "integer":
        value = f"CAST(CAST({v} AS DOUBLE) AS BIGINT)"
    elif kind == "decimal":
        value = f"CAST({v} AS DOUBLE)"
    elif kind == "boolean":
        value = f"(lower({v}) IN ('true', 'yes'))"
    elif kind == "date":
        value = f"CAST({v} AS DATE)"
    elif kind == "datetime":
        value = f"CAST({v} AS TIMESTAMP)"
    else:
        value = v
    return f"CASE WHEN m{i} THEN NULL ELSE {value} END" if missing else value


def _plain(x):
    """A summary figure as JSON can hold it: ints and floats stay, dates become ISO text."""
    if x is None or isinstance(x, (int, float, str, bool)):
        return x
    if hasattr(x, "isoformat"):
        return x.isoformat()
    return str(x)


def _layers(raw_path: str, names: list[str], wanted: dict[int, str], *, rows: bool = True,
            prefix: int | None = None) -> str:
    """A query over the raw file computing each costly value of a cell once, in layers (DuckDB
    keeps a subquery's projection, so nothing is computed twice): ``r`` the row index and, for
    each column ``i`` in ``wanted``: ``vi`` the trimmed text, ``mi`` true when it is missing, and
    when ``wanted[i]`` holds ``"n"`` the number ``ni`` (or NULL), when it holds ``"t"`` the
    timestamp ``ti`` (or NULL) of text shaped like a date."""
    trimmed = ", ".join(f"trim({_ident(names[i])}) AS v{i}" for i in wanted)
    first = (f"SELECT file_row_number AS r, {trimmed} FROM read_parquet({_lit(raw_path)}, file_row_number=true)"
             if rows else f"SELECT {trimmed} FROM read_parquet({_lit(raw_path)})")
    if prefix is not None:  # only the rows before ``prefix``
        first += f" WHERE file_row_number < {int(prefix)}"
    return cells_sql(first, wanted)


def cells_sql(first: str, wanted: dict[int, str]) -> str:
    """:func:`_layers`'s cells over any query ``first`` giving the trimmed texts ``vi``."""
    parts = []
    for i, need in wanted.items():
        v = f"v{i}"
        parts.append(f"{_missing_sql(v)} AS m{i}")
        if "n" in need:
            parts.append(f"{_number_sql(v)} AS n{i}")
        if "t" in need:
            shaped = f"(length({v}) >= 10 AND substr({v}, 5, 1) = '-' AND substr({v}, 8, 1) = '-')"
            parts.append(f"(CASE WHEN {shaped} THEN TRY_CAST({v} AS TIMESTAMP) END) AS t{i}")
    return f"SELECT *, {', '.join(parts)} FROM ({first})"


_MARKERS = ("",) + MISSING_MARKERS  # a missing cell's text is recorded as bit (1 + its position); NULL as bit 0
_FORMULA = 1 << len(_CHECKED)  # the flag of a present text that starts like a spreadsheet formula
_MISSING_FLAG = 1 << (len(_CHECKED) + 1)  # the flag of a missing cell (and no other)
_FLAGS = len(_CHECKED) + 2  # the number of flag bits


def _flags_sql(i: int) -> str:
    """Column ``i`` of :func:`_layers` (with ``"nt"``): ``fi``, a small integer of flags per cell (missing, which
    types it does not fit, formula-like), and ``ki``, the missing-value marker of a missing cell as a bit."""
    v, n, t = f"v{i}", f"n{i}", f"t{i}"
    markers = "[" + ", ".join(_lit(m) for m in _MARKERS) + "]"
    fits = {
        "integer": f"(isfinite({n}) AND {n} = round({n}) AND abs({n}) <= {_INTEGER_LIMIT})",
        "decimal": f"isfinite({n})",
        "boolean": f"(CASE WHEN length({v}) BETWEEN 2 AND 5 "
                   f"THEN list_contains(['true', 'false', 'yes', 'no'], lower({v})) ELSE FALSE END)",
        "date": f"(CASE WHEN length({v}) = 10 AND {t} IS NOT NULL THEN TRY_CAST({v} AS DATE) IS NOT NULL "
                "ELSE FALSE END)",
        "datetime": f"({t} IS NOT NULL)",
    }
    # _MISSING_FLAG: missing; else bit j set when the cell does not fit kind j, _FORMULA when formula-like.
    # A number is never a boolean, a date, or formula-like; a timestamp never a number, a boolean or
    # formula-like; other text never a number or a date: most cells take one short branch.
    general = " + ".join(f"(CASE WHEN {fits[k]} THEN 0 ELSE {1 << j} END)" for j, k in enumerate(_CHECKED))
    formula = f"(CASE WHEN starts_with({v}, '=') OR starts_with({v}, '@') THEN {_FORMULA} ELSE 0 END)"
    bit = {k: 1 << j for j, k in enumerate(_CHECKED)}
    number = (f"{bit['boolean'] + bit['date'] + bit['datetime']} + (CASE WHEN isfinite({n}) THEN "
              f"(CASE WHEN abs({n}) <= {_INTEGER_LIMIT} AND {n} = round({n}) THEN 0 ELSE {bit['integer']} END) "
              f"ELSE {bit['integer'] + bit['decimal']} END)")
    stamp = (f"{bit['integer'] + bit['decimal'] + bit['boolean']} + (CASE WHEN {fits['date']} THEN 0 "
             f"ELSE {bit['date']} END)")
    text = (f"{bit['integer'] + bit['decimal'] + bit['date'] + bit['datetime']} + "
            f"(CASE WHEN {fits['boolean']} THEN 0 ELSE {bit['boolean']} END) + {formula}")
    return (f"(CASE WHEN m{i} THEN {_MISSING_FLAG} WHEN {n} IS NOT NULL AND {t} IS NULL THEN {number} "
            f"WHEN {t} IS NOT NULL AND {n} IS NULL THEN {stamp} WHEN {n} IS NULL THEN {text} "
            f"ELSE {general} + {formula} END) AS f{i}, "
            f"(CASE WHEN m{i} THEN (CASE WHEN {v} IS NULL THEN 1 "
            f"ELSE 1 << list_position({markers}, {v}) END) END) AS k{i}")
