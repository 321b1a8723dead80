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
    assert Listing.objects.count() == 6  # no centroid: vector statistics wait for the integer Gaussian-like path
    assert not Listing.objects.filter(mechanism__in=["laplace", "laplace_l2"]).exists()
    # two datasets keep their size private, two publish it: both relations are on show
    assert sorted(Dataset.objects.values_list("relation", flat=True)) == ["private_size", "private_size",
                                                                          "public_size", "public_size"]
    # one microdata listing: the penguins record by record, on a ladder of levels
    records = Listing.objects.get(mechanism="bits")
    assert records.microdata().records == 344 and [str(x.normalize()) for x in records.microdata().levels] == ["1", "2", "4", "8"]
    assert records.labels[:3] == ["species = Adelie", "species = Chinstrap", "species = Gentoo"]
    assert set(Dataset.objects.values_list("status", flat=True)) == {"ready"}  # penguins too, as shipped
    assert wallet_balance(user=buyer) == Decimal("500.00")
    assert ledger_is_balanced()



@pytest.mark.parametrize("title, words, labels", [
    ("Penguins by species and island", "Count of records, by species (Adelie, Chinstrap, Gentoo, and other)", [
        "count | species = Adelie", "mean(body_mass_g) | island = Biscoe", "sum(flipper_length_mm) | sex = female",
        "count | species = Gentoo, island = Biscoe", "bill_length_mm in [55, 60] | species in (Adelie, Gentoo)"]),
    ("Clinic patients by district, sex and smoking", "where age &gt;= 40, by sex (female, male, and other)", [
        "count | district = Old Town", "mean(systolic_bp) | smoker = true",
        "mean(cholesterol) | age >= 40, sex = female", "count | district = East End, sex = male",
        "first_visit in 2024"]),
])
def test_a_buyer_buys_the_demos_grouped_listings(title, words, labels, api, client, eager_celery, seeded_noise,
                                                  django_capture_on_commit_callbacks):
    """The demo's listings over the clinic and penguins tables, with group-by, filters and tables,
    are bought by the demo buyer and read cell by cell (the penguins' readings are compared with
    pandas in tests/marketplace/test_real_tables.py)."""
    from django.contrib.auth import get_user_model

    call_command("seed_demo")
    buyer = api(get_user_model().objects.get(username="demo-buyer"))
    listing = Listing.objects.get(title=title)
    with django_capture_on_commit_callbacks(execute=True):
        answer = buyer.post("/api/v1/purchases/", {"listing": listing.pk, "epsilon": "1"}, format="json")
    assert answer.status_code == 202, answer.content
    body = buyer.get(f"/api/v1/purchases/{answer.json()['id']}/").json()
    assert body["status"] == "released", body
    shown = {v["label"]: v for v in body["release"]["values"]}
    for label in labels:
        assert label in shown, sorted(shown)
        assert shown[label]["error_bound"] > 0
    # the pages show it: the catalogue's page to anyone, in words; the owner's page to the owner
    public = client.get(f"/listings/{listing.pk}/")
    assert public.status_code == 200 and words in public.content.decode()
    client.force_login(get_user_model().objects.get(username="demo-owner"))
    page = client.get(f"/owner/listings/{listing.pk}/")
    assert page.status_code == 200 and title in page.content.decode()


def test_demo_penguins_are_the_packages_table_byte_for_byte():
    """The demo ships its own copy of palmerpenguins' table (the run command installs neither that package
    nor pandas); the copy is the package's file unchanged."""
    from pathlib import Path

    import palmerpenguins

    from market.web.management.commands.seed_demo import PENGUINS_CSV

    shipped = (Path(palmerpenguins.__file__).parent / "data" / "penguins.csv").read_bytes()
    assert PENGUINS_CSV.read_bytes() == shipped
