"""What the marketplace knows about a dataset's columns: a name, a type and a missing-value policy.

A dataset's columns are inferred from its file, then confirmed by its owner
(``Dataset.columns`` holds them as JSON objects, :meth:`Column.as_dict`).
Statistics (``market.catalog.spec``) read them to check a spec and to
decide what a missing value means; the computation (``market.catalog.compute``)
reads the typed Parquet file they describe.

Types, and how a column is stored in the typed file:

* ``integer`` (BIGINT), ``decimal`` (DOUBLE): numbers, summed, averaged, binned;
* ``categorical`` (VARCHAR): text, counted by category;
* ``boolean`` (BOOLEAN): counted as the categories ``true`` and ``false``;
* ``date`` (DATE), ``datetime`` (TIMESTAMP): binned by month or year;
* ``ignored``: left out of the typed file; no statistic may name it.

Missing-value policies (a missing value is NULL in the typed file):

* ``none``: the owner declares the column complete (no missing values). This
  is a public fact about the data, like a declared range: confirming it is
  refused when the column has missing values. Only a complete column lets a
  mean divide by the public number of records.
* ``exclude``: a missing value takes no part in that column's statistics (a
  sum, mean or histogram skips the record; a group-by puts it in no group).
* ``category``: a missing value is a category of its own ("missing") when the
  column is grouped by; numeric statistics skip it as with ``exclude``.

This module is plain Python; it does not import Django.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MISSING", "NUMERIC", "TYPES", "Column", "columns_from"]

#: Every column type, in the order forms offer them.
TYPES = ("integer", "decimal", "categorical", "boolean", "date", "datetime", "ignored")
#: The types a sum, a mean or a numeric histogram may read.
NUMERIC = ("integer", "decimal")
#: The types a group-by or a table may read (a date is grouped through its month or year).
CATEGORICAL = ("categorical", "boolean")
#: The types binned by month or year.
TEMPORAL = ("date", "datetime")
#: Every missing-value policy.
MISSING = ("none", "exclude", "category")


@dataclass(frozen=True)
class Column:
    """One column: ``name`` (as in the file's header), ``type`` (one of :data:`TYPES`)
    and ``missing`` (one of :data:`MISSING`)."""

    name: str
    type: str = "decimal"
    missing: str = "none"

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"a column needs a name, got {self.name!r}")
        if self.type not in TYPES:
            raise ValueError(f"column {self.name!r}: type must be one of {', '.join(TYPES)}, got {self.type!r}")
        if self.missing not in MISSING:
            raise ValueError(
                f"column {self.name!r}: missing must be one of {', '.join(MISSING)}, got {self.missing!r}"
            )

    @property
    def numeric(self) -> bool:
        return self.type in NUMERIC

    @property
    def categorical(self) -> bool:
        return self.type in CATEGORICAL

    @property
    def temporal(self) -> bool:
        return self.type in TEMPORAL

    @property
    def complete(self) -> bool:
        """Declared to have no missing values."""
        return self.missing == "none"

    def as_dict(self) -> dict:
        return {"name": self.name, "type": self.type, "missing": self.missing}


def columns_from(value) -> tuple[Column, ...]:
    """Columns from what a dataset stores: a list of ``{"name", "type", "missing", ...}``
    objects (extra keys such as summaries are ignored), or, for the datasets made
    before types existed, a list of names (complete decimal columns)."""
    out = []
    for item in value:
        if isinstance(item, Column):
            out.append(item)
        elif isinstance(item, str):
            out.append(Column(item))
        else:
            out.append(Column(item["name"], item.get("type", "decimal"), item.get("missing", "none")))
    return tuple(out)
