"""Every sensitivity follows the dataset's neighbouring relation
(market/catalog/spec/, docs/mathematics.md section 12).

A private size: a neighbour has one record more or fewer. A public size: a
neighbour has one record replaced, and the number of records is public. The
sensitivities are checked two ways: against the stated values, and against
the largest move actually seen between random neighbouring datasets.
"""

from decimal import Decimal

import numpy as np
import pytest

from market.catalog.compute import Table, compute
from market.catalog.spec import (
    PRIVATE_SIZE,
    PUBLIC_SIZE,
    Neighbours,
    SpecError,
    build_plan,
    present,
)


def compute_on(plan, names, values):
    """The plan's answer on a float matrix with one column per name (through DuckDB)."""
    return compute(plan, Table.from_matrix(names, values))

COLUMNS = ["age", "east", "north"]
PRIVATE = Neighbours(PRIVATE_SIZE, max_rows=1000)


def public(n):
    return Neighbours(PUBLIC_SIZE, size=n, max_rows=1000)


SPEC = [
    {"kind": "sum", "column": "age", "lower": -20, "upper": 100},
    {"kind": "histogram", "column": "age", "bins": [0, 18, 65, 100]},
    {"kind": "mean", "column": "age", "lower": 0, "upper": 100},
]


def test_private_size_sensitivities():
    plan = build_plan(SPEC + [{"kind": "count"}], COLUMNS, neighbours=PRIVATE)
    # count 1, sum(age; -20..100) max(20, 100), histogram 1, sum(age; 0..100) 100
    assert plan.labels[0] == "count"
    assert plan.sensitivity == 1 + 100 + 100 + 1
    assert sorted(plan.loss_shares) == [0.25] * 4
    assert sum(plan.loss_shares) == 1  # exactly: the shares are fractions


def test_public_size_sensitivities_and_no_count():
    plan = build_plan(SPEC, COLUMNS, neighbours=public(40))
    # sum U - L = 120, histogram 2 (one bin down, one up), sum(age; 0..100) 100; no count coordinate
    assert "count" not in plan.labels
    assert plan.sensitivity == 120 + 2 + 100
    # three groups; the histogram's share is split over the two bins that move
    assert sorted(plan.loss_shares) == pytest.approx(sorted([1 / 3, 1 / 6, 1 / 6, 1 / 3]))
    # declared ranges use the public size
    assert plan.upper[plan.labels.index("age in [0, 18)")] == 40


def test_a_public_count_is_not_sold():
    with pytest.raises(SpecError, match=r"statistic 1 \(count\): the number of records is public \(40\)"):
        build_plan([{"kind": "count"}], COLUMNS, neighbours=public(40))


def test_a_centroid_is_offered_on_the_skellam_path_only_and_old_ones_read_with_2R_over_n():
    spec = [{"kind": "centroid", "columns": ["east", "north"], "center": [0, 0], "radius": 10}]
    # off the Skellam path no new listing offers it (its float l2 path is retired)
    with pytest.raises(SpecError, match="a centroid is released on the Skellam path"):
        build_plan(spec, COLUMNS, neighbours=public(50), mechanism="lattice")
    with pytest.raises(SpecError, match="sold only when that number is public"):
        build_plan(spec, COLUMNS, neighbours=PRIVATE, mechanism="skellam")
    on_path = build_plan(spec, COLUMNS, neighbours=public(50), mechanism="skellam")
    assert on_path.norm == "l2" and on_path.lattice.grids == (Decimal("0.5"),) * 2  # 20 steps of the radius
    plan = build_plan(spec, COLUMNS, neighbours=public(50), offer=False)  # an old listing's, read back
    assert plan.norm == "l2" and plan.sensitivity == pytest.approx(2 * 10 / 50)
    old = [{**spec[0], "min_records": 5}]
    with pytest.raises(SpecError, match="a new centroid needs none"):
        build_plan(old, COLUMNS, neighbours=public(50), mechanism="skellam")
    # an old listing's spec is still read back, with the sensitivity it was sold with
    assert build_plan(old, COLUMNS, neighbours=PRIVATE, offer=False).sensitivity == pytest.approx(2 * 10 / 4)


def test_a_point_is_never_offered_but_old_ones_are_read():
    spec = [{"kind": "point", "columns": ["east", "north"], "row": 1, "radius": 25}]
    for nb in (PRIVATE, public(3)):
        with pytest.raises(SpecError, match="not offered"):
            build_plan(spec, COLUMNS, neighbours=nb)
    plan = build_plan(spec, COLUMNS, neighbours=PRIVATE, offer=False)
    assert plan.labels == ("point(east)", "point(north)")


def test_a_public_mean_divides_by_n():
    plan = build_plan([SPEC[2]], COLUMNS, neighbours=public(4))
    data = np.array([[10, 0, 0], [20, 0, 0], [30, 0, 0], [200, 0, 0]], float)
    u = compute_on(plan, COLUMNS, data)
    assert u.tolist() == [160.0]  # the clamped sum, one coordinate
    (reading,) = present(plan, u, plan.weights / 1.0)
    assert reading["value"] == 40.0 and reading["kind"] == "mean"
    assert reading["noise_scale"] == pytest.approx(100 / 4)


def test_compute_refuses_data_whose_size_differs_from_the_public_one():
    plan = build_plan([SPEC[0]], COLUMNS, neighbours=public(5))
    with pytest.raises(ValueError, match="public size is 5"):
        compute_on(plan, COLUMNS, np.zeros((4, 3)))


def _largest_move(plan, relation, rng, trials=3000):
    """The largest l1 (or l2) change of the answer between random neighbouring datasets."""
    values = np.array([-30, -20, 0, 17.9, 18, 64, 65, 99, 100, 140])
    worst = 0.0
    for _ in range(trials):
        n = 6
        rows = np.column_stack([rng.choice(values, n), rng.uniform(-30, 30, n), rng.uniform(-30, 30, n)])
        other = np.column_stack([rng.choice(values, 1), rng.uniform(-30, 30, 1), rng.uniform(-30, 30, 1)])
        if relation == PRIVATE_SIZE:
            neighbour = np.vstack([rows, other])
        else:
            neighbour = rows.copy()
            neighbour[rng.integers(n)] = other[0]
        a, b = compute_on(plan, COLUMNS, rows), compute_on(plan, COLUMNS, neighbour)
        worst = max(worst, float(np.linalg.norm(a - b, 1 if plan.norm == "l1" else 2)))
    return worst


@pytest.mark.slow  # tens of seconds even at the quick size: --all and CI run it (docs/testing.md)
@pytest.mark.parametrize(
    "spec, relation",
    [
        (SPEC + [{"kind": "count"}], PRIVATE_SIZE),
        (SPEC, PUBLIC_SIZE),
        ([{"kind": "centroid", "columns": ["east", "north"], "center": [0, 0], "radius": 10}], PUBLIC_SIZE),
    ],
)
def test_no_neighbour_moves_the_answer_more_than_the_sensitivity(spec, relation):
    """Each group's stated sensitivity holds, and is reached (it is not loose by more than 10%)."""
    rng = np.random.default_rng(11)
    nb = PRIVATE if relation == PRIVATE_SIZE else public(6)
    plan = build_plan(spec, COLUMNS, neighbours=nb, offer=False)  # offer=False: the centroid of old listings too
    worst = _largest_move(plan, relation, rng)
    assert worst <= plan.sensitivity + 1e-9
    assert worst >= 0.9 * plan.sensitivity
