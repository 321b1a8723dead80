"""An owner's choice of column types and missing policies, judged against what was inferred
(:func:`check_columns`), and the typed file written from the raw one with DuckDB (:func:`write_typed`:
after a change of columns, or when the typed file written while reading had to be redone). No Django.
"""

from __future__ import annotations

import duckdb

from ..bounded import Limits
from ..spec.columns import TYPES
from .reading import IngestError
from .sql import _WHAT, _connect, _ident, _layers, _lit, _typed_sql


def markers_text(markers) -> str:
    """The missing-value markers found in a column, for a sentence's parentheses: ``"empty, NA"`` (an
    empty cell is stored as the marker ``"(empty)"``, which would read "((empty))")."""
    return ", ".join("empty" if m == "(empty)" else m for m in markers or [])


def _cells(n: int) -> str:
    return f"{n} cell" if n == 1 else f"{n} cells"


def _values(n: int) -> str:
    return f"{n} value is" if n == 1 else f"{n} values are"


def check_columns(current: list[dict], changes: list) -> tuple[list[dict], dict[str, str]]:
    """Apply an owner's ``changes`` (``[{"name", "type", "missing"}]``; the columns not named keep
    theirs) to ``current`` (what :func:`infer` found). Returns the new columns and the problems,
    one sentence per column name (empty when all is well)."""
    by_name = {c["name"]: dict(c) for c in current}
    problems: dict[str, str] = {}
    if not isinstance(changes, list) or not changes:
        return list(current), {"columns": "give a list of {name, type, missing} objects"}
    seen = set()
    for item in changes:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            problems["columns"] = "each item must be an object with a name"
            continue
        name = item["name"]
        if name in seen:
            problems[name] = f"column {name!r} is named twice"
            continue
        seen.add(name)
        if name not in by_name:
            problems[name] = f"there is no column {name!r} (the columns are {', '.join(map(repr, by_name))})"
            continue
        extra = set(item) - {"name", "type", "missing"}
        if extra:
            problems[name] = f"column {name!r}: unknown field {sorted(extra)[0]!r} (give name, type and missing)"
            continue
        column = by_name[name]
        kind = item.get("type", column["type"])
        policy = item.get("missing", column["missing"])
        if kind not in TYPES:
            problems[name] = f"column {name!r}: type must be one of {', '.join(TYPES)}, got {kind!r}"
            continue
        if policy not in ("none", "exclude", "category"):
            problems[name] = f"column {name!r}: missing must be none, exclude or category, got {policy!r}"
            continue
        bad = (column.get("fits") or {}).get(kind)
        if bad:
            problems[name] = (
                f"column {name!r}: {_values(bad['bad'])} {_WHAT[kind]}, first at line {bad['line']} "
                f"({bad['example']!r}), so it cannot be {kind}"
            )
            continue
        if policy == "none" and kind != "ignored" and column.get("missing_count"):
            markers = markers_text(column.get("markers"))
            line = column.get("missing_line")
            problems[name] = (
                f"column {name!r}: {_cells(column['missing_count'])} missing ({markers})"
                + (f", first at line {line}" if line else "")
                + "; choose exclude or category, not none"
            )
            continue
        column["type"], column["missing"] = kind, policy
    if all(by_name[n]["type"] == "ignored" for n in by_name) and not problems:
        problems["columns"] = "at least one column must be kept (not all can be ignored)"
    return [by_name[c["name"]] for c in current], problems


def write_typed(
    raw_path: str, typed_path: str, columns: list[dict], *, tmpdir: str | None = None, limits: Limits | None = None,
) -> None:
    """The typed Parquet file of ``columns`` (their confirmed types; ignored columns left out)."""
    kept = [c for c in columns if c["type"] != "ignored"]
    if not kept:
        raise IngestError(["every column is ignored: keep at least one"])
    con = _connect(tmpdir, limits)
    try:
        names = [c["name"] for c in columns]
        wanted = {i: "" for i, c in enumerate(columns) if c["type"] != "ignored"}
        select = ", ".join(f"{_typed_sql(columns[i]['type'], i, missing=columns[i].get('missing_count') != 0)} "
                           f"AS {_ident(names[i])}" for i in wanted)
        con.execute(
            f"COPY (SELECT {select} FROM ({_layers(raw_path, names, wanted, rows=False)})) TO {_lit(typed_path)} "
            "(FORMAT parquet, COMPRESSION zstd)"
        )
    except duckdb.Error as exc:
        raise IngestError([f"the typed file could not be written ({str(exc)[:200]})"]) from None
    finally:
        con.close()
