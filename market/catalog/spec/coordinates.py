"""What each coordinate of a plan is on the data: plain values that ``market.catalog.compute`` turns into SQL
and runs with DuckDB (this module holds no SQL engine)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["OPERATORS", "Aggregate", "Cells", "Centroid", "Condition", "GridCentroid", "Row"]

#: The operators a :class:`Condition` may have.
OPERATORS = ("=", "in", "not in", "<", "<=", ">", ">=", "between", "outside", "is missing", "present")


@dataclass(frozen=True)
class Condition:
    """A test on one column of a record. ``op``:

    * ``=``, ``<``, ``<=``, ``>``, ``>=``: against ``value``;
    * ``in``: ``value`` is a tuple of constants;
    * ``not in``: present and not one of ``value`` (the "other" group);
    * ``between``: ``value`` is ``(a, b)``, both included;
    * ``outside``: ``value`` is ``(a, b)``: present and below a or at least b;
    * ``is missing`` / ``present``: the cell is (not) missing.

    Constants are Python values typed to the column (float or int, str, bool,
    ``datetime.date``, ``datetime.datetime``). A test of a missing cell is
    false, except ``is missing``.
    """

    column: str
    op: str
    value: object = None

    def __post_init__(self):
        if self.op not in OPERATORS:
            raise ValueError(f"unknown operator {self.op!r}")


@dataclass(frozen=True)
class Aggregate:
    """One coordinate: ``count`` of the records meeting every condition in
    ``where``, or ``sum`` of ``column``'s present values clamped to
    ``[lower, upper]`` over them.

    With ``grid`` (the exact lattice path) a sum counts grid steps: each clamped
    value is rounded to the nearest multiple of ``grid`` (halves away from
    zero), taken in steps and kept within ``steps = (lowest, highest)``, and
    the sum is an exact integer."""

    op: str
    where: tuple[Condition, ...] = ()
    column: str | None = None
    lower: float | None = None
    upper: float | None = None
    grid: object = None
    steps: tuple[int, int] | None = None
    width = 1

    def columns(self) -> set[str]:
        names = {c.column for c in self.where}
        if self.column is not None:
            names.add(self.column)
        return names


@dataclass(frozen=True)
class Cells:
    """Several count coordinates in one aggregate: the records meeting every
    condition in ``where``, split over mutually exclusive ``cells`` (each a
    conjunction of conditions; a record in none is not counted). One value per cell.

    ``period``: a fast path for date bins, ``(column, unit, first, count)``:
    the first ``count`` cells are the months or years from the date ``first``
    on, found by arithmetic on the date instead of one test per cell (their
    conditions in ``cells`` say the same, for any other engine)."""

    where: tuple[Condition, ...]
    cells: tuple[tuple[Condition, ...], ...]
    period: tuple | None = None

    @property
    def width(self) -> int:
        return len(self.cells)

    def columns(self) -> set[str]:
        return {c.column for c in self.where} | {c.column for cell in self.cells for c in cell}


@dataclass(frozen=True)
class Centroid:
    """A vector: the mean of the records' points (``columns``), each pulled into
    the ball of radius ``radius`` around ``center``."""

    columns: tuple[str, ...]
    center: tuple[float, ...]
    radius: float


@dataclass(frozen=True)
class GridCentroid:
    """Several sum coordinates in one aggregate, one per column: each record's point (``columns``)
    taken from ``center``, pulled into the ball of radius ``radius``, rounded to the nearest multiple of
    ``grid`` in each coordinate (halves away from zero) and counted in grid steps; the sums of those
    whole numbers of steps, exact. A record whose rounded point has squared length above ``bound_sq``
    steps (which float rounding could cause only in its last bit) or that misses a column adds
    nothing: every record adds a point within ``bound_sq``, so the sums' l2 sensitivity is exact."""

    columns: tuple[str, ...]
    center: tuple[float, ...]
    radius: float
    grid: object
    bound_sq: int

    @property
    def width(self) -> int:
        return len(self.columns)


@dataclass(frozen=True)
class Row:
    """A vector: record number ``row`` (1 is the first) of ``columns``, as stored."""

    columns: tuple[str, ...]
    row: int
