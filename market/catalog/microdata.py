"""A microdata listing's true bits, read from its data with DuckDB (docs/mathematics.md, "Bit reports").

The listing's layout (its fields, bits, levels and checks) is pure and lives in
``market.catalog.spec.microdata`` (the services and the owner's pages reach it through this module,
beside :func:`truth`); this module reads the records with DuckDB.
"""

from __future__ import annotations

import numpy as np

from .spec.microdata import KIND, PUBLIC_SIZE_NEEDED, Microdata, build, restore

__all__ = ["KIND", "PUBLIC_SIZE_NEEDED", "Microdata", "build", "restore", "truth"]


# --------------------------------------------------------------------------
# the true bits


def truth(md: Microdata, table, *, shuffle=None) -> np.ndarray:
    """The records' true bits (bool, ``(n, bits)``), read from ``table``
    (``market.catalog.compute.Table``) with DuckDB, rows shuffled by a secret permutation
    (``shuffle``: anything with ``permutation``, a test's seeded numpy generator; else the
    operating system's random bits, ``releases.engine.osrandom.new_source``: an exactly
    uniform Fisher-Yates shuffle, never a seeded generator). Raises ValueError if the data does not hold the public
    number of records or lacks a column."""
    from releases.engine import bitreport

    from .compute import _session, _when, quote
    from .spec.coordinates import Condition

    names = set(table.names)
    for f in md.fields:
        if f.column not in names:
            raise ValueError(f"the data has no column named {f.column!r}")
    params: list = []
    parts = []
    for f in md.fields:
        if f.encoding == "bloom":
            parts.append(f"CAST({quote(f.column)} AS VARCHAR)")
            continue
        branches = []
        for i, v in enumerate(f.categories):
            branches.append(f"WHEN {_when((Condition(f.column, '=', v),), params)} THEN {i}")
        k = len(f.categories)
        if f.other:
            branches.append(f"WHEN {quote(f.column)} IS NOT NULL THEN {k}")
            k += 1
        if f.missing:
            branches.append(f"WHEN {quote(f.column)} IS NULL THEN {k}")
        parts.append("CASE " + " ".join(branches) + " ELSE -1 END" if branches else "-1")
    sql = f"SELECT {', '.join(parts)} FROM records"
    with _session(table, 2, "2GB") as con:
        arrow = con.execute(sql, params).to_arrow_table()
    n = arrow.num_rows
    if n != md.records:
        raise ValueError(f"the dataset's public size is {md.records} but it holds {n} records")
    out = np.zeros((n, md.bits), dtype=bool)
    start = 0
    salt = bytes.fromhex(md.salt)
    for i, f in enumerate(md.fields):
        col = arrow.column(i)
        if f.encoding == "bloom":
            out[:, start:start + f.bits] = bitreport.bloom(col.to_pylist(), f.bits, f.hashes, salt)
        else:
            codes = col.to_numpy(zero_copy_only=False).astype(np.int64)
            hit = codes >= 0
            out[np.flatnonzero(hit), start + codes[hit]] = True
        start += len(f.labels)
    from releases.engine.osrandom import new_source

    rng = shuffle if shuffle is not None else new_source()
    return out[rng.permutation(n)]
