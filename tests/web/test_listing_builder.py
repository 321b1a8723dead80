"""The listing builder's translation of one statistic row into a spec (pure: no database)."""

import pytest

from market.catalog.spec.columns import Column
from market.web.listing_builder import BuilderKind, builder_kinds, parse_values, statistic_spec

COLUMNS = (
    Column("age", "integer"),
    Column("income", "decimal", "exclude"),
    Column("city", "categorical", "category"),
    Column("smoker", "boolean"),
    Column("day", "date"),
    Column("notes", "ignored"),
)
KINDS = {
    "count": BuilderKind("count", "count", (), ("by", "categories", "bin", "from", "to", "where")),
    "dated": BuilderKind("dated", "histogram", ("column",), ("bins", "where", "bin", "from", "to")),
    "mean": BuilderKind("mean", "mean", ("column", "lower", "upper"), ("by", "categories", "where")),
    "histogram": BuilderKind("histogram", "histogram", ("column", "bins"), ("where",)),
    "table": BuilderKind("table", "two-way table (counts)",
                         ("rows", "columns", "row_categories", "column_categories"), ("where",)),
}


def spec_of(**values):
    return statistic_spec(values, COLUMNS, KINDS)


def test_an_unused_row_is_no_statistic_and_a_stray_input_asks_for_a_kind():
    assert spec_of() == (None, {})
    assert spec_of(kind="", by="") == (None, {})
    spec, errors = spec_of(where_1_column="city")
    assert spec is None and "Choose a kind" in errors["kind"][0]


def test_a_mean_grouped_by_confirmed_categories_with_a_filter():
    spec, errors = spec_of(
        kind="mean", column="income", lower="0", upper="1e5", by="city", categories="Oslo\nBergen, Norway\n\n",
        categories_public=True, where_0_column="age", where_0_op="between", where_0_value="18, 65",
    )
    assert errors == {}
    assert spec == {
        "kind": "mean", "column": "income", "lower": 0.0, "upper": 100000.0, "by": "city",
        "categories": ["Oslo", "Bergen, Norway"],  # one per line: a category may hold a comma
        "where": [{"column": "age", "op": "between", "values": [18, 65]}],
        "categories_public": True,  # the owner's confirmation, for the service (never stored)
    }


def test_group_by_categories_must_be_confirmed_public():
    spec, errors = spec_of(kind="count", by="city", categories="Oslo")
    assert spec is None and list(errors) == ["categories_public"]
    assert "public" in errors["categories_public"][0]


def test_a_group_by_needs_categories_and_a_categorical_column():
    _, errors = spec_of(kind="count", by="city", categories_public=True)
    assert "List the categories of city" in errors["categories"][0]
    _, errors = spec_of(kind="count", by="income", categories="1", categories_public=True)
    assert "categorical" in errors["by"][0]
    _, errors = spec_of(kind="count", categories="Oslo")
    assert "Choose the column" in errors["by"][0]


def test_boolean_categories_and_filter_values_are_typed_by_their_column():
    spec, errors = spec_of(
        kind="count", by="smoker", categories="true\nfalse", categories_public=True,
        where_0_column="city", where_0_op="in", where_0_value="Oslo, Bergen",
        where_1_column="smoker", where_1_op="=", where_1_value="no",
        where_2_column="income", where_2_op="is missing",
    )
    assert errors == {}
    assert spec["categories"] == [True, False]
    assert spec["where"] == [
        {"column": "city", "op": "in", "values": ["Oslo", "Bergen"]},
        {"column": "smoker", "op": "=", "value": False},
        {"column": "income", "op": "is missing"},
    ]


@pytest.mark.parametrize(
    ("condition", "field", "message"),
    [
        ({"where_0_column": "age", "where_0_op": "<", "where_0_value": "old"}, "where_0_value", "'old' is not a number"),
        ({"where_0_column": "age", "where_0_op": "between", "where_0_value": "1"}, "where_0_value", "Give two values"),
        ({"where_0_column": "day", "where_0_op": ">=", "where_0_value": "May"}, "where_0_value", "not a date"),
        ({"where_0_column": "age", "where_0_op": "is missing", "where_0_value": "3"}, "where_0_value", "takes no value"),
        ({"where_0_column": "notes", "where_0_op": "=", "where_0_value": "x"}, "where_0_column", "Choose the column"),
        ({"where_0_column": "age", "where_0_value": "3"}, "where_0_op", "Choose how to compare"),
        ({"where_0_column": "city", "where_0_op": "in", "where_0_value": "A, B, A"}, "where_0_value", "listed twice"),
    ],
)
def test_a_bad_filter_is_named_at_its_input(condition, field, message):
    spec, errors = spec_of(kind="count", **condition)
    assert spec is None and list(errors) == [field] and message in errors[field][0]


