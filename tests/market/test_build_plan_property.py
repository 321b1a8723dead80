"""``build_plan`` on random specs: it either lays out a plan or refuses with a ``SpecError``.

Any other exception (a ZeroDivisionError, a KeyError, a TypeError, an OverflowError) would be
a 500 through the API and the browser, which hand a ``SpecError`` back as a 400 with its
sentence. The specs are drawn from every kind in the registry (``KINDS``), over columns of
every type and missing-value policy, with bounds near one another and far apart, grids
from fine to coarser than the bounds (so both bounds can round to the same step, the
crash of issue 28), filters, group-bys, dates, junk values in every field, several
statistics at once, a public or a private size (including one record), on the float path
and on the lattice, offered or read back. A plan that is laid out is also described,
stored and restored, and asked for every coordinate's error bound, since the pages and the
API do all of that with it.

Deterministic (``derandomize``), a few hundred examples, a few seconds.
"""

from __future__ import annotations

import math

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from market.catalog.spec.columns import Column
from market.catalog.spec import (
    KINDS,
    LAPLACE,
    LATTICE,
    PRIVATE_SIZE,
    PUBLIC_SIZE,
    Neighbours,
    SpecError,
    build_plan,
    describe,
    plan_layout,
    plan_restore,
)

COLUMNS = [
    Column("i", "integer", "none"),
    Column("x", "decimal", "none"),
    Column("y", "decimal", "exclude"),
    Column("c", "categorical", "category"),
    Column("k", "categorical", "none"),
    Column("b", "boolean", "none"),
    Column("d", "date", "none"),
    Column("t", "datetime", "exclude"),
    Column("z", "ignored", "none"),
]
NAMES = [column.name for column in COLUMNS] + ["nope"]

JUNK = st.one_of(st.none(), st.booleans(), st.text(max_size=4), st.just([]), st.just({}),
                 st.sampled_from([float("nan"), float("inf"), -1e300, 1e16, "1e400", "-0", "abc"]))


def mostly(good, bad=JUNK, odds: int = 12):
    """``good`` but one time in ``odds`` ``bad``: most specs get far enough to be laid out."""
    return st.integers(0, odds - 1).flatmap(lambda n: bad if n == 0 else good)


SMALL = st.one_of(
    st.integers(-20, 20),
    st.sampled_from([-10, -9, -1, 0, 0.1, 0.25, 0.5, 1, 9, 10, 1e-12, 1e-13, 1e15, -1e15, 2.5, 99.99]),
    st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False),
)
NUMBER = mostly(SMALL)
GRID = mostly(st.one_of(st.sampled_from([1, 2, 5, 10, 100, 0.5, 0.1, 0.01, 1e-12, 1e-13, 0, -1, 1e15, 1e16,
                                         "0.05", "5", "0.000001", "1e-7", " 3 ", "", "x"]),
                        st.floats(1e-6, 1e4, allow_nan=False)))
NUMERIC_NAMES = mostly(st.sampled_from(["i", "x", "y"]), st.sampled_from(NAMES))
GROUP_NAMES = mostly(st.sampled_from(["c", "k", "b", "d", "t"]), st.sampled_from(NAMES))
CATEGORY_NAMES = mostly(st.sampled_from(["c", "k", "b"]), st.sampled_from(NAMES))
TEXTS = st.sampled_from(["a", "b", "c", "other", "missing", "", "a" * 201])
CATEGORY = st.one_of(TEXTS, st.booleans(), SMALL)
PERIODS = {"month": mostly(st.sampled_from(["2024-01", "2024-12", "2025-06", "1999-01", "2045-12"]),
                          st.sampled_from(["2024-13", "24-1", "x", "2024-1", "2024"])),
           "year": mostly(st.sampled_from(["2024", "2025", "1999", "2045"]), st.sampled_from(["2024-01", "x", "24"]))}
PERIODS["week"] = PERIODS["day"] = PERIODS["year"]
DATES = st.sampled_from(["2024-01-31", "2024-02-30", "2024-06-01T08:00:00", "2024-06-01T08:00:00+02:00",
                         "2024-01-01", "x", "2024"])
OPS = {"integer": ["=", "in", "<", "<=", ">", ">=", "between", "is missing"], "categorical": ["=", "in", "is missing"],
       "boolean": ["=", "in", "is missing"], "date": ["=", "<", ">=", "between", "is missing"], "ignored": ["="]}
OPS["decimal"], OPS["datetime"] = OPS["integer"], OPS["date"]
TYPED = {"integer": SMALL, "decimal": SMALL, "categorical": TEXTS, "boolean": st.booleans(), "date": DATES,
         "datetime": DATES, "ignored": SMALL}
TYPES = {column.name: column.type for column in COLUMNS}


def _maybe(draw, item: dict, key: str, strategy, p_present=None):
    if draw(st.booleans() if p_present is None else p_present):
        item[key] = draw(strategy)


