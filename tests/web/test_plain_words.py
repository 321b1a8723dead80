"""No page a buyer, an owner or a visitor sees carries unexplained jargon: no γ, no theorem numbers,
no "k-dimensional", no names of the code base's files. Every page is rendered, as each of them, on
listings of every engine and kind (exact integer noise; the float path; a vector; microdata), after purchases
so that releases, the privacy-loss profiles and the privacy-at-risk figures are all on show. The
API's schema (the text of its documentation page) is held to the same words."""

import html
import re

import pytest
from django.urls import reverse

from market.catalog.services import listing_create, listing_create_microdata
from market.trading.models import Purchase
from market.trading.services import purchase_create
from tests.datasets import ready_dataset
from tests.fixtures.market import STATISTICS, make_csv, old_float_listing
from tests.marketplace.test_float_listings import float_listing  # noqa: F401 - a fixture
from tests.web.test_microdata_pages import SPEC as MICRODATA_SPEC
from tests.web.test_microdata_pages import birds_csv

pytestmark = pytest.mark.django_db

#: what must never reach a page: (pattern, why)
FORBIDDEN = [
    (re.compile(r"γ|\bgamma\b", re.I), "the symbol γ, unexplained"),
    (re.compile(r"\bTheorem\b|\bDefinition \d|\bequation \d", re.I), "a numbered result of a paper"),
    (re.compile(r"-dimensional\b|\bk = \d"), "k-dimensional"),
    (re.compile(r"\b[\w/]+\.py\b"), "a file of the code base"),
    (re.compile(r"\b[\w/]+\.md\b"), "a documentation file"),
    (re.compile(r"\beps-DP\b|\(eps, delta\)"), "eps written in letters (the pages write ε)"),
]


#: the API's schema names its fields as programs read them (``gamma``, ``epsilon``): held to the rest
API_SCHEMA = FORBIDDEN[1:-1]


def offences(text: str, forbidden=FORBIDDEN) -> list[str]:
    found = []
    for pattern, why in forbidden:
        for match in pattern.finditer(text):
            found.append(f"{why}: …{text[max(0, match.start() - 60):match.end() + 60]}…")
    return found


@pytest.fixture
def market(owner, buyer, fund, float_listing, eager_celery, seeded_noise, before_float_retirement,  # noqa: F811
           django_capture_on_commit_callbacks):
    """Listings of every engine and kind, each bought once (so each has a release)."""
    private = ready_dataset(owner=owner, name="visits", data=make_csv(300), total_budget="100",
                            record_name="patient", record_name_plural="patients")
    public = ready_dataset(owner=owner, name="visits (public size)", data=make_csv(300), total_budget="100",
                           relation="public_size")
    listings = [
        listing_create(  # exact integer noise, priced from the paper's compensation model
            owner=owner, dataset_id=private.public_id, title="Lattice mixed", statistics=STATISTICS, ceiling="5",
            price_per_epsilon="10", compensation={"E": "40", "rate": "1", "E_min": "0"},
        ),
        listing_create(  # exact integer noise: a sum on a grid and a histogram, with the size public
            owner=owner, dataset_id=public.public_id, title="Lattice public", ceiling="5", price_per_epsilon="10",
            statistics=[{"kind": "sum", "column": "income", "lower": 0, "upper": 200000, "grid": "0.01"},
                        {"kind": "histogram", "column": "age", "bins": [0, 30, 60, 90]}],
        ),
        old_float_listing(  # an old vector listing: floating-point noise on the whole vector (retired)
            public, [{"kind": "centroid", "columns": ["age", "income"], "center": [50, 40000], "radius": 100}],
            title="Vector centroid", price="10.00",
        ),
        float_listing,  # the float Laplace path of listings made before the exact one
    ]
    birds = ready_dataset(owner=owner, name="birds", data=birds_csv(), total_budget="20", relation="public_size")
    listings.append(listing_create_microdata(  # microdata: every record, each bit randomised (a Bloom filter too)
        owner=owner, dataset_id=birds.public_id, title="Birds by record", microdata_spec=MICRODATA_SPEC,
        price_per_epsilon="2",
    ))
    assert {listing.engine for listing in listings} == {"lattice", "laplace", "bits"}
    fund(buyer, 10_000)
    for listing in listings:
        with django_capture_on_commit_callbacks(execute=True):
            purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="1")
    assert list(Purchase.objects.values_list("status", flat=True)) == ["released"] * len(listings)
    return {"listings": listings, "datasets": [private, public, birds]}