def test_a_two_way_table_reads_both_pairs_and_one_confirmation():
    spec, errors = spec_of(kind="table", by="city", categories="Oslo\nBergen", by2="smoker",
                           categories2="true\nfalse", categories_public=True)
    assert errors == {}
    assert spec == {"kind": "table", "rows": "city", "row_categories": ["Oslo", "Bergen"],
                    "columns": "smoker", "column_categories": [True, False], "categories_public": True}
    _, errors = spec_of(kind="table", by="city", categories="Oslo", by2="city", categories2="Oslo")
    assert "another column" in errors["by2"][0] and "categories_public" in errors
    _, errors = spec_of(kind="table", by="city", categories="Oslo", categories_public=True)
    assert "Required" in errors["by2"][0]


def test_a_date_group_by_takes_bins_and_a_range_not_categories():
    spec, errors = spec_of(kind="count", by="day", bin="month", date_from="2024-01", date_to="2024-12-31")
    assert errors == {} and spec == {"kind": "count", "by": "day", "bin": "month", "from": "2024-01",
                                     "to": "2024-12"}
    _, errors = spec_of(kind="count", by="day", bin="week", date_from="soon", categories="x")
    assert set(errors) == {"bin", "date_from", "date_to", "categories"}
    _, errors = spec_of(kind="count", by="city", categories="Oslo", categories_public=True, bin="month")
    assert "not a date" in errors["bin"][0]


def test_a_kind_refuses_inputs_it_does_not_read():
    _, errors = spec_of(kind="histogram", column="age", bins="0, 50, 100", by="city", lower="3")
    assert "does not use this" in errors["by"][0] and "does not use this" in errors["lower"][0]
    _, errors = spec_of(kind="mean", column="city", lower="0", upper="1")
    assert "numeric column" in errors["column"][0]
    _, errors = spec_of(kind="mean", column="age")
    assert errors["lower"] == ["Required for a mean."] and errors["upper"] == ["Required for a mean."]
    _, errors = spec_of(kind="histogram", column="age", bins="0, ten, 100")
    assert "'ten' is not a number" in errors["bins"][0]


def test_values_are_parsed_one_per_line_or_comma_separated():
    city, age = COLUMNS[2], COLUMNS[0]
    assert parse_values("a, b", city) == ["a", "b"]
    assert parse_values("a, b\nc", city, lines=True) == ["a, b", "c"]
    assert parse_values("1, 2.5", age) == [1, 2.5]
    with pytest.raises(ValueError, match="listed twice"):
        parse_values("1\n1.0", age, lines=True)


def test_the_offered_kinds_come_from_the_statistics_module():
    kinds = builder_kinds()
    assert {"count", "sum", "mean", "histogram"} <= set(kinds)
    assert "point" not in kinds  # withdrawn
    # a centroid's columns come from its own input (a table's "columns" is its second group-by), and the
    # field only old listings have (min_records) has none
    assert set(kinds["centroid"].inputs) == {"points", "center", "radius", "grid"}
    assert "min_records" not in kinds["centroid"].fields
    # a histogram is one of two shapes (numbers by edges, dates by month or year): the column is
    # required by both, the edges by one of them
    assert kinds["histogram"].required == ("column",)
    assert {"bins", "bin", "from", "to"} <= set(kinds["histogram"].optional)
    assert "lower" in kinds["sum"].inputs and "bins" not in kinds["sum"].inputs
    # the rounding grid is a sum's, a mean's and a centroid's, and no other kind's
    assert [name for name, kind in kinds.items() if "grid" in kind.inputs] == ["sum", "mean", "centroid"]


def test_a_rounding_grid_is_kept_as_the_exact_decimal_typed():
    kinds = builder_kinds()
    row = {"kind": "sum", "column": "income", "lower": "0", "upper": "250000"}
    for typed, kept in (("0.01", "0.01"), (" 1e-2 ", "0.01"), ("0.010", "0.01"), ("5", "5"), ("1E+3", "1000")):
        spec, errors = statistic_spec({**row, "grid": typed}, COLUMNS, kinds)
        assert errors == {} and spec["grid"] == kept, typed
    spec, errors = statistic_spec(row, COLUMNS, kinds)
    assert errors == {} and "grid" not in spec  # left empty: the statistics module picks it from the bounds
    for typed in ("ten", "1e-40", "nan"):
        spec, errors = statistic_spec({**row, "grid": typed}, COLUMNS, kinds)
        assert spec is None and list(errors) == ["grid"] and "such as 0.01 or 1" in errors["grid"][0], typed
    _, errors = statistic_spec({"kind": "count", "grid": "1"}, COLUMNS, kinds)
    assert "does not use this" in errors["grid"][0]