@st.composite
def conditions(draw):
    name = draw(st.sampled_from(NAMES))
    kind = TYPES.get(name, "integer")
    op = draw(mostly(st.sampled_from(OPS[kind]), st.sampled_from(["~", "<", "between", "in"])))
    cond = {"column": name, "op": op}
    value = mostly(TYPED[kind], st.one_of(CATEGORY, DATES, JUNK))
    if op in ("in", "between"):
        cond["values"] = draw(mostly(st.lists(value, min_size=1 if op == "in" else 2, max_size=3 if op == "in" else 2)
                                     .map(lambda v: sorted(v, key=repr) if op == "between" else v),
                                     st.one_of(st.lists(value, max_size=3), JUNK)))
    elif op != "is missing":
        cond["value"] = draw(value)
    if draw(st.integers(0, 19)) == 0:
        cond["extra"] = 1
    return cond


@st.composite
def scoped(draw, item: dict, group_by: bool = True) -> dict:
    if draw(st.integers(0, 2)) == 0:
        item["where"] = draw(mostly(st.lists(conditions(), max_size=3)))
    if group_by and draw(st.integers(0, 2)) == 0:
        item["by"] = by = draw(GROUP_NAMES)
        temporal = TYPES.get(by) in ("date", "datetime")
        if not temporal or draw(st.integers(0, 9)) == 0:
            typed = st.booleans() if TYPES.get(by) == "boolean" else TEXTS
            _maybe(draw, item, "categories", mostly(st.lists(typed, max_size=4, unique=True),
                                                    st.one_of(st.lists(CATEGORY, max_size=4), JUNK)))
        if temporal or draw(st.integers(0, 9)) == 0:
            item["bin"] = unit = draw(mostly(st.sampled_from(["month", "year"]), st.just("week")))
            item["from"], item["to"] = sorted([draw(PERIODS[unit]), draw(PERIODS[unit])], key=str)
            if draw(st.integers(0, 9)) == 0:
                del item[draw(st.sampled_from(["bin", "from", "to"]))]
    return item


@st.composite
def statistic(draw):
    kind = draw(mostly(st.sampled_from(["count", "sum", "mean", "sum", "mean", "histogram", "table"]),
                       st.sampled_from(sorted(KINDS) + ["median", None, 3]), odds=4))
    item: dict = {"kind": kind}
    if kind in ("sum", "mean"):
        item["column"] = draw(NUMERIC_NAMES)
        lower = draw(NUMBER)
        # bounds often close together, so that a coarse grid rounds both to one step
        finite = isinstance(lower, (int, float)) and not isinstance(lower, bool) and math.isfinite(lower)
        near = lower + draw(st.sampled_from([1, 0.2, 3, 0.01, 100, 1e6])) if finite else 1
        item["lower"], item["upper"] = lower, draw(mostly(st.just(near), NUMBER, odds=5))
        _maybe(draw, item, "grid", GRID)
        if draw(st.integers(0, 3)) == 0:  # degenerate: both bounds within one step of a declared grid
            grid = draw(st.sampled_from([1, 2, 5, 10, 0.5, "0.25", 1000]))
            step, where = draw(st.integers(-5, 5)), draw(st.sampled_from([-0.4, -0.1, 0, 0.2]))
            item["lower"] = (step + where) * float(grid)
            item["upper"] = item["lower"] + draw(st.sampled_from([0.05, 0.2, 0.4])) * float(grid)
            item["grid"] = grid
        return draw(scoped(item))
    if kind == "count":
        return draw(scoped(item))
    if kind == "histogram":
        if draw(st.integers(0, 3)):
            item["column"] = draw(NUMERIC_NAMES)
            item["bins"] = draw(mostly(st.lists(SMALL, min_size=2, max_size=6, unique=True).map(sorted),
                                       st.one_of(st.lists(NUMBER, max_size=4), JUNK)))
        else:
            item["column"] = draw(mostly(st.sampled_from(["d", "t"]), st.sampled_from(NAMES)))
            item["bin"] = unit = draw(mostly(st.sampled_from(["month", "year"]), st.just("day")))
            item["from"], item["to"] = sorted([draw(PERIODS[unit]), draw(PERIODS[unit])], key=str)
        return draw(scoped(item, group_by=False))
    if kind == "table":
        item["rows"], item["columns"] = draw(CATEGORY_NAMES), draw(CATEGORY_NAMES)
        for side, key in (("rows", "row_categories"), ("columns", "column_categories")):
            typed = st.booleans() if TYPES.get(item[side]) == "boolean" else TEXTS
            _maybe(draw, item, key, mostly(st.lists(typed, min_size=1, max_size=3, unique=True),
                                           st.one_of(st.lists(CATEGORY, max_size=3), JUNK)),
                   st.booleans() if TYPES.get(item[side]) == "boolean" else mostly(st.just(True), st.just(False)))
        return draw(scoped(item, group_by=False))
    if kind in ("centroid", "point"):
        dim = draw(st.integers(2, 3))
        item["columns"] = draw(mostly(st.permutations(["i", "x", "y"]).map(lambda names: names[:dim]),
                                      st.lists(st.sampled_from(NAMES), max_size=3)))
        item["radius"] = draw(NUMBER)
        if kind == "centroid":
            item["center"] = draw(mostly(st.lists(SMALL, min_size=dim, max_size=dim), st.lists(NUMBER, max_size=4)))
            _maybe(draw, item, "min_records", st.one_of(st.integers(-1, 5), JUNK), st.integers(0, 4).map(lambda n: n == 0))
        else:
            item["row"] = draw(mostly(st.integers(1, 5), st.one_of(st.integers(-1, 0), JUNK)))
        return item
    if kind == "microdata":
        item["columns"] = draw(st.lists(st.sampled_from(NAMES), max_size=2))
        return item
    return item


