"""Privacy figures shown to people are exactly true (issue: privacy claims).

* Every listing page and the API say whom a release protects, by the dataset's relation.
* The privacy-loss profile of a release (API endpoint, release, owner page) is the
  exact hockey-stick curve of the actual release, computed from public information only.
* The paper's gamma is never presented as the probability that the release is eps-DP,
  and l2 (vector) listings have none.
"""

from tests.datasets import ready_dataset
import math
from decimal import Decimal

from fractions import Fraction
from types import SimpleNamespace

import numpy as np
import pytest

from market.catalog.services import listing_create
from market.catalog.privacy import release_profile
from market.catalog.spec import Lattice
from market.trading.services import purchase_create
from releases.engine.mechanisms import mechanism
from releases.engine.profile import LatticeProfile, loss_profile_lattice

from tests.fixtures.market import make_csv, old_float_listing

pytestmark = pytest.mark.django_db


def _listing(owner, *, relation, statistics, budget="20"):
    dataset = ready_dataset(
        owner=owner, name="visits", data=make_csv(200), relation=relation, total_budget=budget,
        record_name="patient", record_name_plural="patients",
    )
    return listing_create(
        owner=owner, dataset_id=dataset.public_id, title="Ages", statistics=statistics, ceiling="2", price_per_epsilon="5",
    )


def test_the_api_and_the_page_say_whom_a_release_protects(owner, client, api):
    private = _listing(owner, relation="private_size", statistics=[{"kind": "count"}])
    public = _listing(owner, relation="public_size", statistics=[{"kind": "sum", "column": "age", "lower": 0, "upper": 100}])
    shown = api().get(f"/api/v1/listings/{private.pk}/").json()
    assert shown["relation"] == "private_size" and shown["public_size"] is None
    assert shown["protects"] == "Protects any one patient, whether or not they are in the data; the number of patients stays private."
    shown = api().get(f"/api/v1/listings/{public.pk}/").json()
    assert shown["relation"] == "public_size" and shown["public_size"] == 200
    assert shown["protects"] == "Protects any one patient's values; the number of patients (200) is public."
    page = client.get(f"/listings/{public.pk}/").content.decode()
    assert "Protects any one patient&#x27;s values; the number of patients (200) is public." in page
    assert "<dt>Records</dt><dd>200 (public)</dd>" in page
    # a private size is never shown, exactly or rounded, to anyone but the owner
    page = client.get(f"/listings/{private.pk}/").content.decode()
    assert "<dt>Records</dt><dd>private</dd>" in page and ">200<" not in page and "about 200" not in page


def _lattice_delta(coords, eps_prime, n=2_000_000, seed=5):
    """Monte Carlo of E[(1 - e^(eps' - L))_+] for integer noise DLap(e^-lam) on coordinates moved by t
    (a check, not the product): DLap(a) is the difference of two geometric variables of ratio a."""
    rng = np.random.default_rng(seed)
    total = np.zeros(n)
    for t, lam in coords:
        p = -math.expm1(-float(lam))
        y = rng.geometric(p, n) - rng.geometric(p, n)
        total += float(lam) * (np.abs(y - t) - np.abs(y))  # the loss lam (|y - t| - |y|)
    return float(np.mean(np.clip(1 - np.exp(eps_prime - total), 0, None)))


@pytest.mark.parametrize("relation", ["private_size", "public_size"])
def test_the_profile_endpoint_is_the_exact_curve_of_the_listing_under_its_relation(owner, api, relation):
    statistics = [
        {"kind": "sum", "column": "age", "lower": 0, "upper": 100},
        {"kind": "histogram", "column": "age", "bins": [0, 30, 60, 100]},
    ]
    listing = _listing(owner, relation=relation, statistics=statistics)
    assert listing.engine == "lattice"
    body = api().get(f"/api/v1/listings/{listing.pk}/privacy-profile/?epsilon=1").json()
    assert body["level"] == "1.0000" and body["method"].startswith("exact law of the integer noise")
    # Two groups, eps split in halves. The sum moves by s = 100 / grid steps (either relation) and has
    # weight 2 s; the histogram moves one bin by 1 (weight 2), or under a public size two bins (weight 4).
    s = int(100 / Decimal(listing.grids[0]))
    bins = 2 if relation == "private_size" else 4
    assert listing.weights == [2 * s, bins, bins, bins]
    coords = [(s, Fraction(1, 2 * s))] + [(1, Fraction(1, bins))] * (1 if relation == "private_size" else 2)
    want = loss_profile_lattice(coords, [float(p["epsilon"]) for p in body["points"]])
    np.testing.assert_allclose([p["delta"] for p in body["points"]], want, rtol=0, atol=1e-12)
    assert body["summary"]["delta"] == pytest.approx(_lattice_delta(coords, 0.5), abs=2e-3)
    deltas = [p["delta"] for p in body["points"]]
    assert deltas[-1] == 0.0 and all(x >= y for x, y in zip(deltas, deltas[1:]))
    assert "exactly ε-differentially private, with no exception (δ = 0)" in body["guarantee"]
    # default level: the ceiling; above the ceiling: a clear 400
    assert api().get(f"/api/v1/listings/{listing.pk}/privacy-profile/").json()["level"] == "2.0000"
    refused = api().get(f"/api/v1/listings/{listing.pk}/privacy-profile/?epsilon=3")
    assert refused.status_code == 400 and "ceiling" in refused.json()["error"]["message"]


