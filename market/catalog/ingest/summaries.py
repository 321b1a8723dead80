"""What is stored of each column once read: its inferred type, missing count and markers, for each type
how many present values would not fit it (with the first), and the summaries shown to the owner (min,
max, distinct values, the most frequent categories), taken from the typed file in one query and one
per text column (it is small, and its columns are the values the summaries are of). No Django.
"""

from __future__ import annotations

from .columns import _cells
from .reading import IngestError
from .scan import _CHECKED, _FORMULA_BIT, _MISSING_BIT, Column
from .sql import _MARKERS, _ident, _lit, _plain

#: How many of a column's most frequent categories are kept, to show the owner only (never a default of what is published).
TOP_CATEGORIES = 50


def described(columns: list[Column], *, line_offset: int) -> list[dict]:
    """Each column as stored (without its summaries); IngestError when a text column has cells that
    look like spreadsheet formulas."""
    out, problems = [], []
    for column in columns:
        missing_count = column.counts[_MISSING_BIT]
        present = column.cells - missing_count
        fits = {}
        for j, kind in enumerate(_CHECKED):
            bad = column.counts[j]
            if bad:
                row, text = column.first[j]
                fits[kind] = {"bad": bad, "line": row + line_offset, "example": text[:40]}
            else:
                fits[kind] = None
        inferred = column.kind()
        used = column.markers
        found = ["null"] * bool(used & 1) + [m for j, m in enumerate(_MARKERS) if used >> (j + 1) & 1]
        first_missing = column.first.get(_MISSING_BIT)
        out.append({
            "name": column.name, "type": inferred, "inferred": inferred,
            "missing": "none" if not missing_count else "exclude",
            "missing_count": missing_count, "present": present,
            "missing_line": None if first_missing is None else first_missing[0] + line_offset,
            "markers": sorted("(empty)" if m == "" else m for m in found),
            "fits": fits,
        })
        count = column.counts[_FORMULA_BIT]
        if count and inferred == "categorical":
            row, text = column.first[_FORMULA_BIT]
            problems.append(
                f"column {column.name!r}: {_cells(count)} "
                f"{'looks like a spreadsheet formula' if count == 1 else 'look like spreadsheet formulas'} "
                f"(starting with = or @), first at line {row + line_offset} ({text[:30]!r}); "
                "remove them or start them with an apostrophe"
            )
    if problems:
        raise IngestError(problems)
    return out


#: Each type's column of the typed file as the value its summaries are of (numbers as doubles, dates as
#: timestamps: the distinct counts are those of the cells read as numbers, or as timestamps).
_READING = {"integer": "CAST({c} AS DOUBLE)", "decimal": "{c}", "date": "CAST({c} AS TIMESTAMP)",
            "datetime": "{c}", "categorical": "{c}"}


def aggregates_sql(names: list[str], kinds: list[str], source: str) -> str:
    """The query of each column's min, max and approximate distinct count (three values a column, NULL
    for a boolean's and a text's) over ``source``, a typed file or a stream of typed batches. (A text
    column's distinct count is that of its categories when they are few, as they mostly are: it is
    estimated afterwards when they are not, :func:`summarize`.)"""
    aggregates = []
    for name, kind in zip(names, kinds):
        reading = _READING.get(kind)
        if reading is None or kind == "categorical":  # boolean: from its texts
            aggregates += ["NULL", "NULL", "NULL"]
            continue
        plain = _ident(name)
        aggregates += [f"min({plain})", f"max({plain})", f"approx_count_distinct({reading.format(c=plain)})"]
    return f"SELECT {', '.join(aggregates)} FROM {source}"


def summarize(con, typed_path: str, columns: list[dict], found: list[Column], row: tuple | None = None) -> None:
    """Add ``min``, ``max``, ``distinct``, ``categories`` and ``distinct_exact`` to ``columns`` (the
    typed file's columns, all kept), from the typed file (``row``: :func:`aggregates_sql`'s, when
    computed while it was written); a boolean column's from its texts counted while reading (``found``)."""
    source = f"read_parquet({_lit(typed_path)})"
    if row is None:
        row = con.execute(aggregates_sql([c["name"] for c in columns], [c["inferred"] for c in columns],
                                         source)).fetchone()
    for i, column in enumerate(columns):
        low, high, distinct = row[3 * i:3 * i + 3]
        kind = column["inferred"]
        column.update({"min": None, "max": None, "distinct": distinct, "categories": []})
        if kind in ("integer", "decimal", "date", "datetime"):
            column.update({"min": _plain(low), "max": _plain(high)})
        name = _ident(column["name"])
        if kind in ("categorical", "boolean"):
            if kind == "boolean":
                texts = found[i].booleans or {}
                rows = sorted(texts.items(), key=lambda item: (-item[1], item[0]))[:TOP_CATEGORIES]
                column["distinct"] = len(texts)
            else:
                rows = con.execute(
                    f"SELECT v, count(*) AS n FROM (SELECT {name} AS v FROM {source}) WHERE v IS NOT NULL "
                    f"GROUP BY v ORDER BY n DESC, v LIMIT {TOP_CATEGORIES}"
                ).fetchall()
            column["categories"] = [{"value": c, "count": n} for c, n in rows]
            if len(rows) < TOP_CATEGORIES:
                column["distinct"], column["distinct_exact"] = len(rows), True  # every category is in the list
                continue
            if kind == "categorical":
                column["distinct"] = con.execute(f"SELECT approx_count_distinct({name}) FROM {source}").fetchone()[0]
        distinct = column["distinct"]
        column["distinct_exact"] = distinct is not None and distinct <= 10 * TOP_CATEGORIES  # else an estimate
        if column["distinct_exact"] and kind != "boolean":  # few: count them exactly
            c = _READING[kind].format(c=name)
            column["distinct"] = con.execute(f"SELECT count(DISTINCT {c}) FROM {source}").fetchone()[0]
