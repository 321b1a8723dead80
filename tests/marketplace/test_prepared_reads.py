"""The reads every purchase makes, as SQL written once (``market.core.reads``, used by
``market.core.visibility``), give what Django's querysets give: the same rows, field for field and
type for type, the same related rows already in hand (writing the answer runs no query), the same
JSON, and nothing of another buyer's (on PostgreSQL they run as that SQL; elsewhere as those
querysets). Checked on every kind of listing of the demo, released, queued and failed."""

import json

import pytest
from django.core.management import call_command
from rest_framework.renderers import JSONRenderer

from market.accounts.models import User
from market.api.serializers.readings import PurchaseSerializer
from market.catalog.models import Listing
from market.core import visibility
from market.trading.models import Holding, Purchase
from market.trading.services import purchase_create
from releases.models import Release

pytestmark = pytest.mark.django_db(transaction=True)


def _fields(instance) -> dict:
    loaded = instance.get_deferred_fields()
    return {f.attname: (getattr(instance, f.attname), type(getattr(instance, f.attname)))
            for f in type(instance)._meta.concrete_fields if f.attname not in loaded}


def _level(listing: Listing) -> str:
    levels = listing.statistics[0].get("levels") if listing.release_mechanism.sells_records else None
    return str(levels[0]) if levels else "0.5"


def test_the_prepared_reads_give_what_the_querysets_give(fund, eager_celery, django_capture_on_commit_callbacks,
                                                         django_assert_num_queries):
    call_command("seed_demo")
    buyer = User.objects.get(username="demo-buyer")
    other = User.objects.create_user("other-buyer", password=None, is_buyer=True)
    fund(buyer, 10_000)
    listings = list(Listing.objects.order_by("pk"))
    for listing in listings:
        found = visibility.open_listing(listing.pk)
        assert _fields(found) == _fields(Listing.objects.defer("answer").get(pk=listing.pk))
        assert found.get_deferred_fields() == {"answer"}
        dataset = listing.dataset
        with django_assert_num_queries(0):
            assert _fields(found.dataset) == {k: v for k, v in _fields(dataset).items()
                                              if k not in visibility.DATASET_TEXTS}
        with django_capture_on_commit_callbacks(execute=True):
            made = purchase_create(buyer=buyer, listing_id=listing.pk, epsilon=_level(listing)).purchase
        purchase = visibility.purchase_with_release(buyer, made.pk)
        assert _fields(purchase) == _fields(Purchase.objects.get(pk=made.pk))
        assert _fields(purchase.release) == _fields(Release.objects.get(purchase=made))
        assert _fields(purchase.release.listing) == _fields(Listing.objects.defer("answer").get(pk=listing.pk))
        with django_assert_num_queries(0):  # everything the answer reads is in hand
            written = JSONRenderer().render(PurchaseSerializer(purchase).data)
        orm = Purchase.objects.select_related("release__listing").get(pk=made.pk)
        assert written == JSONRenderer().render(PurchaseSerializer(orm).data), listing.title
        assert json.loads(written)["release"]["values"]
        assert _fields(visibility.holding(buyer, listing.pk)) == _fields(Holding.objects.get(buyer=buyer, listing=listing))
        assert visibility.holding(other, listing.pk) is None and visibility.holding(None, listing.pk) is None
        assert visibility.purchase_with_release(other, made.pk) is None  # another buyer's: nothing
        assert visibility.purchase_with_release(None, made.pk) is None

    # before its release and after its failure: no release, and writing it reads nothing more
    listing = listings[0]
    made = Purchase.objects.filter(buyer=buyer, listing=listing).first()
    for status in ("queued", "failed"):
        Purchase.objects.filter(pk=made.pk).update(status=status)
        purchase = visibility.purchase_with_release(buyer, made.pk)
        with django_assert_num_queries(0):
            assert json.loads(JSONRenderer().render(PurchaseSerializer(purchase).data))["release"] is None

    # a closed listing is not an open one
    Listing.objects.filter(pk=listing.pk).update(is_open=False)
    assert visibility.open_listing(listing.pk) is None
