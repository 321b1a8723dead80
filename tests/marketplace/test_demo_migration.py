"""Every release of the demo marketplace reads back identically after the database goes back to
before mechanisms became objects (catalog 0017, releases 0007: ``engine``/``norm`` columns, the
plan in ten columns, kinds as a string) and forward again (issue 30, point 4).

The demo is seeded as ``scripts/run.sh`` seeds it, its buyer buys a level of every listing (the
first rung of the microdata ladder), and everything a buyer or the owner reads of each listing is
compared: releases, figures, sealed answers and noise points (``_figures``), and its kinds.
"""

import pytest
from django.core.management import call_command

from market.accounts.models import User
from market.catalog.models import Listing
from market.trading.services import purchase_create
from releases.models import Release
from tests.marketplace import test_migrations
from tests.marketplace.test_mechanism_migration import BEFORE, _figures


def _level(listing: Listing) -> str:
    levels = listing.statistics[0].get("levels") if listing.release_mechanism.sells_records else None
    return str(levels[0]) if levels else "0.5"


@pytest.mark.django_db(transaction=True)
def test_every_demo_release_reads_back_identically_after_going_back_and_forth(
    fund, eager_celery, django_capture_on_commit_callbacks
):
    call_command("seed_demo")
    buyer = User.objects.get(username="demo-buyer")
    fund(buyer, 10_000)
    listings = list(Listing.objects.order_by("pk"))
    assert len(listings) >= 6
    for listing in listings:
        with django_capture_on_commit_callbacks(execute=True):
            purchase_create(buyer=buyer, listing_id=listing.pk, epsilon=_level(listing))
    assert Release.objects.filter(buyer=buyer).count() == len(listings)
    before = {listing.pk: (_figures(listing), listing.kinds, listing.counted_in_budget) for listing in listings}
    try:
        for app, migration in BEFORE:
            call_command("migrate", app, migration, verbosity=0)
        test_migrations.assert_applied_triggers_installed()
    finally:
        call_command("migrate", verbosity=0)
    test_migrations.test_every_database_trigger_is_installed()
    after = {listing.pk: (_figures(listing), Listing.objects.get(pk=listing.pk).kinds,
                          Listing.objects.get(pk=listing.pk).counted_in_budget) for listing in listings}
    for pk in before:
        assert after[pk] == before[pk], Listing.objects.get(pk=pk).title