def test_a_float_release_states_no_profile_and_no_false_delta(owner, buyer, fund, api, eager_celery,
                                                               before_float_retirement, django_capture_on_commit_callbacks):
    """An old l2 listing's release (the retired float path): no privacy at risk, and no profile δ(ε′) at
    all. The float chart drew the exact Laplace profile, 0 at ε, which the float release does not
    have; its guarantee said "δ below 2e-11". Fails on the code before (method "quadrature", 0 at ε)."""
    dataset = ready_dataset(owner=owner, name="visits", data=make_csv(200), relation="public_size", total_budget="20")
    listing = old_float_listing(
        dataset, [{"kind": "centroid", "columns": ["age", "income"], "center": [50, 40000], "radius": 100}],
        ceiling="2", price="5.00", title="Ages",
    )
    fund(buyer, 100)
    with django_capture_on_commit_callbacks(execute=True):
        purchase, *_ = purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="1")
    release = api(buyer).get(f"/api/v1/purchases/{purchase.pk}/").json()["release"]
    assert release["privacy_at_risk"] is None
    profile = api(buyer).get(release["privacy_profile"]).json()
    assert profile["method"].startswith("not computed") and "never established" in profile["method"]
    assert all(point["delta"] is None for point in profile["points"]) and profile["summary"]["delta"] is None
    assert "no δ has been established" in profile["guarantee"] and "below" not in profile["guarantee"]


def test_a_float_count_drawn_directly_at_a_measured_level_states_its_enumerated_delta(owner, buyer, fund, api,
        eager_celery, before_float_retirement, django_capture_on_commit_callbacks):
    dataset = ready_dataset(owner=owner, name="visits", data=make_csv(200), total_budget="20")
    listing = old_float_listing(dataset, [{"kind": "count"}], ceiling="10", price="1.00")
    fund(buyer, 100)
    with django_capture_on_commit_callbacks(execute=True):
        purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="8")  # the first draw
    with django_capture_on_commit_callbacks(execute=True):
        purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="10")  # a relax step
    at8 = api(buyer).get(f"/api/v1/listings/{listing.pk}/privacy-profile/?epsilon=8").json()["guarantee"]
    at10 = api(buyer).get(f"/api/v1/listings/{listing.pk}/privacy-profile/?epsilon=10").json()["guarantee"]
    assert "δ at most 7.79e-11" in at8
    assert "no δ has been established" in at10 and "reached from levels already released" in at10


def test_the_paper_gamma_is_not_the_probability_of_eps_dp():
    """For one value at eps0 = 0.5 the paper's gamma at eps = 0.2741 is 0.609, while a worst-case
    neighbour's privacy loss stays within +-0.2741 with probability 0.107: the two must not be confused."""
    from releases.engine.risk import gamma_at_risk

    eps0, eps = 0.5, 0.2741
    assert float(gamma_at_risk(eps, eps0, 1)) == pytest.approx(0.609, abs=1e-3)
    within = 0.5 * (math.exp(-(eps0 - eps) / 2) - math.exp(-(eps0 + eps) / 2))  # the continuous part on (-eps, eps)
    assert within == pytest.approx(0.107, abs=1e-3)


