"""The buyer's answers written without DRF's per-instance field copies (``market.api.serializers.fast``)
are the answers DRF itself writes, field for field, for every mechanism and kind of the demo.

Each answer is written twice, with the fast path and with ``FastOutput.enabled = False`` (DRF's own
bound fields, nested serializers included), and the two JSON texts must be equal: purchases
released, queued and failed, their releases and readings (counts, histograms, means with their
notes, l2 vectors, microdata with its decoded bits), privacy at risk, quotes by level and by target.
"""

import json
from decimal import Decimal

import pytest
from django.core.management import call_command
from rest_framework.renderers import JSONRenderer

from market.accounts.models import User
from market.api.serializers.fast import FastOutput
from market.api.serializers.readings import PurchaseSerializer, QuoteSerializer, ReleaseSerializer
from market.catalog.models import Listing
from market.trading.models import Purchase
from market.trading.selectors import purchase_get
from market.trading.services import purchase_create, purchase_quote


def _both(serializer_class, instance) -> tuple[str, str]:
    fast = JSONRenderer().render(serializer_class(instance).data)
    FastOutput.enabled = False
    try:
        drf = JSONRenderer().render(serializer_class(instance).data)
    finally:
        FastOutput.enabled = True
    return fast.decode(), drf.decode()


def _level(listing: Listing) -> str:
    levels = listing.statistics[0].get("levels") if listing.release_mechanism.sells_records else None
    return str(levels[0]) if levels else "0.5"


@pytest.mark.django_db(transaction=True)
def test_every_answer_a_buyer_reads_is_written_as_drf_writes_it(fund, eager_celery, django_capture_on_commit_callbacks):
    call_command("seed_demo")
    buyer = User.objects.get(username="demo-buyer")
    fund(buyer, 10_000)
    listings = list(Listing.objects.order_by("pk"))
    assert len(listings) >= 6
    answers = 0
    for listing in listings:
        quote = purchase_quote(buyer=buyer, listing=listing, epsilon=_level(listing))
        fast, drf = _both(QuoteSerializer, quote)
        assert fast == drf, listing.title
        assert json.loads(fast)["statistics"], listing.title  # something of substance was compared
        with django_capture_on_commit_callbacks(execute=True):
            made = purchase_create(buyer=buyer, listing_id=listing.pk, epsilon=_level(listing)).purchase
        purchase = purchase_get(user=buyer, purchase_id=made.pk)
        assert purchase.status == "released"
        for cls, instance in ((PurchaseSerializer, purchase), (ReleaseSerializer, purchase.release)):
            fast, drf = _both(cls, instance)
            assert fast == drf, (listing.title, cls.__name__)
            answers += 1
        readings = json.loads(fast)["values"]
        assert readings and all("note" in r for r in readings)  # the default of a missing note is written
    assert answers == 2 * len(listings)

    # a quote by target (its echo of the targets), a purchase in flight and one that failed (no release)
    listing = next(l for l in listings if not l.release_mechanism.sells_records)
    newcomer = User.objects.create_user("newcomer", password=None, is_buyer=True)
    quote = purchase_quote(buyer=newcomer, listing=listing, target=[(None, Decimal("1000"))])
    fast, drf = _both(QuoteSerializer, quote)
    assert fast == drf and json.loads(fast)["target"] == [{"name": None, "error_bound": "1000"}]
    made = Purchase.objects.filter(buyer=buyer, listing=listing).first()
    for status, reason in (("queued", ""), ("failed", "the release could not be computed")):
        Purchase.objects.filter(pk=made.pk).update(status=status, failure_reason=reason)
        fast, drf = _both(PurchaseSerializer, purchase_get(user=buyer, purchase_id=made.pk))
        assert fast == drf and json.loads(fast)["release"] is None and json.loads(fast)["status"] == status