def read(client, address: str) -> str:
    answer = client.get(address)
    assert answer.status_code in (200, 404), (address, answer.status_code)
    return html.unescape(answer.content.decode())


def test_no_page_shows_unexplained_jargon(client, owner, buyer, market):
    listings, datasets = market["listings"], market["datasets"]
    everyone = ["/", reverse("web:how-it-works"), "/no-such-page/"] + [f"/listings/{l.pk}/" for l in listings]
    pages = {("visitor", a): read(client, a) for a in [*everyone, reverse("web:signup"), reverse("login")]}

    client.force_login(buyer)
    purchases = [reverse("web:purchase", args=[p.pk]) for p in Purchase.objects.all()]
    quotes = [f"/listings/{l.pk}/?epsilon=2" for l in listings]
    for address in [*everyone, *quotes, *purchases, reverse("web:library"), reverse("web:account")]:
        pages["buyer", address] = read(client, address)

    client.force_login(owner)
    mine = [reverse("web:owner-listing", args=[l.pk]) for l in listings]
    for d in datasets:
        mine += [reverse("web:owner-dataset-columns", args=[d.public_id]), reverse("web:owner-dataset-budget", args=[d.public_id])]
    for address in [*everyone, *mine, reverse("web:owner"), reverse("web:owner-dataset-new"),
                    reverse("web:owner-listing-new"), reverse("web:owner-listing-new-microdata"),
                    reverse("web:owner-listing-new-microdata") + f"?dataset={datasets[0].public_id}",
                    reverse("web:owner-trust"), reverse("web:account")]:
        pages["owner", address] = read(client, address)

    # the pages show what the words are about: the figures are there, in plain words
    owner_page = pages["owner", mine[0]]
    assert "Privacy at risk and compensation" in owner_page and "Privacy at risk (paper's model)" in owner_page
    assert "treats the" in owner_page and "as one query with a single Laplace noise scale" in owner_page
    assert "What each release guarantees" in pages["owner", mine[2]]
    assert "exactly ε-differentially private, with no exception (δ = 0)" in pages["visitor", f"/listings/{listings[0].pk}/"]
    assert "no δ has been established" in pages["visitor", f"/listings/{listings[3].pk}/"]  # the float path: retired

    microdata = f"/listings/{listings[4].pk}/"
    assert "The levels sold, and what each gives" in pages["visitor", microdata]
    assert "reported correctly (p)" in pages["buyer", f"{microdata}?epsilon=2"]
    bought = reverse("web:purchase", args=[Purchase.objects.get(listing=listings[4]).pk])
    assert "The number of records with each bit set" in pages["buyer", bought]
    assert "The ladder of levels" in pages["owner", mine[4]]
    assert "cannot be sold as randomised records" in pages["owner", reverse("web:owner-listing-new-microdata")
                                                             + f"?dataset={datasets[0].public_id}"]
    found = [f"{who} {address}: {bad}" for (who, address), text in pages.items() for bad in offences(text)]
    found += [f"the API's schema: {bad}" for bad in offences(read(client, "/api/schema/"), API_SCHEMA)]
    assert not found, "\n".join(found)


def test_the_check_catches_each_kind_of_jargon():
    """The scan above can fail: each forbidden kind of text is caught, plain words are not."""
    for text in ("Paper's γ", "gamma = 0.6", "(Theorem 12)", "one 3-dimensional Laplace query", "k = 3 values",
                 "see releases/engine/guarantee.py", "docs/mathematics.md section 8", "exactly eps-DP",
                 "(eps, delta)-DP"):
        assert offences(text), text
    for text in ("Privacy at risk (paper's model)", "exactly ε-differentially private", "plotly.min.js",
                 "± 6 at 95%", "/api/docs/"):
        assert not offences(text), text
