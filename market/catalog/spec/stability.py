"""Who the release protects (:class:`Neighbours`) and the groups of coordinates with their
sensitivities under that relation (docs/mathematics.md section 12): one :class:`Group` per share of
the budget."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from .coordinates import Aggregate, Cells, Condition
from .grammar import Scope, _moment, _period_of, _periods, _steps, _text

#: Add or remove one record: the number of records is private.
PRIVATE_SIZE = "private_size"
#: Replace one record: the number of records is public.
PUBLIC_SIZE = "public_size"
RELATIONS = (PRIVATE_SIZE, PUBLIC_SIZE)


@dataclass(frozen=True)
class Neighbours:
    """The dataset's neighbouring relation: which two datasets the release
    must not tell apart.

    ``relation``: :data:`PRIVATE_SIZE` (a neighbour has one record more or
    fewer) or :data:`PUBLIC_SIZE` (a neighbour has one record replaced; then
    ``size``, the number of records, is public). ``max_rows``: the most
    records any dataset may hold, which bounds the declared ranges when the
    size is private.
    """

    relation: str = PRIVATE_SIZE
    size: int | None = None
    max_rows: int = 100_000

    def __post_init__(self):
        if self.relation not in RELATIONS:
            raise ValueError(f"relation must be one of {RELATIONS}, got {self.relation!r}")
        if isinstance(self.max_rows, bool) or not isinstance(self.max_rows, int) or self.max_rows < 1:
            raise ValueError(f"max_rows must be a positive integer, got {self.max_rows!r}")
        if self.relation == PUBLIC_SIZE:
            if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 1:
                raise ValueError(f"a public size is a positive number of records, got {self.size!r}")
        elif self.size is not None:
            raise ValueError("a private size has no public number of records")

    @property
    def public(self) -> bool:
        return self.relation == PUBLIC_SIZE

    @property
    def rows(self) -> int:
        """The most records the dataset can hold: its public size, else ``max_rows``."""
        return self.size if self.public else self.max_rows


@dataclass(frozen=True, eq=False)
class Group:
    """Coordinates of the answer vector that one or more statistics read,
    released with one equal share of the budget.

    ``key``: equal keys are one group (a mean and a sum with the same column,
    bounds, filter and group-by read the same coordinates). ``rank``: the
    layout order (0 the count of all records, 1 the sums, 2 the histograms,
    other counts and tables; then first appearance). ``labels`` /
    ``long_labels``: the coordinates' labels, and the longer ones used when
    two groups would otherwise share a label. ``cases``: how far each
    coordinate a worst-case neighbour changes can move, one tuple per
    incomparable worst case; ``sensitivity``: the group's l1-sensitivity
    under the relation, the largest total of a case. ``aggregates``: what each
    coordinate is on the data. ``grid``: on the lattice path, a sum's grid (its
    bounds, cases and range are then in grid steps); None otherwise.
    """

    key: tuple
    rank: int
    labels: tuple[str, ...]
    lower: tuple[float, ...]
    upper: tuple[float, ...]
    cases: tuple[tuple[float, ...], ...]
    aggregates: tuple[Aggregate, ...]
    long_labels: tuple[str, ...] | None = None
    grid: Decimal | None = None

    @property
    def sensitivity(self) -> float:
        return max(sum(case) for case in self.cases)


def _prune(cases) -> tuple[tuple[float, ...], ...]:
    """The cases no other case dominates (each loss at least as large, after sorting
    both largest first and padding with zeros: the profile grows with every loss)."""
    cases = sorted({tuple(sorted(c, reverse=True)) for c in cases}, key=lambda c: (-sum(c), c))
    kept: list[tuple[float, ...]] = []
    for case in cases:
        def dominated_by(other):
            width = max(len(other), len(case))
            a, b = other + (0.0,) * (width - len(other)), case + (0.0,) * (width - len(case))
            return all(x >= y for x, y in zip(a, b))
        if not any(dominated_by(other) for other in kept):
            kept.append(case)
    return tuple(kept)


def _count_cases(nb: Neighbours, cells: int) -> tuple[tuple[float, ...], ...]:
    # adding or removing a record moves one cell by 1; replacing one moves one cell down and another up
    return ((1.0, 1.0),) if nb.public and cells > 1 else ((1.0,),)


def _count_group(nb: Neighbours, scope: Scope | None = None, present: str | None = None) -> Group:
    """The number of records in each cell of ``scope`` (all records without one); with
    ``present``, only those where that column is not missing (a mean's divisor)."""
    scope = scope or Scope((), (), (), ((None, ()),))
    legacy = not scope.key and present is None
    extra = (Condition(present, "present"),) if present else ()
    labels = scope.labels("count" if present is None else f"count({present})")
    return Group(
        key=("count",) if legacy else ("count", scope.key, present), rank=0 if legacy else 2,
        labels=labels, lower=(0.0,) * len(labels), upper=(float(nb.rows),) * len(labels),
        cases=_count_cases(nb, len(labels)),
        aggregates=(Cells(scope.where + extra, tuple(cell for _, cell in scope.cells), scope.period),)
        if scope.grouped else (Aggregate("count", scope.where + extra),),
    )


def _sum_group(column: str, lower: float, upper: float, nb: Neighbours, scope: Scope | None = None,
               excludable: bool = False, grid: Decimal | None = None) -> Group:
    """The sum of ``column``'s present values clamped to ``[lower, upper]``, per cell of ``scope``.

    Sensitivity, with ``m = max(|L|, |U|)``: adding or removing a record moves one
    cell by at most ``m``. Replacing one moves its cell by at most ``U - L`` when
    the record always counts (a complete column, no filter), else by
    ``max(U, 0) - min(L, 0)`` (a record may count 0, by a missing value or a filter);
    with a group-by it may instead leave one cell for another: two cells by ``m`` each.

    With ``grid`` (the lattice path), each value is also rounded to the grid and the
    group is counted in grid steps: the same cases with the bounds in steps (whole
    numbers), and the sum an integer number of steps.
    """
    scope = scope or Scope((), (), (), ((None, ()),))
    if grid is not None:
        lower, upper = _steps(lower, grid), _steps(upper, grid)
    m = max(abs(lower), abs(upper))
    if not nb.public:
        cases = ((m,),)
    else:
        span = (max(upper, 0) - min(lower, 0)) if (excludable or scope.where) else upper - lower
        cases = ((span,), (m, m)) if scope.grouped else ((span,),)
    labels = scope.labels(f"sum({column})")
    shown = (lower, upper) if grid is None else (float(lower * grid), float(upper * grid))
    return Group(
        key=("sum", column, *shown) + ((scope.key,) if scope.key else ()) + ((str(grid),) if grid is not None else ()),
        rank=1,
        labels=labels, long_labels=scope.labels(f"sum({column}; {_text(shown[0])}..{_text(shown[1])})"),
        lower=(min(0, lower) * nb.rows,) * len(labels), upper=(max(0, upper) * nb.rows,) * len(labels),
        cases=_prune(cases),
        aggregates=tuple(
            Aggregate("sum", where, column, *shown) if grid is None
            else Aggregate("sum", where, column, *shown, grid=grid, steps=(lower, upper))
            for where in scope.conditions()
        ),
        grid=grid,
    )


def _bins_group(number: int, labels: list[str], cells: list[tuple[Condition, ...]], nb: Neighbours,
                key: str = "histogram", where: tuple[Condition, ...] = (), period: tuple | None = None) -> Group:
    """Counts of the records meeting ``where`` in mutually exclusive cells (bins, table cells)."""
    return Group(
        key=(key, number), rank=2, labels=tuple(labels),
        lower=(0.0,) * len(labels), upper=(float(nb.rows),) * len(labels),
        cases=_count_cases(nb, len(labels)),
        aggregates=(Cells(where, tuple(cells), period),),
    )


def _histogram_group(number: int, column: str, edges: list[float], nb: Neighbours, scope: Scope | None = None) -> Group:
    scope = scope or Scope((), (), (), ((None, ()),))
    labels, conditions = [], []
    suffix = " | " + ", ".join(scope.parts) if scope.parts else ""
    for i in range(len(edges) - 1):
        last = i == len(edges) - 2
        labels.append(f"{column} in [{_text(edges[i])}, {_text(edges[i + 1])}{']' if last else ')'}" + suffix)
        conditions.append((Condition(column, ">=", edges[i]), Condition(column, "<=" if last else "<", edges[i + 1])))
    return _bins_group(number, labels, conditions, nb, where=scope.where)


def _date_histogram_group(number: int, stat: dict, columns, nb: Neighbours, scope: Scope) -> Group:
    column = columns[stat["column"]]
    labels, conditions = [], []
    suffix = " | " + ", ".join(scope.parts) if scope.parts else ""
    for label, start, after in _periods(stat):
        a, b = (start, after) if column.type == "date" else (_moment(start), _moment(after))
        labels.append(f"{column.name} in {label}" + suffix)
        conditions.append((Condition(column.name, ">=", a), Condition(column.name, "<", b)))
    return _bins_group(number, labels, conditions, nb, where=scope.where, period=_period_of(stat, columns))