def test_the_owner_page_charts_the_profile_of_every_released_level(owner, buyer, fund, client, eager_celery,
                                                                   django_capture_on_commit_callbacks):
    listing = _listing(owner, relation="private_size", statistics=[{"kind": "count"}])
    fund(buyer, 100)
    for level in ("0.5", "2"):
        with django_capture_on_commit_callbacks(execute=True):
            purchase_create(buyer=buyer, listing_id=listing.pk, epsilon=level)
    client.force_login(owner)
    page = client.get(f"/owner/listings/{listing.pk}/").content.decode()
    assert 'id="profile-chart"><svg' in page and 'id="profile-table"' in page
    table = page[page.index('id="profile-table"'):]
    assert '<td class="num">0.5</td>' in table and '<td class="num">2</td>' in table
    # one count at 2 with integer noise: its loss is +-2, so delta(1) = (1 - e^(1 - 2)) / (1 + e^-2)
    assert f"{-math.expm1(-1) / (1 + math.exp(-2)):.4g}" in page
    assert Decimal("2") == listing.noise_path.__class__.objects.get(listing=listing).released_max


def test_a_busy_path_charts_a_few_profiles_the_spent_level_included(owner, users, fund, client, eager_celery,
                                                                    django_capture_on_commit_callbacks):
    """A path read by thousands of buyers has thousands of levels: the page computes six profiles, not one each."""
    listing = _listing(owner, relation="private_size", statistics=[{"kind": "count"}])
    levels = ["0.2", "0.4", "0.6", "0.8", "1", "1.2", "1.6", "2"]
    for i, level in enumerate(levels):
        who = users(f"b{i}")
        fund(who, 100)
        with django_capture_on_commit_callbacks(execute=True):
            purchase_create(buyer=who, listing_id=listing.pk, epsilon=level)
    client.force_login(owner)
    page = client.get(f"/owner/listings/{listing.pk}/").content.decode()
    table = page[page.index('id="profile-table"'):page.index("</table>", page.index('id="profile-table"'))]
    assert table.count("<tr><td") == 6 and '<td class="num">2</td>' in table and '<td class="num">0.2</td>' in table
    assert "Profiles of 6 of the 8 levels released" in page


def _lattice_plan(weights, cases):
    """A hand-made lattice plan: only what the profile reads (the engine, the weights, the worst cases)."""
    layout = Lattice(grids=(Decimal(1),) * len(weights), unit_weights=weights, unit_lower=(0,) * len(weights),
                     unit_upper=(10**6,) * len(weights), unit_cases=cases)
    return SimpleNamespace(engine="lattice", lattice=layout, labels=tuple(f"v{i}" for i in range(len(weights))),
                           norm="l1", loss_cases=None)


_SOMEONE = SimpleNamespace(release_mechanism=mechanism("lattice"), microdata=None,
                           dataset=SimpleNamespace(protects="Protects any one record."))


def test_a_lattice_profile_is_the_largest_over_the_worst_cases_with_its_error_bound():
    """Two incomparable worst cases, as a grouped sum in [-50, 100] under a public size has (one cell by
    150 steps, or two cells by 100): the profile is their pointwise maximum, the method states the
    summation's error bound, and the guarantee is pure eps-DP."""
    plan = _lattice_plan((3, 300, 300), (((0, 1), (1, 150)), ((0, 1), (1, 100), (2, 100))))
    got = release_profile(_SOMEONE, Decimal("1.5"), plan=plan)
    at = [float(p["epsilon"]) for p in got["points"]]
    one = loss_profile_lattice([(1, Fraction(1, 2)), (150, Fraction(1, 200))], at)
    two = loss_profile_lattice([(1, Fraction(1, 2)), (100, Fraction(1, 200)), (100, Fraction(1, 200))], at)
    assert np.any(one > two) and np.any(two > one)  # neither case dominates
    np.testing.assert_array_equal([p["delta"] for p in got["points"]], np.maximum(one, two))
    bound = max(LatticeProfile([(1, Fraction(1, 2)), (150, Fraction(1, 200))]).error(at),
                LatticeProfile([(1, Fraction(1, 2)), (100, Fraction(1, 200)), (100, Fraction(1, 200))]).error(at))
    stated = float(got["method"].rsplit("below ", 1)[1].rstrip(")"))
    assert bound <= stated < 10 * bound
    assert got["summary"]["epsilon"] == Decimal("0.75") and got["points"][-1]["delta"] == 0.0
    assert "exactly ε-differentially private" in got["guarantee"] and "δ below" not in got["guarantee"]


def test_a_lattice_profile_too_large_to_sum_is_not_computed():
    """Three coordinates on unrelated lattices (weights 1009, 1013, 1019, each moved 1000 steps): no figure."""
    plan = _lattice_plan((1009, 1013, 1019), (((0, 1000), (1, 1000), (2, 1000)),))
    got = release_profile(_SOMEONE, Decimal("2"), plan=plan)
    assert got["method"].startswith("not computed: ")
    assert got["summary"]["delta"] is None and all(p["delta"] is None for p in got["points"])
    assert "exactly ε-differentially private" in got["guarantee"]
