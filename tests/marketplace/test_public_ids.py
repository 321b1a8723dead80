"""Datasets, releases and ledger transfers are named by opaque ids in URLs and answers
("ds_", "rel_", "tr_" + 22 random base62 characters): not integers, unrelated from one
object to the next, and the old integer ids name nothing."""

import os
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import connection

from market.catalog.models import Dataset
from market.ledger.models import Transfer
from releases.models import Release

from tests.fixtures.market import STATISTICS, make_csv
from . import test_migrations

ID = {"ds": re.compile(r"^ds_[0-9A-Za-z]{22}$"), "rel": re.compile(r"^rel_[0-9A-Za-z]{22}$"), "tr": re.compile(r"^tr_[0-9A-Za-z]{22}$")}


def assert_opaque(kind: str, ids: list) -> None:
    """Well formed, all different, and unrelated: no two share more than a few leading characters."""
    assert len(ids) >= 2 and len(set(ids)) == len(ids), ids
    for value in ids:
        assert isinstance(value, str) and ID[kind].match(value), value
    for a in ids:
        for b in ids:
            if a != b:
                assert len(os.path.commonprefix([a, b])) < len(kind) + 1 + 5, (a, b)


def _buy(api, buyer, listing, eps, capture):
    with capture(execute=True):
        answer = api(buyer).post("/api/v1/purchases/", {"listing": listing.pk, "epsilon": eps}, format="json")
    assert answer.status_code == 202, answer.content
    return answer.json()


def test_dataset_ids_are_opaque_and_listings_are_created_by_them(api, owner, users):
    client = api(owner)
    made = []
    for name in ("first", "second", "third"):
        upload = SimpleUploadedFile("d.csv", make_csv(30), content_type="text/csv")
        answer = client.post("/api/v1/datasets/", {"name": name, "file": upload, "total_budget": "100"}, format="multipart")
        assert answer.status_code == 202
        made.append(answer.json()["id"])
    assert_opaque("ds", made)
    assert {d["id"] for d in client.get("/api/v1/datasets/").json()["results"]} == set(made)
    spec = {"title": "t", "statistics": STATISTICS[:1], "ceiling": "1", "price_per_epsilon": "1.00"}
    dataset = Dataset.objects.get(public_id=made[0])
    by_old_id = client.post("/api/v1/listings/", {**spec, "dataset": dataset.pk}, format="json")
    assert by_old_id.status_code == 400 and "dataset" in by_old_id.json()["error"]["fields"]  # not even text
    by_old_text = client.post("/api/v1/listings/", {**spec, "dataset": str(dataset.pk)}, format="json")
    assert by_old_text.status_code == 404
    assert client.post("/api/v1/listings/", {**spec, "dataset": made[0]}, format="json").status_code == 201
    # another owner naming it by its public id: no such dataset
    rival = api(users("rival", owner=True)).post("/api/v1/listings/", {**spec, "dataset": made[1]}, format="json")
    assert rival.status_code == 404 and dataset.listings.count() == 1


def test_release_and_transfer_ids_are_opaque(api, listing, buyer, users, fund, eager_celery, django_capture_on_commit_callbacks):
    fund(buyer, 100)
    steps = [_buy(api, buyer, listing, eps, django_capture_on_commit_callbacks) for eps in ("0.5", "1", "2")]
    client = api(buyer)
    listed = [r["id"] for r in client.get("/api/v1/releases/").json()["results"]]
    assert_opaque("rel", listed)
    # the purchase's answer names its release by the same id
    nested = client.get(f"/api/v1/purchases/{steps[0]['id']}/").json()["release"]["id"]
    assert nested in listed
    transfers = [leg["transfer"] for leg in client.get("/api/v1/wallet/statement/").json()["results"]]
    assert_opaque("tr", transfers)
    assert len(transfers) == 4  # the top-up and three purchases

    release = Release.objects.get(public_id=nested)
    assert client.get(f"/api/v1/releases/{release.public_id}/").json()["id"] == release.public_id
    # the old integer id names nothing, and another buyer's release is not there
    assert client.get(f"/api/v1/releases/{release.pk}/").status_code == 404
    assert api(users("eve")).get(f"/api/v1/releases/{release.public_id}/").status_code == 404
    assert str(release.pk) not in {str(t) for t in transfers} | set(listed)


def test_pages_name_releases_and_datasets_by_their_public_ids(
    client, owner, listing, buyer, users, fund, eager_celery, django_capture_on_commit_callbacks
):
    fund(buyer, 100)
    client.force_login(buyer)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"/listings/{listing.pk}/buy/", {"epsilon": "1"})
    release = Release.objects.get()
    library = client.get("/library/").content.decode()
    assert f"/library/releases/{release.public_id}.csv" in library
    assert f"/library/releases/{release.pk}.csv" not in library
    download = client.get(f"/library/releases/{release.public_id}.json")
    assert download.status_code == 200
    assert re.search(rf'filename="{release.public_id}-listing-{listing.pk}-eps-1\.json"', download["Content-Disposition"])
    assert client.get(f"/library/releases/{release.pk}.json").status_code == 404
    client.force_login(users("eve"))
    assert client.get(f"/library/releases/{release.public_id}.json").status_code == 404

    client.force_login(owner)
    dataset = listing.dataset
    dashboard = client.get("/owner/").content.decode()
    assert f"?dataset={dataset.public_id}" in dashboard and f"?dataset={dataset.pk}\"" not in dashboard
    assert client.get(f"/owner/listings/new/?dataset={dataset.public_id}").status_code == 200
    assert client.get(f"/owner/listings/new/?dataset={dataset.pk}").status_code == 404


@pytest.mark.slow  # tens of seconds even at the quick size: --all and CI run it (docs/testing.md)
@pytest.mark.django_db(transaction=True)
def test_the_migration_gives_existing_rows_public_ids_and_keeps_the_triggers(
    owner, listing, buyer, fund, eager_celery, django_capture_on_commit_callbacks
):
    from market.trading.services import purchase_create

    fund(buyer, 100)
    with django_capture_on_commit_callbacks(execute=True):
        purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="1")
    before = {Release: Release.objects.count(), Transfer: Transfer.objects.count(), Dataset: Dataset.objects.count()}
    assert all(before.values())
    try:
        # back to before the public ids (the columns go), then forward with the rows there
        call_command("migrate", "releases", "0002_l2_paths", verbosity=0)
        call_command("migrate", "ledger", "0001_initial", verbosity=0)
        call_command("migrate", "catalog", "0004_listing_trust_capped", verbosity=0)
        with connection.cursor() as cursor:
            columns = {c.name for c in connection.introspection.get_table_description(cursor, "releases_release")}
        assert "public_id" not in columns
        test_migrations.assert_applied_triggers_installed()  # going back reinstalls SQLite's too (those still applied)
    finally:
        call_command("migrate", verbosity=0)
    for model, kind in ((Release, "rel"), (Transfer, "tr"), (Dataset, "ds")):
        ids = list(model.objects.values_list("public_id", flat=True))
        assert len(ids) == before[model]
        if len(ids) >= 2:
            assert_opaque(kind, ids)
        else:
            assert ID[kind].match(ids[0])
    test_migrations.test_every_database_trigger_is_installed()
    # the append-only guards are back in force after the fill
    from django.db import DatabaseError, transaction

    with pytest.raises(DatabaseError), transaction.atomic():
        Release.objects.update(public_id="rel_" + "0" * 22)
    with pytest.raises(DatabaseError), transaction.atomic():
        Transfer.objects.update(memo="edited")
