"""The move of a listing's kinds from the string ``",count,mean,"`` to rows (``ListingKind``) and of
"counted in the budget" to a column (``catalog.0021``) changes nothing a user sees, both ways.

Listings of several kinds, microdata and a withdrawn point listing are made; the database goes back
to before the table (the string comes back, built from the rows) and forward again. The strings are
exactly those the product wrote, the rows and the counted flags come back as they were, the catalogue
finds the same listings by kind, and the budget's triggers still leave the point listing out.
"""

import pytest
from decimal import Decimal
from django.contrib.auth.models import AnonymousUser
from django.core.management import call_command
from django.db import connection, transaction

from market.catalog.models import Listing, ListingKind
from market.catalog.selectors import listing_search
from tests.marketplace import test_migrations
from tests.marketplace.test_mechanism_migration import _listings

BEFORE = ("catalog", "0020_listing_plan_document")


def _strings() -> dict:
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, kinds FROM catalog_listing")
        return dict(cursor.fetchall())


def _state(listings) -> dict:
    return {pk: (Listing.objects.get(pk=pk).kinds, Listing.objects.get(pk=pk).counted_in_budget) for pk in listings}


@pytest.mark.django_db(transaction=True)
def test_kinds_and_budget_flags_read_back_identically_after_going_back_and_forth(owner, make_listing, users):
    made = _listings(owner, make_listing)
    several = make_listing(statistics=[{"kind": "count"}, {"kind": "mean", "column": "age", "lower": 0, "upper": 100}])
    point = make_listing()
    ListingKind.objects.filter(listing=point).delete()
    point.kinds_record(["point"])
    Listing.objects.filter(pk=point.pk).update(counted_in_budget=False)
    listings = [listing.pk for listing in made.values()] + [several.pk, point.pk]
    before = _state(listings)
    assert before[several.pk] == (("count", "mean"), True) and before[point.pk] == (("point",), False)
    assert before[made["bits"].pk] == (("microdata",), True)
    found = {kind: set(listing_search(user=AnonymousUser(), kind=kind).values_list("pk", flat=True)) for kind in ("mean", "count")}
    assert several.pk in found["mean"] and several.pk in found["count"] and point.pk not in found["count"]
    try:
        call_command("migrate", *BEFORE, verbosity=0)
        strings = _strings()
        assert strings[several.pk] == ",count,mean," and strings[point.pk] == ",point,"
        assert strings[made["bits"].pk] == ",microdata,"
        test_migrations.assert_applied_triggers_installed()
    finally:
        call_command("migrate", verbosity=0)
    test_migrations.test_every_database_trigger_is_installed()
    assert _state(listings) == before
    assert {kind: set(listing_search(user=AnonymousUser(), kind=kind).values_list("pk", flat=True)) for kind in found} == found
    # the point listing is still left out of the budget: raising its ceiling far past the budget is allowed,
    # and counting it again is refused by the database
    Listing.objects.filter(pk=point.pk).update(ceiling=Decimal("9999"))
    with pytest.raises(Exception, match="budget"):
        with transaction.atomic():
            Listing.objects.filter(pk=point.pk).update(counted_in_budget=True)
