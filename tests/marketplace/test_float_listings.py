"""A listing made on the float Laplace path (engine "laplace": every listing created before the
exact lattice path) keeps selling. Its rows are built here as listing creation built them then
(the plan laid out without grids, float weights and ranges, a float64 answer, a Laplace noise
path), and its releases read back as floats with Laplace error bounds."""

import json
from decimal import Decimal

import numpy as np
import pytest

from market.catalog import files
from market.catalog.spec.columns import columns_from
from market.catalog.compute import ParquetTable, compute
from market.catalog.models import Listing
from market.catalog.spec import build_plan
from market.trading.models import Purchase
from market.trading.services import purchase_create
from releases.models import NoisePath, NoisePoint, Release
from releases.engine.postprocess import laplace_error_bound
from market.trading.selectors import release_readings
from tests.datasets import ready_dataset
from tests.fixtures.market import STATISTICS, make_csv, old_float_listing

pytestmark = pytest.mark.django_db

FLOAT_STATISTICS = [*STATISTICS, {"kind": "sum", "column": "income", "lower": 0, "upper": 200000}]


@pytest.fixture
def float_listing(owner):
    """An old listing on the float path (its rows built directly: no new listing can be made so)."""
    dataset = ready_dataset(owner=owner, name="visits", data=make_csv(500), total_budget="100")
    listing = old_float_listing(dataset, FLOAT_STATISTICS, title="Clinic visits (float path)")
    assert listing.true_answer().dtype == np.float64
    return listing


def test_a_float_path_listing_still_sells_and_reads_back_with_laplace_bounds(
    float_listing, buyer, fund, eager_celery, seeded_noise, before_float_retirement, django_capture_on_commit_callbacks
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
            assert r["error_bound_exact"] == pytest.approx(laplace_error_bound(weights[index[r["label"]]] / eps), rel=1e-12)
            assert r["error_bound"] >= r["error_bound_exact"]  # shown rounded up, never down
        strays = np.abs(np.asarray(release.values) - truth) > [laplace_error_bound(w / eps) for w in weights]
        assert strays.sum() <= 10, (eps, int(strays.sum()))


def test_a_float_path_listing_says_so_on_its_page_and_in_the_api(client, float_listing, api):
    page = client.get(f"/listings/{float_listing.pk}/").content.decode()
    assert "Floating-point noise on each value, retired" in page and "no δ has been established" in page
    assert "δ below" not in page and "ε-differentially private up to a tiny δ" not in page
    assert "Exact integer noise" not in page and "rounded to a multiple of" not in page
    offered = json.loads(api().get(f"/api/v1/listings/{float_listing.pk}/").content)
    assert offered["engine"] == "laplace"
    assert all("grid" not in stat for stat in offered["statistics"])


def _released_before_retirement(listing, levels, seed=7):
    """Levels an old float listing released before the float path was retired: its noise points,
    drawn as the old release step drew them (first draw, then relax or tighten; fixed seed)."""
    from releases.engine.path import NoisePath as EnginePath

    path = NoisePath.objects.get(listing=listing)
    engine, rng = EnginePath(path.dim), np.random.default_rng(seed)
    for level in levels:
        draw = engine.draw(float(level), rng)
        point = NoisePoint(path=path, level=Decimal(level), method=draw.method)
        point.set_vector(draw.noise)
        point.save()
    path.released_max = max(Decimal(x) for x in levels)
    path.save(update_fields=["released_max"])


def test_a_float_listing_sells_only_the_levels_it_has_released_and_charges_nothing_else(
    float_listing, buyer, fund, api, eager_celery, django_capture_on_commit_callbacks
):
    """No new float noise is drawn: a level above what the path released (or between its released
    levels) is a plain 400 naming why, nothing charged; a level it released is read, not drawn.
    Fails on the code before the retirement (the level 3 purchase was accepted and relaxed)."""
    from market.core.errors import InvalidInput
    from market.ledger.selectors import wallet_balance

    _released_before_retirement(float_listing, ["1", "2"])
    fund(buyer, 100)
    for eps in ("3", "1.5"):
        with pytest.raises(InvalidInput, match="floating-point noise is retired") as refused:
            purchase_create(buyer=buyer, listing_id=float_listing.pk, epsilon=eps)
        assert "1, 2" in str(refused.value) and "no established δ" in str(refused.value)
    assert wallet_balance(user=buyer) == Decimal("100") and not Purchase.objects.exists()
    answer = api(buyer).post("/api/v1/purchases/", {"listing": float_listing.pk, "epsilon": "3"}, format="json")
    assert answer.status_code == 400 and "retired" in json.dumps(answer.json())
    quote = api(buyer).get(f"/api/v1/listings/{float_listing.pk}/quote/?epsilon=3")
    assert quote.status_code == 400
    with django_capture_on_commit_callbacks(execute=True):
        purchase_create(buyer=buyer, listing_id=float_listing.pk, epsilon="2")
    assert Purchase.objects.get().status == "released"
    assert wallet_balance(user=buyer) == Decimal("80")  # 100 - P(2)
    assert NoisePoint.objects.count() == 2  # read, not drawn
    page = api(buyer).get(f"/api/v1/listings/{float_listing.pk}/").json()
    assert page["engine"] == "laplace"


def test_a_float_purchase_pending_when_the_path_was_retired_is_refunded(
    float_listing, buyer, fund, monkeypatch
):
    """A purchase paid before the retirement whose release task had not run yet: its release step
    would draw (relax from 1 to 3); it is refused through the failure path, the price refunded, the
    holding back where it was, no noise drawn. Fails on the code before the retirement (released)."""
    import market.trading.services as trading
    from market.ledger.selectors import ledger_is_balanced, wallet_balance
    from market.trading.services import purchase_release

    _released_before_retirement(float_listing, ["1"])
    fund(buyer, 100)
    monkeypatch.setattr(trading, "level_refusal", lambda **kwargs: None)  # as it was paid: before
    purchase, *_ = purchase_create(buyer=buyer, listing_id=float_listing.pk, epsilon="3")  # no task runs here
    monkeypatch.undo()
    assert wallet_balance(user=buyer) == Decimal("70") and purchase.status == "queued"
    assert purchase_release(purchase_id=purchase.pk) is None
    purchase.refresh_from_db()
    assert purchase.status == "failed" and "retired" in purchase.failure_reason
    assert "refunded" in purchase.failure_reason
    assert wallet_balance(user=buyer) == Decimal("100") and ledger_is_balanced()
    assert not Release.objects.exists() and NoisePoint.objects.count() == 1
    from market.trading.models import Holding

    assert Holding.objects.get(buyer=buyer, listing=float_listing).purchased == 0
