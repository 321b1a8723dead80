"""Vector listings: l2 noise from one jump-list path per listing, sampled from the ceiling down.

The l2 float path is retired: no new listing offers a vector statistic, and no new float noise
is drawn. The listings here are old ones (rows built directly, ``old_float_listing``); the tests
of the laws of the levels they released run the release step as it was before the retirement
(``before_float_retirement``)."""

import json
from decimal import Decimal

from tests.datasets import ready_dataset
import numpy as np
import pytest
from scipy import stats

from market.catalog.services import listing_create
from market.core.errors import InvalidInput
from market.trading.services import purchase_create
from releases.models import NoisePath, NoisePoint, Release
from releases.engine.postprocess import grid_step
from tests.fixtures.market import old_float_listing

pytestmark = pytest.mark.django_db

CEILING = Decimal("2")


def locations_csv(rows=400, seed=3) -> bytes:
    rng = np.random.default_rng(seed)
    xy = rng.normal([1200.0, -350.0], [800.0, 500.0], (rows, 2))  # metres in a local projection
    return ("east,north,visits\n" + "".join(f"{x:.1f},{y:.1f},{i % 7}\n" for i, (x, y) in enumerate(xy))).encode()


@pytest.fixture
def places(owner):
    """400 places; their number is public, so a centroid may be sold (its sensitivity is 2R / 400)."""
    return ready_dataset(owner=owner, name="places", data=locations_csv(), relation="public_size", total_budget="1000")


def centroid_listing(owner, dataset, row, radius=50.0):
    """An old centroid listing (made before the float path was retired)."""
    return old_float_listing(
        dataset, [{"kind": "centroid", "columns": ["east", "north"], "center": [1000, -300], "radius": radius}],
        ceiling=str(CEILING), price="1", title=f"Centre of the places, copy {row}",
    )


def buy(buyer, listing, eps, capture):
    with capture(execute=True):
        purchase, *_ = purchase_create(buyer=buyer, listing_id=listing.pk, epsilon=eps)
    return purchase


@pytest.mark.slow  # tens of seconds even at the quick size: --all and CI run it (docs/testing.md)
def test_three_levels_on_many_vector_listings_follow_the_l2_laws(
    owner, places, users, fund, eager_celery, seeded_noise, before_float_retirement, django_capture_on_commit_callbacks
):
    """300 independent paths (one per listing), each bought at 1.0, then 2.0, then 0.5:
    the first samples from the ceiling 2 down to 1 ("initial"), 2.0 is read off the
    jump list ("lookup"), 0.5 extends it ("extend"). At every level the norm of the
    unit noise is Gamma(2, 1/eps) and its direction uniform; no jump between two
    levels has probability (lo/hi)^(dim+1) = 1/8."""
    n = 300
    buyers = {level: users(f"buyer-at-{level}") for level in ("1", "2", "0.5")}
    for who in buyers.values():
        fund(who, 10_000)
    noise = {level: [] for level in ("0.5", "1", "2")}
    methods = set()
    for row in range(1, n + 1):
        listing = centroid_listing(owner, places, row)
        for level, who in buyers.items():  # in this order: 1, then 2, then 0.5
            buy(who, listing, level, django_capture_on_commit_callbacks)
        for point in NoisePoint.objects.filter(path__listing=listing):
            noise[str(point.level.normalize())].append(point.vector())
            methods.add(point.method)
    assert methods == {"l2 initial", "l2 lookup", "l2 extend"}
    for level, vectors in noise.items():
        v = np.array(vectors)
        assert stats.kstest(np.linalg.norm(v, axis=1), stats.gamma(2, scale=1 / float(level)).cdf).pvalue > 1e-3
        assert stats.kstest(np.arctan2(v[:, 1], v[:, 0]), stats.uniform(-np.pi, 2 * np.pi).cdf).pvalue > 1e-3
    for lo, hi in (("1", "2"), ("0.5", "1")):
        same = int(np.sum(np.all(np.array(noise[lo]) == np.array(noise[hi]), axis=1)))
        assert abs(same - n / 8) <= 5 * np.sqrt(n * (1 / 8) * (7 / 8))

    # a release is the centroid plus its sensitivity 2R / n times the noise, rounded to the grid
    release = Release.objects.filter(level=Decimal("0.5")).select_related("point", "listing").first()
    truth = release.listing.true_answer()
    step = grid_step(release.noise_scales[0])
    noisy = truth + 2 * 50.0 / 400 * release.point.vector()
    assert np.all(np.abs(np.array(release.values) - noisy) <= step / 2 + 1e-9)


def test_storage_does_not_grow_with_buyers(owner, places, users, fund, eager_celery, django_capture_on_commit_callbacks,
                                           monkeypatch):
    import market.trading.services
    import releases.services

    listing = centroid_listing(owner, places, 1)
    # the first buyer's levels as released before the retirement; every later buyer reads them
    checks = (releases.services._levels_check, market.trading.services.level_refusal)
    monkeypatch.setattr(releases.services, "_levels_check", lambda *args: None)
    monkeypatch.setattr(market.trading.services, "level_refusal", lambda **kwargs: None)
    sizes = []
    for i in range(40):
        who = users(f"b{i}")
        fund(who, 100)
        for level in ("0.25", "1", "2"):
            buy(who, listing, level, django_capture_on_commit_callbacks)
        if i == 0:  # retired from here on: the other 39 buyers are served from what is stored
            monkeypatch.setattr(releases.services, "_levels_check", checks[0])
            monkeypatch.setattr(market.trading.services, "level_refusal", checks[1])
        path = NoisePath.objects.get(listing=listing)
        sizes.append((len(bytes(path.jumps)), NoisePoint.objects.filter(path=path).count()))
    assert Release.objects.filter(listing=listing).count() == 120
    assert len(set(sizes)) == 1 and sizes[0][1] == 3  # after the first buyer nothing new is stored
    answers = {tuple(r.values) for r in Release.objects.filter(listing=listing, level=Decimal("1"))}
    assert len(answers) == 1  # every buyer of a level reads the same point


