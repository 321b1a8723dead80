"""The move to one ``mechanism`` per listing and per noise path (``catalog.0018``, ``releases.0008``)
changes no stored value, both ways.

Listings of every mechanism are made (an exact lattice listing and a microdata listing through the
services, two old float listings, one per value and one vector, as the product stored them before
the float path was retired), each releases a level; then the database goes back to before the
migrations (the old ``engine`` and ``norm`` columns come back, with the values they held) and forward
again. Every release, every listing's figures (its accuracy before purchase, its privacy-loss
profile, its words, each release's readings, its sealed answer and noise) read back identically, and
a next release of a level already released gives the same values as the first.
"""

from decimal import Decimal

import numpy as np
import pytest
from django.core.management import call_command
from django.db import connection

from market.catalog.models import Listing
from market.catalog.privacy import release_profile
from market.catalog.selectors import listing_plan
from market.catalog.services import listing_create_microdata
from market.trading.selectors import release_microdata, release_readings
from market.trading.services import listing_accuracy, purchase_create
from releases.models import NoisePath, NoisePoint, Release
from tests.datasets import ready_dataset
from tests.fixtures.market import STATISTICS, make_csv, old_float_listing
from tests.marketplace import test_migrations
from tests.marketplace.test_microdata import SPEC, penguins_csv
from tests.marketplace.test_vector import locations_csv

#: Before the mechanisms: the last migration of each app that still has the old columns.
BEFORE = [("catalog", "0017_listing_size_release"), ("releases", "0007_bit_reports")]


def _listings(owner, make_listing):
    lattice = make_listing()
    visits = ready_dataset(owner=owner, name="old visits", data=make_csv(300), total_budget="100")
    floats = old_float_listing(visits, STATISTICS, title="Clinic visits (float path)")
    places = ready_dataset(owner=owner, name="places", data=locations_csv(), relation="public_size",
                           total_budget="1000")
    vector = old_float_listing(
        places, [{"kind": "centroid", "columns": ["east", "north"], "center": [1000, -300], "radius": 50.0}],
        ceiling="2", price="1", title="Centre of the places")
    penguins = ready_dataset(owner=owner, name="penguins", data=penguins_csv(500)[0], total_budget="20",
                             relation="public_size")
    records = listing_create_microdata(owner=owner, dataset_id=penguins.public_id, title="Penguins by record",
                                       microdata_spec=SPEC, price_per_epsilon="2.00", shuffle=np.random.default_rng(7))
    return {"lattice": lattice, "laplace": floats, "laplace_l2": vector, "bits": records}


def _figures(listing: Listing) -> dict:
    """Everything a buyer or the owner reads of ``listing``, and what it stores sealed."""
    listing = Listing.objects.get(pk=listing.pk)
    levels = sorted(set(Release.objects.filter(listing=listing).values_list("level", flat=True)))
    mechanism = listing.release_mechanism
    sealed = (listing.truth_bits().tolist() if mechanism.sells_records else listing.true_answer().tolist())
    shape = (int(listing.upper[0]), len(listing.labels)) if mechanism.sells_records else None
    points = [(p.level, p.method, p.noise_of(mechanism.noise, shape).tolist())
              for p in NoisePoint.objects.filter(path__listing=listing)]
    return {
        "mechanism": listing.mechanism,
        "engine": listing.engine,
        "words": mechanism.words(),
        "guarantee": mechanism.guarantee(len(listing.labels)),
        "answer": sealed,
        "points": points,
        "accuracy": [listing_accuracy(listing, level) for level in levels],
        "profiles": [release_profile(listing, level, plan=listing_plan(listing)) for level in levels],
        "releases": [(r.buyer_id, r.level, r.values, r.noise_scales, r.privacy_at_risk, r.point_id,
                      release_readings(r), release_microdata(r))
                     for r in Release.objects.filter(listing=listing).order_by("pk")],
    }


def _old_columns() -> dict:
    with connection.cursor() as cursor:
        cursor.execute("SELECT l.id, l.engine, p.engine, p.norm FROM catalog_listing l "
                       "JOIN releases_noisepath p ON p.listing_id = l.id")
        return {row[0]: row[1:] for row in cursor.fetchall()}


@pytest.mark.django_db(transaction=True)
def test_every_release_and_figure_reads_back_identically_after_going_back_and_forth(
    owner, make_listing, users, fund, eager_celery, monkeypatch, django_capture_on_commit_callbacks
):
    import market.trading.services
    import releases.services

    listings = _listings(owner, make_listing)
    levels = {"lattice": "1", "laplace": "1", "laplace_l2": "1", "bits": "2"}
    first = users("first")
    fund(first, 1000)
    with monkeypatch.context() as before_retirement:  # the float listings released before their retirement
        before_retirement.setattr(releases.services, "_levels_check", lambda *args: None)
        before_retirement.setattr(market.trading.services, "level_refusal", lambda **kwargs: None)
        for name, listing in listings.items():
            with django_capture_on_commit_callbacks(execute=True):
                purchase_create(buyer=first, listing_id=listing.pk, epsilon=levels[name])
    assert {name: listing.mechanism for name, listing in listings.items()} == {name: name for name in listings}
    assert NoisePath.objects.get(listing=listings["laplace_l2"]).mechanism == "laplace_l2"
    before = {name: _figures(listing) for name, listing in listings.items()}
    assert all(figures["releases"] for figures in before.values())
    try:
        for app, migration in BEFORE:
            call_command("migrate", app, migration, verbosity=0)
        # the old columns are back, each with what it held before
        assert _old_columns() == {
            listings["lattice"].pk: ("lattice", "lattice", "l1"), listings["laplace"].pk: ("laplace", "laplace", "l1"),
            listings["laplace_l2"].pk: ("laplace", "laplace", "l2"), listings["bits"].pk: ("bits", "bits", "l1"),
        }
        test_migrations.assert_applied_triggers_installed()  # SQLite's too, going back (the triggers of what is still applied)
    finally:
        call_command("migrate", verbosity=0)
    test_migrations.test_every_database_trigger_is_installed()
    after = {name: _figures(listing) for name, listing in listings.items()}
    for name in listings:
        assert after[name] == before[name], name
    # a next release of a level already released gives the same values as the first
    second = users("second")
    fund(second, 1000)
    for name, listing in listings.items():
        with django_capture_on_commit_callbacks(execute=True):
            purchase_create(buyer=second, listing_id=listing.pk, epsilon=levels[name])
        made = Release.objects.get(listing=listing, buyer=second)
        again = Release.objects.get(listing=listing, buyer=first)
        assert (made.level, made.values, made.noise_scales, made.point_id) == (
            again.level, again.values, again.noise_scales, again.point_id), name
        assert made.level == Decimal(levels[name])
