"""The move to one versioned plan document per listing (``catalog.0020``) changes no stored value,
both ways.

Listings of every mechanism (tests.marketplace.test_mechanism_migration) each release a level; then
the database goes back to before the document (the ``labels, weights, lower, upper, grids,
sensitivity`` columns come back, and ``plan`` the layout alone) and forward again. The columns hold
exactly what the document held (the same floats, the same decimal strings), and every release and
listing figure reads back identically.
"""

import json

import pytest
from django.core.management import call_command
from django.db import connection

from market.catalog.models import Listing
from market.trading.services import purchase_create
from releases.models import Release
from tests.marketplace import test_migrations
from tests.marketplace.test_mechanism_migration import _figures, _listings

BEFORE = ("catalog", "0019_dataset_version")
COLUMNS = ("labels", "weights", "lower", "upper", "grids", "plan")


def _load(value):
    return json.loads(value) if isinstance(value, str) else value


def _old_columns() -> dict:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id, sensitivity, {', '.join(COLUMNS)} FROM catalog_listing")
        return {row[0]: {"sensitivity": row[1], **{name: _load(v) for name, v in zip(COLUMNS, row[2:])}}
                for row in cursor.fetchall()}


@pytest.mark.django_db(transaction=True)
def test_every_plan_figure_and_release_reads_back_identically_after_going_back_and_forth(
    owner, make_listing, users, fund, eager_celery, monkeypatch, django_capture_on_commit_callbacks
):
    import market.trading.services
    import releases.services

    listings = _listings(owner, make_listing)
    levels = {"lattice": "1", "laplace": "1", "laplace_l2": "1", "bits": "2"}
    buyer = users("buyer")
    fund(buyer, 1000)
    with monkeypatch.context() as before_retirement:  # the float listings released before their retirement
        before_retirement.setattr(releases.services, "_levels_check", lambda *args: None)
        before_retirement.setattr(market.trading.services, "level_refusal", lambda **kwargs: None)
        for name, listing in listings.items():
            with django_capture_on_commit_callbacks(execute=True):
                purchase_create(buyer=buyer, listing_id=listing.pk, epsilon=levels[name])
    documents = {listing.pk: Listing.objects.get(pk=listing.pk).plan for listing in listings.values()}
    assert all(document["version"] == Listing.PLAN_VERSION for document in documents.values())
    assert ("grids" in documents[listings["lattice"].pk]) and "grids" not in documents[listings["bits"].pk]
    assert "layout" not in documents[listings["bits"].pk] and "layout" in documents[listings["lattice"].pk]
    before = {name: _figures(listing) for name, listing in listings.items()}
    assert all(figures["releases"] for figures in before.values())
    try:
        call_command("migrate", *BEFORE, verbosity=0)
        old = _old_columns()
        for pk, document in documents.items():
            expected = {name: document[name] for name in ("labels", "weights", "lower", "upper", "sensitivity")}
            expected.update(grids=document.get("grids"), plan=document.get("layout"))
            assert old[pk] == expected, pk
            assert [type(v) for v in old[pk]["weights"]] == [type(v) for v in document["weights"]], pk
        test_migrations.assert_applied_triggers_installed()  # SQLite's too, going back (the triggers of what is still applied)
    finally:
        call_command("migrate", verbosity=0)
    test_migrations.test_every_database_trigger_is_installed()
    assert {listing.pk: Listing.objects.get(pk=listing.pk).plan for listing in listings.values()} == documents
    after = {name: _figures(listing) for name, listing in listings.items()}
    for name in listings:
        assert after[name] == before[name], name
    assert Release.objects.filter(listing__in=[listing.pk for listing in listings.values()]).count() == len(listings)
