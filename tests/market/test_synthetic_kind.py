"""The synthetic-data kind laid out as every 1-way and 2-way table of its columns, computed by the
product's engine and checked against an independent coding of the same table (pandas and numpy, as
the quality bench codes it)."""

from pathlib import Path

import numpy as np
import palmerpenguins
import pandas as pd
import pyarrow as pa
import pytest

from bench.synthetic_quality import _coded
from market.catalog.compute import Table, compute
from market.catalog.spec import SpecError, build_plan
from market.catalog.spec.columns import Column
from market.catalog.spec.kinds import KINDS
from market.catalog.spec.stability import Neighbours
from releases.engine.synthetic import Workload

PENGUINS = pd.read_csv(Path(palmerpenguins.__file__).parent / "data" / "penguins.csv")
COLUMNS = [Column("species", "categorical"), Column("island", "categorical"), Column("bill_length_mm", "decimal", "category"),
           Column("body_mass_g", "integer", "category"), Column("sex", "categorical", "category"), Column("year", "integer")]
SPEC = [{"kind": "synthetic", "columns": [
    {"column": "species", "categories": ["Adelie", "Chinstrap", "Gentoo"]},
    {"column": "island", "categories": ["Biscoe", "Dream"]},
    {"column": "bill_length_mm", "bins": [35, 40, 45, 50]},
    {"column": "body_mass_g", "bins": [3000, 4000, 5000, 6000]},
    {"column": "sex", "categories": ["female", "male"]},
]}]
#: the same coding, independently: categories then "other", bins open at both ends, missing last
INDEPENDENT = {
    "species": ("categories", ["Adelie", "Chinstrap", "Gentoo"]),
    "island": ("categories", ["Biscoe", "Dream"]),
    "bill_length_mm": ("bins", [-1e9, 40, 45, 1e9]),
    "body_mass_g": ("bins", [-1e9, 4000, 5000, 1e9]),
    "sex": ("categories", ["female", "male"]),
}


def test_the_tables_are_every_column_and_pair_with_one_cell_each_per_record():
    plan = build_plan(SPEC, COLUMNS, neighbours=Neighbours(), mechanism="skellam")
    sizes = KINDS["synthetic"].sizes(plan.statistics[0], {c.name: c for c in COLUMNS})
    # species 3 + other; island 2 + other; bills 3 bins + missing; mass 3 bins + missing; sex 2 + other + missing
    assert sizes == (4, 3, 4, 4, 4)
    assert len(plan.labels) == Workload(sizes).width == 19 + sum(a * b for i, a in enumerate(sizes) for b in sizes[i + 1:])
    assert plan.labels[0] == "count | species = Adelie" and "count | species = Gentoo, island = Dream" in plan.labels
    # one worst case: a record added moves one cell of each of the 15 tables by one
    assert len(plan.lattice.unit_cases) == 1 and len(plan.lattice.unit_cases[0]) == 15
    public = build_plan(SPEC, COLUMNS, neighbours=Neighbours("public_size", 344), mechanism="skellam")
    assert len(public.lattice.unit_cases[0]) == 30  # replaced: one cell down and one up in each


def test_the_engine_counts_what_an_independent_coding_counts():
    plan = build_plan(SPEC, COLUMNS, neighbours=Neighbours(), mechanism="skellam")
    found = compute(plan, Table.from_arrow(pa.Table.from_pandas(PENGUINS, preserve_index=False)))
    codes, sizes, _ = _coded(PENGUINS, INDEPENDENT)
    assert sizes == (4, 3, 4, 4, 4)
    assert np.array_equal(found, Workload(sizes).measure(codes))


@pytest.mark.parametrize("columns,message", [
    ([{"column": "species", "categories": ["Adelie"]}], "columns must list 2 to 15"),
    ([{"column": "species"}, {"column": "sex", "categories": ["male"]}], "missing field 'categories'"),
    ([{"column": "species", "categories": ["Adelie"]}, {"column": "species", "categories": ["Gentoo"]}], "listed twice"),
    ([{"column": "year", "categories": [2007]}, {"column": "sex", "categories": ["male"]}], "unknown field .categories."),
    ([{"column": "body_mass_g", "bins": [5, 1]}, {"column": "sex", "categories": ["male"]}], "strictly increasing"),
])
def test_bad_columns_are_refused_with_the_reason(columns, message):
    with pytest.raises(SpecError, match=message):
        build_plan([{"kind": "synthetic", "columns": columns}], COLUMNS, mechanism="skellam")


def test_synthetic_data_is_listed_on_its_own_and_needs_every_record_counted():
    with pytest.raises(SpecError, match="synthetic data is listed on its own"):
        build_plan(SPEC + [{"kind": "count"}], COLUMNS, mechanism="skellam")
    excluded = [Column("species", "categorical"), Column("sex", "categorical", "exclude")]
    spec = [{"kind": "synthetic", "columns": [{"column": "species", "categories": ["Adelie"]},
                                              {"column": "sex", "categories": ["male"]}]}]
    with pytest.raises(SpecError, match="count its missing values as a category"):
        build_plan(spec, excluded, mechanism="skellam")


def test_a_listing_keeps_the_rows_model_it_was_made_with():
    """The rows' model is versioned so that a level's rows never change: a new listing gets the
    latest (2: the tables shrunk by the level's public noise variance); a listing stored before
    versions (no ``model``) draws as model 1 did (no shrinking); an unknown version is refused."""
    import dataclasses

    from market.catalog.synthetic import _codes
    from releases.engine.keystream import keyed_words
    from releases.engine.osrandom import OSRandom
    from releases.engine.synthetic import synthesize

    plan = build_plan(SPEC, COLUMNS, neighbours=Neighbours("public_size", 344), mechanism="lattice")
    assert plan.statistics[0]["model"] == 2
    assert build_plan([{**SPEC[0], "model": 1}], COLUMNS, mechanism="lattice").statistics[0]["model"] == 1
    for bad in (3, True, "2"):
        with pytest.raises(SpecError, match="model must be one of 1, 2"):
            build_plan([{**SPEC[0], "model": bad}], COLUMNS, mechanism="lattice")
    truth = compute(plan, Table.from_arrow(pa.Table.from_pandas(PENGUINS, preserve_index=False)))
    workload = Workload((4, 3, 4, 4, 4))
    values = truth + np.random.default_rng(5).integers(-30, 31, truth.size)
    key = b"k" * 32
    variance = [plan.variance(i, "0.5") for i in range(workload.width)]
    assert len(set(variance)) == 1 and variance[0] > 100  # every cell's discrete Laplace at 0.5 / (2 x 15)
    stored = {k: v for k, v in plan.statistics[0].items() if k != "model"}
    old = dataclasses.replace(plan, statistics=(stored,))
    for shown, told in ((plan, variance), (old, None)):
        codes = _codes(shown, values, key, "0.5")[3]
        expected = synthesize(np.asarray(values, dtype=np.float64), workload, total=344.0, variance=told,
                              rng=OSRandom(words=keyed_words(key)))
        assert np.array_equal(codes, expected)
    assert not np.array_equal(_codes(plan, values, key, "0.5")[3], _codes(old, values, key, "0.5")[3])
