"""Owners change their datasets' budgets themselves, on the page and in the API: never below
what the listings' ceilings need, each change recorded with who and why."""

from decimal import Decimal

import pytest

from market.catalog.models import DatasetBudgetChange

pytestmark = pytest.mark.django_db


def test_the_owner_raises_a_budget_in_the_api_and_cannot_drop_it_below_the_ceilings(make_listing, owner, api, users):
    listing = make_listing(ceiling="5", budget="6")
    dataset = listing.dataset
    client = api(owner)
    url = f"/api/v1/datasets/{dataset.public_id}/budget/"
    too_low = client.post(url, {"budget": "4", "reason": "tighter"}, format="json")
    assert too_low.status_code == 400 and "ceilings adding up to 5" in too_low.json()["error"]["message"]
    assert client.post(url, {"budget": "9"}, format="json").status_code == 400  # a reason is required
    raised = client.post(url, {"budget": "10", "reason": "a second listing on the same patients"}, format="json")
    assert raised.status_code == 200
    assert raised.json()["budget"] == "10.0000" and raised.json()["ceilings_total"] == "5.0000"
    change = DatasetBudgetChange.objects.get()
    assert (change.old, change.new, change.actor, change.reason) == (
        Decimal("6"), Decimal("10"), owner, "a second listing on the same patients",
    )
    # someone else's dataset does not exist for you
    stranger = users("sam", owner=True)
    assert api(stranger).post(url, {"budget": "20", "reason": "x"}, format="json").status_code == 404
    assert DatasetBudgetChange.objects.count() == 1


def test_the_owner_changes_a_budget_on_the_page_and_sees_its_history(make_listing, owner, client):
    listing = make_listing(ceiling="5", budget="6")
    dataset = listing.dataset
    client.force_login(owner)
    url = f"/owner/datasets/{dataset.public_id}/budget/"
    page = client.get(url).content.decode()
    assert 'id="ceilings">ε 5<' in page and "No change yet" in page
    refused = client.post(url, {"total_budget": "3", "reason": "less"})
    assert refused.status_code == 200 and "At least 5" in refused.content.decode()
    assert client.post(url, {"total_budget": "10", "reason": "room for more"}).status_code == 302
    dataset.refresh_from_db()
    assert dataset.total_budget == Decimal("10")
    page = client.get(url).content.decode()
    # levels read as people write them: 10, not 1E+1
    assert "room for more" in page and "ε 6" in page and "ε 10<" in page and "1E+1" not in page
    dashboard = client.get("/owner/").content.decode()
    assert f"/owner/datasets/{dataset.public_id}/budget/" in dashboard
