"""A listing made on the float Laplace path (engine "laplace": every listing created before the
exact lattice path) keeps selling. Its rows are built here as listing creation built them then
(the plan laid out without grids, float weights and ranges, a float64 answer, a Laplace noise
path), and its releases read back as floats with Laplace error bounds."""

import json
from decimal import Decimal

import numpy as np
import pytest

from market.catalog import files
from market.catalog.columns import columns_from
from market.catalog.compute import ParquetTable, compute
from market.catalog.models import Listing
from market.catalog.statistics import build_plan
from market.trading.models import Purchase
from market.trading.services import purchase_create
from releases.models import NoisePath, NoisePoint, Release
from releases.engine.postprocess import laplace_error_bound
from market.trading.selectors import release_readings
from tests.datasets import ready_dataset
from tests.marketplace.conftest import STATISTICS, make_csv

pytestmark = pytest.mark.django_db

FLOAT_STATISTICS = [*STATISTICS, {"kind": "sum", "column": "income", "lower": 0, "upper": 200000}]


@pytest.fixture
def float_listing(owner):
    dataset = ready_dataset(owner=owner, name="visits", data=make_csv(500), total_budget="100")
    plan = build_plan(FLOAT_STATISTICS, columns_from(dataset.columns), neighbours=dataset.neighbours(), engine="laplace")
    with files.dataset_table_path(dataset) as path:
        answer = compute(plan, ParquetTable(path))
    assert plan.lattice is None and answer.dtype == np.float64
    listing = Listing.objects.create(
        dataset=dataset,
        title="Clinic visits (float path)",
        statistics=list(plan.statistics),
        labels=list(plan.labels),
        kinds="," + ",".join(sorted({stat["kind"] for stat in plan.statistics})) + ",",
        sensitivity=float(plan.sensitivity),
        engine=Listing.Engine.LAPLACE,
        weights=[float(w) for w in plan.weights],
        lower=[float(v) for v in plan.lower],
        upper=[float(v) for v in plan.upper],
        answer=b"",
        ceiling=Decimal("5"),
        price_curve={"kind": "linear", "c": "10.00"},
        price_per_epsilon=Decimal("10.00"),
    )
    listing.set_true_answer(answer)
    listing.save(update_fields=["answer"])
    NoisePath.objects.create(listing=listing, dim=len(plan.labels), norm=plan.norm, engine="laplace")
    return listing


def test_a_float_path_listing_still_sells_and_reads_back_with_laplace_bounds(
    float_listing, buyer, fund, eager_celery, seeded_noise, django_capture_on_commit_callbacks
):
    """Two purchases (levels 1, then 3: a first draw and a relaxation) release floats on the
    listing's Laplace path. Each reading of a coordinate carries the Laplace bound of its scale
    ``weight / eps``; and at each level at most 10 of the 53 coordinates stray beyond their 95%
    bound from the true answer (each strays with probability at most 0.05, independently within a
    level: a false alarm has probability below 6e-5 per level; the seeds are fixed)."""
    listing = Listing.objects.get(pk=float_listing.pk)
    truth = listing.true_answer()
    weights = np.asarray(listing.weights)
    assert truth.dtype == np.float64 and len(truth) == 53  # the count, sum(age) for the mean, 50 bins, sum(income)
    fund(buyer, 100)
    for eps in ("1", "3"):
        with django_capture_on_commit_callbacks(execute=True):
            purchase_create(buyer=buyer, listing_id=listing.pk, epsilon=eps)
    assert list(Purchase.objects.values_list("status", flat=True)) == ["released", "released"]
    assert list(NoisePoint.objects.order_by("level").values_list("method", flat=True)) == ["initial", "relax"]

    for release in Release.objects.order_by("level"):
        eps = float(release.level)
        assert release.point.vector().dtype == np.float64  # float noise, not the lattice's integers
        assert all(type(v) is float for v in release.values)
        np.testing.assert_allclose(release.noise_scales, weights / eps, rtol=1e-12)
        index = {label: i for i, label in enumerate(listing.labels)}
        readings = [r for r in release_readings(release) if r["label"] in index]
        assert len(readings) == 52  # every coordinate but sum(age), read as the mean with the count
        for r in readings:
            assert r["error_bound"] == pytest.approx(laplace_error_bound(weights[index[r["label"]]] / eps), rel=1e-12)
        strays = np.abs(np.asarray(release.values) - truth) > [laplace_error_bound(w / eps) for w in weights]
        assert strays.sum() <= 10, (eps, int(strays.sum()))


def test_a_float_path_listing_says_so_on_its_page_and_in_the_api(client, float_listing, api):
    page = client.get(f"/listings/{float_listing.pk}/").content.decode()
    assert "Floating-point noise: ε-differentially private up to a tiny δ" in page
    assert "(ε, δ)-differentially private with δ below 6e-10" in page  # 53 values: 5.3e-10, rounded up
    assert "Exact integer noise" not in page and "rounded to a multiple of" not in page
    offered = json.loads(api().get(f"/api/v1/listings/{float_listing.pk}/").content)
    assert offered["engine"] == "laplace"
    assert all("grid" not in stat for stat in offered["statistics"])
