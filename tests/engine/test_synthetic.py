"""Synthetic rows from noisy marginals (releases/engine/synthetic.py): the tables measured, the
consistent estimate, the tree, the rows dealt down it, and their quality against the noise."""

import itertools

import numpy as np
import pytest

from releases.engine.synthetic import (
    Workload,
    average_tvd,
    estimate,
    largest_remainder,
    sample,
    shrunk,
    simplex,
    synthesize,
    tree,
)

SIZES = (4, 3, 5, 2, 6)


def chain(rows: int, seed: int) -> np.ndarray:
    """Rows whose columns depend along 0 - 1 - 2 - 3 and 0 - 4, each child a noisy function of its parent."""
    rng = np.random.default_rng(seed)
    c0 = rng.integers(0, 4, rows)
    c1 = np.where(rng.random(rows) < 0.8, c0 % 3, rng.integers(0, 3, rows))
    c2 = np.where(rng.random(rows) < 0.7, (2 * c1) % 5, rng.integers(0, 5, rows))
    c3 = np.where(rng.random(rows) < 0.9, (c2 > 2).astype(int), rng.integers(0, 2, rows))
    c4 = np.where(rng.random(rows) < 0.75, c0 + 1, rng.integers(0, 6, rows))
    return np.column_stack([c0, c1, c2, c3, c4])


def test_the_tables_are_every_column_and_every_pair_counted():
    w = Workload(SIZES)
    rows = chain(500, 1)
    y = w.measure(rows)
    assert len(w.tables) == 5 + 10 and y.size == sum(SIZES) + sum(a * b for a, b in itertools.combinations(SIZES, 2))
    for i in range(5):
        assert np.array_equal(w.table(y, (i,)), np.bincount(rows[:, i], minlength=SIZES[i]))
    for i, j in itertools.combinations(range(5), 2):
        expected = np.zeros((SIZES[i], SIZES[j]))
        for a, b in rows[:, [i, j]]:
            expected[a, b] += 1
        assert np.array_equal(w.table(y, (i, j)), expected)


@pytest.mark.parametrize("seed", range(5))
def test_the_simplex_projection_is_the_closest_non_negative_vector_of_the_total(seed):
    """Its optimality conditions: ``v - x`` is one constant on the cells kept, and at most it where
    ``x`` is 0 (a clip, or a shift without the clip, breaks them)."""
    v = np.random.default_rng(seed).normal(3, 10, 12)
    x = simplex(v, 40.0)
    assert (x >= 0).all() and x.sum() == pytest.approx(40.0)
    kept = x > 0
    tau = (v - x)[kept]
    assert np.ptp(tau) < 1e-9 and (v[~kept] <= tau[0] + 1e-9).all()


def test_an_exact_measurement_is_estimated_as_itself():
    w = Workload(SIZES)
    rows = chain(2000, 2)
    y = w.measure(rows)
    model = estimate(y, w, total=2000)
    for i in range(5):
        assert np.allclose(model.ones[i], w.table(y, (i,)))
    for pair in itertools.combinations(range(5), 2):
        assert np.allclose(model.twos[pair], w.table(y, pair), atol=1e-5)


@pytest.mark.parametrize("public", [True, False])
def test_noisy_tables_become_non_negative_and_consistent(public):
    w = Workload(SIZES)
    rows = chain(3000, 3)
    noisy = w.measure(rows) + np.random.default_rng(4).normal(0, 40, w.width)
    model = estimate(noisy, w, total=3000 if public else None)
    if public:
        assert model.total == 3000
    else:  # the tables' totals averaged by their variances: within a few noise units of the truth
        assert abs(model.total - 3000) < 40
    for i in range(5):
        assert (model.ones[i] >= 0).all() and model.ones[i].sum() == pytest.approx(model.total)
    for (i, j), joint in model.twos.items():
        assert (joint >= 0).all()
        assert np.allclose(joint.sum(axis=1), model.ones[i], atol=1e-6 * model.total)
        assert np.allclose(joint.sum(axis=0), model.ones[j], atol=1e-6 * model.total)


def test_the_tree_follows_the_strongest_dependencies():
    w = Workload(SIZES)
    model = estimate(w.measure(chain(5000, 5)), w, total=5000)
    assert sorted(tree(model)) == [(0, 1), (0, 4), (1, 2), (2, 3)]


def test_rows_are_dealt_in_the_models_counts_and_the_same_source_deals_the_same_rows():
    w = Workload(SIZES)
    model = estimate(w.measure(chain(1000, 6)) + np.random.default_rng(6).normal(0, 10, w.width), w, total=1000)
    edges = tree(model)
    rows = sample(model, edges, 1000, np.random.default_rng(7))
    assert np.array_equal(rows, sample(model, edges, 1000, np.random.default_rng(7)))
    other = sample(model, edges, 1000, np.random.default_rng(8))
    assert not np.array_equal(rows, other)
    root = edges[0][0]
    assert np.array_equal(np.bincount(rows[:, root], minlength=SIZES[root]), largest_remainder(model.ones[root], 1000))
    for parent, child in edges:  # within each parent value, the child's counts are the model's, rounded
        joint = model.twos[(parent, child)] if parent < child else model.twos[(child, parent)].T
        for value in range(SIZES[parent]):
            at = rows[:, parent] == value
            found = np.bincount(rows[at, child], minlength=SIZES[child])
            assert np.array_equal(found, largest_remainder(joint[value], int(at.sum())))
    # another source deals other rows with the same tables on the tree (pairs off it are left to chance)
    a, b = w.measure(rows), w.measure(other)
    for table in [(i,) for i in range(5)] + [tuple(sorted(edge)) for edge in edges]:
        assert np.array_equal(w.table(a, table), w.table(b, table))


