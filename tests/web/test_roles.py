"""Roles from the account page: a buyer becomes an owner and the reverse; dropping a role is safe.

The rules (``market.accounts.services.user_role_drop``, ``market.catalog.roles``): an account
keeps at least one role; an owner keeps the role while any of their listings is open; what an
account made under a role stays (an owner's datasets and closed listings, a buyer's releases).
"""

import html

import pytest
from django.urls import reverse

from market.accounts.models import User
from market.accounts.services import user_role_add, user_role_drop
from market.catalog.services import listing_close, listing_create, listing_reopen
from market.core.errors import Conflict, Forbidden
from market.trading.services import purchase_create
from tests.datasets import ready_dataset
from tests.fixtures.market import make_csv

pytestmark = pytest.mark.django_db

ACCOUNT = reverse("web:account")
DROP = reverse("web:account-role-drop")
ADD = reverse("web:account-role-add")


def page_text(response) -> str:
    return html.unescape(response.content.decode())


def fresh(user) -> User:
    return User.objects.get(pk=user.pk)


def test_a_buyer_becomes_an_owner_then_stops_being_a_buyer(client, buyer):
    client.force_login(buyer)
    assert "Stop being" not in page_text(client.get(ACCOUNT))  # their only role
    client.post(ADD, {"role": "owner"})
    assert fresh(buyer).is_owner and fresh(buyer).is_buyer
    page = page_text(client.get(ACCOUNT))
    assert "Stop being a buyer" in page and "Stop being an owner" in page
    answer = client.post(DROP, {"role": "buyer"}, follow=True)
    assert "You are no longer a buyer" in page_text(answer)
    assert fresh(buyer).is_owner and not fresh(buyer).is_buyer
    # now an owner only: the owner pages open, buying is refused
    assert client.get(reverse("web:owner")).status_code == 200


def test_the_only_role_is_kept(client, buyer):
    client.force_login(buyer)
    answer = client.post(DROP, {"role": "buyer"}, follow=True)
    assert "You are still a buyer: the buyer role is this account's only role" in page_text(answer)
    assert fresh(buyer).is_buyer
    with pytest.raises(Conflict) as refused:
        user_role_drop(user=buyer, role="buyer")
    assert refused.value.code == "last_role"


def test_an_owner_with_open_listings_keeps_the_role_until_they_are_closed(client, owner, listing):
    user_role_add(user=owner, role="buyer")
    client.force_login(owner)
    answer = client.post(DROP, {"role": "owner"}, follow=True)
    assert "You are still an owner: you have 1 open listing: close it first" in page_text(answer)
    assert fresh(owner).is_owner
    listing_close(owner=owner, listing_id=listing.pk)
    answer = client.post(DROP, {"role": "owner"}, follow=True)
    assert "You are no longer an owner; your datasets, closed listings and earnings stay" in page_text(answer)
    user = fresh(owner)
    assert not user.is_owner and user.is_buyer
    assert user.datasets.count() == 1  # kept, for when the role comes back
    assert client.get(reverse("web:owner")).status_code == 403
    with pytest.raises(Forbidden):
        listing_reopen(owner=user, listing_id=listing.pk)
    user_role_add(user=user, role="owner")
    assert listing_reopen(owner=user, listing_id=listing.pk).is_open


def test_a_listing_cannot_open_on_an_account_that_stopped_being_an_owner(owner):
    """The role is read again under the dataset's lock: a request that began while the account was
    still an owner (its user object says so) cannot open a listing once the drop has committed."""
    dataset = ready_dataset(owner=owner, name="visits", data=make_csv(100), total_budget="5")
    user_role_add(user=owner, role="buyer")
    stale = fresh(owner)
    user_role_drop(user=owner, role="owner")
    assert stale.is_owner
    with pytest.raises(Forbidden):
        listing_create(owner=stale, dataset_id=dataset.public_id, title="Late", statistics=[{"kind": "count"}],
                       ceiling="1", price_per_epsilon="1")


def test_a_buyer_who_stops_keeps_their_releases(client, users, listing, fund, eager_celery,
                                                django_capture_on_commit_callbacks):
    carol = users("carol")
    fund(carol, 50)
    with django_capture_on_commit_callbacks(execute=True):
        purchase_create(buyer=carol, listing_id=listing.pk, epsilon="1")
    user_role_add(user=carol, role="owner")
    user_role_drop(user=carol, role="buyer")
    client.force_login(carol)
    library = client.get(reverse("web:library"))
    assert library.status_code == 200 and "Clinic visits" in page_text(library)
    with pytest.raises(Forbidden):
        purchase_create(buyer=fresh(carol), listing_id=listing.pk, epsilon="2")


def test_dropping_a_role_not_held_or_unknown(client, buyer):
    assert user_role_drop(user=buyer, role="owner").is_buyer  # nothing to drop: nothing changes
    client.force_login(buyer)
    answer = client.post(DROP, {"role": "admin"}, follow=True)
    assert "Choose buyer or owner." in page_text(answer) and fresh(buyer).is_buyer
    assert client.get(DROP).status_code == 405
