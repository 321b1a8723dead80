from decimal import Decimal

import pytest
from django.core.management import call_command

from market.catalog.models import Dataset, Listing
from market.ledger.selectors import ledger_is_balanced, wallet_balance

pytestmark = pytest.mark.django_db


def test_seed_demo_is_complete_and_idempotent():
    call_command("seed_demo")
    call_command("seed_demo")
    from django.contrib.auth import get_user_model

    User = get_user_model()
    buyer = User.objects.get(username="demo-buyer")
    assert buyer.check_password("demo-buyer-pass")
    assert User.objects.get(username="demo-owner").is_owner
    assert User.objects.get(username="demo-admin").is_staff
    assert Listing.objects.count() == 4
    # one dataset keeps its size private, one publishes it: both relations are on show
    assert sorted(Dataset.objects.values_list("relation", flat=True)) == ["private_size", "private_size", "public_size"]
    assert set(Dataset.objects.values_list("status", flat=True)) == {"ready"}  # penguins too, as shipped
    assert wallet_balance(user=buyer) == Decimal("500.00")
    assert ledger_is_balanced()