def test_the_statistics_modules_grid_errors_land_on_the_grid_input():
    from market.catalog.spec import SpecError, build_plan
    from market.web.owner_forms import add_statistics_errors, statistic_formset

    data = {"stats-TOTAL_FORMS": "2", "stats-INITIAL_FORMS": "0", "stats-0-kind": "count"}
    data.update({f"stats-1-{k}": v for k, v in {"kind": "sum", "column": "income", "lower": "0", "upper": "100",
                                                "grid": "0.0000001"}.items()})
    formset = statistic_formset(columns=COLUMNS, data=data)
    assert formset.is_valid(), formset.errors
    specs, rows = formset.specs()
    messages = []
    for grid in ("0.0000001", "1000"):
        with pytest.raises(SpecError) as refused:
            build_plan([specs[0], {**specs[1], "grid": grid}], COLUMNS, mechanism="lattice")
        messages.append(str(refused.value))
    add_statistics_errors(formset, rows, messages)
    errors = formset.forms[1].errors["grid"]
    assert "too fine" in errors[0] and "coarser than the bounds" in errors[1]
    assert not formset.forms[1].non_field_errors() and not formset.non_form_errors()


def test_a_histogram_bins_numbers_by_edges_and_dates_by_month_or_year():
    """As the statistics module's histogram schema: one of column + bins, or column + bin, from, to."""
    spec, errors = spec_of(kind="dated", column="day", bin="year", date_from="2019", date_to="2024")
    assert errors == {} and spec == {"kind": "dated", "column": "day", "bin": "year", "from": "2019", "to": "2024"}
    spec, errors = spec_of(kind="dated", column="age", bins="0, 50, 100")
    assert errors == {} and spec == {"kind": "dated", "column": "age", "bins": [0.0, 50.0, 100.0]}
    _, errors = spec_of(kind="dated", column="age")
    assert errors == {"bins": ["Required for a histogram."]}
    _, errors = spec_of(kind="dated", column="day", bins="1, 2", bin="month", date_from="2024-13", date_to="2024-02")
    assert "is a date" in errors["bins"][0] and "not a month" in errors["date_from"][0] and "date_to" not in errors


def test_boolean_groups_need_no_categories_or_confirmation():
    spec, errors = spec_of(kind="table", by="smoker", by2="city", categories2="Oslo", categories_public=True)
    assert errors == {} and "row_categories" not in spec and spec["column_categories"] == ["Oslo"]
    spec, errors = spec_of(kind="count", by="smoker")
    assert errors == {} and spec == {"kind": "count", "by": "smoker"}


def test_a_services_error_about_a_condition_or_field_is_shown_at_its_input():
    from market.web.owner_forms import add_statistics_errors, statistic_formset

    data = {"stats-TOTAL_FORMS": "2", "stats-INITIAL_FORMS": "0", "stats-0-kind": "",
            "stats-1-kind": "count", "stats-1-by": "city", "stats-1-categories": "Oslo",
            "stats-1-categories_public": "on",
            "stats-1-where_1_column": "city", "stats-1-where_1_op": "=", "stats-1-where_1_value": "Oslo",
            "stats-1-where_2_column": "city", "stats-1-where_2_op": "=", "stats-1-where_2_value": "Bergen"}
    formset = statistic_formset(columns=COLUMNS, data=data)
    assert formset.is_valid(), formset.errors
    specs, rows = formset.specs()
    assert rows == [1] and [c["value"] for c in specs[0]["where"]] == ["Oslo", "Bergen"]
    add_statistics_errors(formset, rows, [
        "statistic 1 (count), condition 2: op '<' needs a number or date column; 'city' is categorical",
        "statistic 1 (count): categories lists 'Oslo' twice",
        "statistic 1 (count): same as statistic 1",
    ])
    row = formset.forms[1]
    assert "needs a number" in row.errors["where_2_value"][0]  # the second used slot is the third on the page
    assert "twice" in row.errors["categories"][0]
    assert row.non_field_errors() == ["same as statistic 2"]
