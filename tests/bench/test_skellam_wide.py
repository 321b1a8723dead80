"""The wide-listing bench (bench/skellam_wide.py) on its three tables, small: the listing is laid out
as the product lays it out (on the lattice each table a third of eps, weight 3; on the Skellam path
weight 1, one record moving 3 values), the bounds it reports are each path's exact 95% quantiles,
and the realised errors it reports come from releases whose spread is each path's noise at the
level (the root mean square within 5% of the noise's standard deviation, the share within the
bound near 95%). Caught: the Skellam releases drawn with the lattice's weights (noise three times
too large)."""

import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from bench.skellam_wide import LEVELS, dataset, figures, listing, specs
from market.catalog.spec import Neighbours
from releases.engine import lattice
from releases.engine import skellam_privacy as sp


@pytest.fixture(scope="module")
def tables():
    return listing("tables", specs()["tables"], dataset(20_000, 5), Neighbours())


def test_the_tables_are_laid_out_as_the_product_lays_them_out(tables):
    assert len(tables.u) == 150 and tables.u.sum() == 3 * 20_000  # every record once in each table
    assert set(tables.lattice.lattice.unit_weights) == {3} and set(tables.skellam.lattice.unit_weights) == {1}
    assert [move for _, move in tables.skellam.lattice.unit_cases[0]] == [1, 1, 1]
    assert tables.bound.ladder()[-1] == Decimal(2) and set(LEVELS) <= set(tables.bound.ladder())


def test_bounds_are_exact_quantiles_and_errors_have_each_paths_spread(tables):
    rows = figures(tables, draws=300, seed=11)
    assert [row["level"] for row in rows] == [str(level) for level in LEVELS]
    for row, level in zip(rows, LEVELS):
        mu = tables.bound.time(level)
        skellam_sd = math.sqrt(2 * mu)
        a = math.exp(-float(level) / 3)
        lattice_sd = math.sqrt(2 * a) / (1 - a)
        for value in row["values"]:
            assert value["skellam"]["bound"] == sp.error_bound(mu, 0.95)
            assert value["lattice"]["bound"] == lattice.error_bound(Fraction(level) / 3, Fraction(95, 100))
        assert row["skellam"]["rms"] == pytest.approx(skellam_sd, rel=0.05)
        assert row["lattice"]["rms"] == pytest.approx(lattice_sd, rel=0.05)
        for path in ("lattice", "skellam"):
            assert 0.94 < row[path]["within"] < 0.97
        assert row["rms_ratio"] == pytest.approx(skellam_sd / lattice_sd, rel=0.08)
        assert row["bound_ratio"] > 1.5  # three values moved: Laplace noise is the smaller here
    assert np.isfinite([row["bound_ratio"] for row in rows]).all()