def test_largest_remainder_rounds_to_the_count_in_proportion():
    assert largest_remainder(np.array([1.0, 1.0, 1.0]), 10).tolist() == [4, 3, 3]
    assert largest_remainder(np.array([0.0, 0.0]), 3).tolist() == [2, 1]
    assert largest_remainder(np.array([0.5, 0.3, 0.2]), 7).tolist() == [4, 2, 1]


def test_the_rows_quality_falls_with_the_noise_and_beats_independent_columns():
    """Average 2-way TVD against the true rows (fixed seeds): below 0.02 without noise (the model is
    a tree: the pairs off it are approximated through it), growing with the noise, and at every
    noise below the columns drawn independently (0.1 here)."""
    w = Workload(SIZES)
    truth = chain(5000, 9)
    y = w.measure(truth)
    rng = np.random.default_rng(10)
    found = [average_tvd(synthesize(y + rng.normal(0, sigma, w.width), w, rng=rng), truth, w)
             for sigma in (0, 10, 50, 200)]
    independent = average_tvd(np.column_stack([rng.permutation(truth[:, i]) for i in range(5)]), truth, w)
    assert found[0] < 0.02
    assert found == sorted(found)
    assert found[-1] < independent


def test_a_table_is_shrunk_toward_independence_as_far_as_its_noise_explains_its_departure():
    """The positive-part James-Stein step (fixed seeds). A table of independent columns plus noise is
    pulled most of the way back to independence (closer to the truth than the unshrunk table, in
    every one of 20 draws); a strong dependence under little noise is kept almost whole; a table
    with fewer than 3 degrees of freedom, or a noise of variance 0, is left alone."""
    rng = np.random.default_rng(21)
    rows, cols = np.array([60.0, 30.0, 10.0]), np.array([40.0, 25.0, 20.0, 15.0])
    truth = np.outer(rows, cols) / 100.0
    for _ in range(20):
        noise = rng.normal(0, 3.0, truth.shape)
        noise -= noise.mean(axis=1, keepdims=True) + noise.mean(axis=0, keepdims=True) - noise.mean()
        noisy = truth + noise  # the margins kept: the estimate moves every table onto its shared margins
        found = shrunk(noisy, rows, cols, 9.0)
        assert np.abs(found - truth).sum() < np.abs(noisy - truth).sum()
        assert np.allclose(found.sum(axis=1), rows) and np.allclose(found.sum(axis=0), cols)
    strong = np.diag([30.0, 30.0, 40.0])
    kept = shrunk(strong, strong.sum(axis=1), strong.sum(axis=0), 1.0)
    independent = np.outer(strong.sum(axis=1), strong.sum(axis=0)) / 100.0
    factor = (kept - independent).sum(where=np.eye(3, dtype=bool)) / (strong - independent).sum(where=np.eye(3, dtype=bool))
    assert 0.99 < factor < 1.0
    two = np.array([[5.0, 1.0], [1.0, 5.0]])  # one degree of freedom: never shrunk
    assert np.array_equal(shrunk(two, two.sum(axis=1), two.sum(axis=0), 100.0), two)
    assert np.array_equal(shrunk(strong, strong.sum(axis=1), strong.sum(axis=0), 0.0), strong)


def test_rows_from_a_small_real_table_are_better_when_the_estimate_knows_the_noise():
    """The Palmer penguins (344 records, 7 coded columns, 28 tables) under the noise of the Skellam
    path at eps 0.5 (a standard deviation of about 80 a cell), 8 fixed seeds: told the noise's
    variance, the estimate shrinks the noisy tables, and the rows' average 2-way TVD falls in every
    draw and by 0.04 or more on average (0.42 against 0.48 here). On a table of a few strong
    dependencies (``chain``) the step is about neutral; docs/mathematics.md says where it helps."""
    from bench.synthetic_quality import penguins

    truth, sizes, _ = penguins()
    w = Workload(sizes)
    y = w.measure(truth)
    told, untold = [], []
    for seed in range(8):
        noisy = y + np.random.default_rng(100 + seed).normal(0, 80, w.width)
        told.append(average_tvd(synthesize(noisy, w, total=344, variance=6400.0, rng=np.random.default_rng(seed)), truth, w))
        untold.append(average_tvd(synthesize(noisy, w, total=344, rng=np.random.default_rng(seed)), truth, w))
    assert all(a < b for a, b in zip(told, untold))
    assert np.mean(told) < np.mean(untold) - 0.04