NEIGHBOURS = st.one_of(
    st.builds(Neighbours, relation=st.just(PRIVATE_SIZE), max_rows=st.sampled_from([1, 2, 1000, 100_000, 10**9])),
    st.builds(Neighbours, relation=st.just(PUBLIC_SIZE), size=st.sampled_from([1, 2, 3, 7, 100, 1000, 10**9]),
              max_rows=st.sampled_from([1000, 100_000])),
)
SPECS = mostly(st.one_of(st.lists(statistic(), min_size=1, max_size=3), statistic().map(lambda item: [item])),
               st.one_of(st.lists(st.one_of(statistic(), JUNK), max_size=2), JUNK))


def _lay_out(spec, neighbours, mechanism, offer):
    try:
        plan = build_plan(spec, COLUMNS, neighbours=neighbours, mechanism=mechanism, offer=offer)
    except SpecError as refusal:
        assert str(refusal).strip(), "a refusal says what is wrong"
        return None
    # what the pages and the API then do with a plan: describe it, store and restore it, state its bounds
    assert describe(plan)
    layout = plan_layout(plan)
    on = plan.lattice
    restored = plan_restore(
        layout=layout, statistics=plan.statistics, labels=plan.labels, sensitivity=plan.sensitivity,
        weights=plan.weights if on is None else on.unit_weights, lower=plan.lower if on is None else on.unit_lower,
        upper=plan.upper if on is None else on.unit_upper, grids=None if on is None else [str(g) for g in on.grids])
    assert restored.labels == plan.labels and list(restored.weights) == list(plan.weights)
    if plan.norm == "l1":
        for i in range(len(plan.labels)):
            bound = plan.bound(i, "0.5")
            assert bound >= 0 and math.isfinite(bound)
    return plan


@settings(max_examples=400, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(spec=SPECS, neighbours=NEIGHBOURS, mechanism=st.sampled_from([LAPLACE, LATTICE]), offer=st.booleans())
# issue 28: both bounds round to one step of the grid (-2 steps of 5) and the size is public: sensitivity 0
@example(spec=[{"kind": "mean", "column": "x", "lower": -10, "upper": -9, "grid": 5}],
         neighbours=Neighbours(relation=PUBLIC_SIZE, size=100), mechanism=LATTICE, offer=True)
@example(spec=[{"kind": "sum", "column": "i", "lower": 3, "upper": 3.2, "grid": "0.5", "by": "b"}],
         neighbours=Neighbours(relation=PUBLIC_SIZE, size=7), mechanism=LATTICE, offer=False)
def test_build_plan_lays_out_a_plan_or_refuses_with_a_spec_error(spec, neighbours, mechanism, offer):
    _lay_out(spec, neighbours, mechanism, offer)


def test_the_issue_28_spec_is_refused_with_a_sentence_saying_what_to_do():
    try:
        build_plan([{"kind": "mean", "column": "x", "lower": -10, "upper": -9, "grid": 5}], COLUMNS,
                   neighbours=Neighbours(relation=PUBLIC_SIZE, size=100), mechanism=LATTICE)
    except SpecError as refusal:
        message = str(refusal)
    else:  # pragma: no cover
        raise AssertionError("laid out a mean that cannot move")
    assert message.startswith("statistic 1 (mean): grid 5 rounds both lower -10 and upper -9 to -10")
    assert "use a grid finer than 1" in message
    # a finer grid, as the sentence says, is laid out; so is the same spec under a private size (it moves by 10)
    build_plan([{"kind": "mean", "column": "x", "lower": -10, "upper": -9, "grid": 0.5}], COLUMNS,
               neighbours=Neighbours(relation=PUBLIC_SIZE, size=100), mechanism=LATTICE)
    build_plan([{"kind": "sum", "column": "x", "lower": -10, "upper": -9, "grid": 5}], COLUMNS, mechanism=LATTICE)