def test_an_old_centroid_listing_and_its_pages(owner, places, buyer, fund, eager_celery, client, before_float_retirement,
                                              django_capture_on_commit_callbacks):
    listing = old_float_listing(
        places, [{"kind": "centroid", "columns": ["east", "north"], "center": [1000, 0], "radius": 3000}],
        ceiling="4", price="3", title="Where visitors are",
    )
    assert listing.labels == ["centroid(east)", "centroid(north)"]
    assert listing.sensitivity == pytest.approx(2 * 3000 / 400)  # replace one of the 400 public places
    assert listing.noise_path.mechanism == listing.mechanism == "laplace_l2"
    fund(buyer, 100)
    client.force_login(buyer)
    page = client.get(f"/listings/{listing.pk}/").content.decode()
    assert "Centroid of (east, north)" in page and "error radius of the centroid" in page
    purchase = buy(buyer, listing, "2", django_capture_on_commit_callbacks)
    status = client.get(f"/purchases/{purchase.pk}/status/").content.decode()
    assert "<svg" in status and "95% error radius" in status
    body = client.get(f"/api/v1/purchases/{purchase.pk}/").json()
    radius = body["release"]["values"][0]["error_bound_exact"]
    assert body["release"]["values"][0]["error_bound"] >= radius  # shown rounded up
    assert radius == pytest.approx(stats.gamma(2, scale=listing.sensitivity / 2).ppf(0.95), rel=0.01)


def test_a_new_centroid_is_refused_off_the_skellam_path_with_the_reason(owner, places, api, client):
    """A centroid is sold on the Skellam path only (tests/marketplace/test_skellam_centroid.py): on the
    lattice path the service, the API (400) and the listing builder (400 on the row) say so."""
    from market.catalog.models import Listing

    centroid = [{"kind": "centroid", "columns": ["east", "north"], "center": [1000, 0], "radius": 3000}]
    with pytest.raises(InvalidInput, match="a centroid is released on the Skellam path"):
        listing_create(owner=owner, dataset_id=places.public_id, title="x", ceiling="1", price_per_epsilon="1",
                       statistics=centroid)
    answer = api(owner).post("/api/v1/listings/", {"dataset": places.public_id, "title": "Centre", "statistics": centroid,
                                                   "ceiling": "1", "price_per_epsilon": "1"}, format="json")
    assert answer.status_code == 400 and "released on the Skellam path" in json.dumps(answer.json(), ensure_ascii=False)
    client.force_login(owner)
    post = {
        "dataset": places.public_id, "title": "Visitors' centre", "ceiling": "3", "price_kind": "linear",
        "price_per_epsilon": "2", "mechanism": "lattice", "stats-TOTAL_FORMS": "1", "stats-INITIAL_FORMS": "0",
        "stats-0-kind": "centroid", "stats-0-points": "east, north", "stats-0-center": "1000, 0",
        "stats-0-radius": "3000",
    }
    page = client.post("/owner/listings/new/", post)
    assert page.status_code == 200 and "released on the Skellam path" in page.content.decode()
    assert not Listing.objects.exists()


@pytest.mark.parametrize(
    "statistics,message",
    [
        ([{"kind": "centroid", "columns": ["east"], "center": [0], "radius": 1}], "2 to 16"),
        ([{"kind": "centroid", "columns": ["east", "north"], "center": [0, 0], "radius": 0}], "radius must be positive"),
        ([{"kind": "centroid", "columns": ["east", "north"], "center": [0], "radius": 1}], "center must list 2"),
        ([{"kind": "centroid", "columns": ["east", "north"], "center": [0, 0], "radius": 1, "min_records": 5}],
         "a new centroid needs none"),
        ([{"kind": "point", "columns": ["east", "north"], "row": 1, "radius": 25}], "point is not offered"),
        ([{"kind": "count"}, {"kind": "centroid", "columns": ["east", "north"], "center": [0, 0], "radius": 1}], "on its own"),
        ([{"kind": "count"}], "the number of records is public \\(400\\)"),
    ],
)
def test_bad_vector_statistics_are_refused(owner, places, statistics, message):
    with pytest.raises(InvalidInput, match=message):
        listing_create(owner=owner, dataset_id=places.public_id, title="x", ceiling="1", price_per_epsilon="1", statistics=statistics)


def test_a_centroid_over_a_private_number_of_records_is_refused(owner):
    hidden = ready_dataset(owner=owner, name="hidden", data=locations_csv(), total_budget="10")
    with pytest.raises(InvalidInput, match="sold only when that number is public"):
        listing_create(owner=owner, dataset_id=hidden.public_id, title="x", ceiling="1", price_per_epsilon="1",
                       statistics=[{"kind": "centroid", "columns": ["east", "north"], "center": [0, 0], "radius": 1}])
