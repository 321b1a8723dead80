from decimal import Decimal

import pytest
from django.core.management import call_command

from market.ledger.selectors import ledger_is_balanced, wallet_balance

pytestmark = pytest.mark.django_db


def test_staff_top_up_a_wallet_from_the_admin(client, users, buyer):
    staff = users("staff")
    staff.is_staff = staff.is_superuser = True
    staff.save()
    client.force_login(staff)
    answer = client.post("/admin/ledger/transfer/add/", {"user": buyer.pk, "amount": "75.50", "memo": "", "reference": "inv-1"})
    assert answer.status_code == 302, answer.content[:2000]
    assert wallet_balance(user=buyer) == Decimal("75.50")
    # the same payment reference funds once
    client.post("/admin/ledger/transfer/add/", {"user": buyer.pk, "amount": "75.50", "memo": "", "reference": "inv-1"})
    assert wallet_balance(user=buyer) == Decimal("75.50")
    assert ledger_is_balanced()
    # nobody edits the ledger in place
    from market.ledger.models import Transfer

    page = client.get(f"/admin/ledger/transfer/{Transfer.objects.get(reference='inv-1').pk}/change/")
    assert page.status_code == 200 and b'name="memo"' not in page.content


def test_listing_admin_hides_data_and_answers(client, users, listing):
    staff = users("staff2")
    staff.is_staff = staff.is_superuser = True
    staff.save()
    client.force_login(staff)
    page = client.get(f"/admin/catalog/listing/{listing.pk}/change/")
    assert page.status_code == 200
    assert b"answer" not in page.content.lower().replace(b"answers", b"")
    page = client.get(f"/admin/catalog/dataset/{listing.dataset.pk}/change/")
    assert page.status_code == 200 and b'name="data"' not in page.content


def test_no_model_change_lacks_a_migration():
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)
