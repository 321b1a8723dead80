"""The row locks every purchase takes, written as SQL once per process (``market.core.locks.LockedRows``), read
the same rows as Django's own queries, field for field and type for type (on PostgreSQL they run as
that SQL; elsewhere as the queryset they replace), and a missing row is None."""

from decimal import Decimal

import pytest
from django.db import transaction

from market.ledger.locks import account_lock_with_peer
from market.ledger.models import Account
from market.ledger.services import account_get
from market.trading.locks import holding_lock
from market.trading.models import Holding
from market.trading.services import purchase_create

pytestmark = pytest.mark.django_db(transaction=True)


def _fields(instance) -> dict:
    return {f.attname: (getattr(instance, f.attname), type(getattr(instance, f.attname)))
            for f in type(instance)._meta.concrete_fields}


@pytest.fixture
def bought(make_listing, buyer, fund, eager_celery, django_capture_on_commit_callbacks):
    """A listing on which ``buyer`` bought level 1 (released)."""
    listing = make_listing()
    fund(buyer, 1000)
    with django_capture_on_commit_callbacks(execute=True):
        purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="1")
    return listing


def test_a_holding_and_a_wallet_with_its_peer_read_as_django_reads_them(bought, buyer, owner):
    listing = bought
    with transaction.atomic():
        held = holding_lock(buyer_id=buyer.pk, listing_id=listing.pk)
        assert _fields(held) == _fields(Holding.objects.get(buyer=buyer, listing=listing))
        assert held.purchased == Decimal("1") and held.released == Decimal("1")
        assert holding_lock(buyer_id=owner.pk, listing_id=listing.pk, create=True).purchased == 0
    with pytest.raises(Holding.DoesNotExist):
        with transaction.atomic():
            holding_lock(buyer_id=buyer.pk, listing_id=listing.pk + 1000)

    earnings = Account.objects.get(kind=Account.Kind.EARNINGS, user=owner, listing=listing)
    with transaction.atomic():
        wallet = account_lock_with_peer(debit=(buyer.pk, Account.Kind.WALLET, None),
                                        credit=(owner.pk, Account.Kind.EARNINGS, listing.pk))
    assert _fields(wallet) == _fields(Account.objects.get(user=buyer, kind=Account.Kind.WALLET, listing=None))
    assert wallet.credit_id == earnings.pk and wallet.balance < 1000
    # the other way round: the peer's listing is NULL (IS NOT DISTINCT FROM), the locked one's is not
    account_get(user_id=buyer.pk, kind=Account.Kind.WALLET, listing_id=None)
    with transaction.atomic():
        found = account_lock_with_peer(debit=(owner.pk, Account.Kind.EARNINGS, listing.pk),
                                       credit=(buyer.pk, Account.Kind.WALLET, None))
    assert found.pk == earnings.pk and found.credit_id == wallet.pk
    with transaction.atomic():
        assert account_lock_with_peer(debit=(owner.pk, Account.Kind.WALLET, listing.pk),
                                      credit=(buyer.pk, Account.Kind.WALLET, None)) is None


def test_a_path_is_locked_with_its_listing_and_dataset_as_django_reads_them(bought, django_assert_num_queries):
    from releases.locks import path_lock
    from releases.models import NoisePath

    from market.catalog.models import Listing

    listing = bought
    with transaction.atomic():
        with django_assert_num_queries(1):
            path = path_lock(listing_id=listing.pk)
            listed, dataset = path.listing, path.listing.dataset
    assert _fields(path) == _fields(NoisePath.objects.get(listing=listing))
    assert _fields(listed) == _fields(Listing.objects.get(pk=listing.pk))
    assert _fields(dataset) == _fields(listing.dataset)
    with pytest.raises(NoisePath.DoesNotExist):
        with transaction.atomic():
            path_lock(listing_id=listing.pk + 1000)


def test_an_open_listing_is_share_locked_with_its_owner_as_django_reads_it(make_listing, owner, django_assert_num_queries):
    from market.catalog.locks import listing_share_lock
    from market.catalog.models import Listing
    from market.catalog.services import listing_close

    listing = make_listing()
    with transaction.atomic():
        with django_assert_num_queries(1):
            found = listing_share_lock(listing_id=listing.pk)
            assert found.dataset_owner_id == owner.pk
    assert found.get_deferred_fields() == {"answer"}
    assert _fields(found) == _fields(Listing.objects.defer("answer").get(pk=listing.pk))
    listing_close(owner=owner, listing_id=listing.pk)
    with transaction.atomic():
        assert listing_share_lock(listing_id=listing.pk) is None  # closed: no open listing of that id
