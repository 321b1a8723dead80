"""Bit-report microdata in the marketplace: made from a public-size dataset, bought at successive
ladder levels, released once per level, decoded, downloaded (API), and refused where it must be."""

import csv
import io
from decimal import Decimal

import numpy as np
import pyarrow.parquet as pq
import pytest

from market.catalog.microdata import Microdata
from market.catalog.models import Listing
from market.catalog.services import listing_create_microdata
from market.core.errors import InvalidInput
from market.trading.services import purchase_create, purchase_quote
from releases.models import BitReport, NoisePoint, Release
from tests.datasets import ready_dataset

ISLANDS = ["Biscoe", "Dream", "Torgersen"]


def penguins_csv(rows: int, seed: int = 3) -> tuple[bytes, dict]:
    rng = np.random.default_rng(seed)
    island = rng.choice(ISLANDS + ["Anvers"], size=rows, p=[0.5, 0.3, 0.15, 0.05])
    sex = rng.choice(["female", "male", ""], size=rows, p=[0.48, 0.48, 0.04])
    lines = ["island,sex,mass"] + [f"{i},{s},{m}" for i, s, m in zip(island, sex, rng.integers(3000, 6000, rows))]
    counts = {f"island = {name}": int((island == name).sum()) for name in ISLANDS}
    counts["island = other"] = int((island == "Anvers").sum())
    counts["sex = female"] = int((sex == "female").sum())
    counts["sex = male"] = int((sex == "male").sum())
    return ("\n".join(lines) + "\n").encode(), counts


SPEC = {"columns": [{"column": "island", "categories": ISLANDS, "categories_public": True},
                     {"column": "sex", "categories": ["female", "male"], "categories_public": True}],
        "levels": ["1", "2", "4"]}


@pytest.fixture
def public_dataset(owner):
    def make(rows=2000, relation="public_size"):
        data, counts = penguins_csv(rows)
        dataset = ready_dataset(owner=owner, name="penguins", data=data, total_budget="20", relation=relation)
        return dataset, counts

    return make


@pytest.fixture
def microdata_listing(owner, public_dataset):
    dataset, counts = public_dataset()
    listing = listing_create_microdata(owner=owner, dataset_id=dataset.public_id, title="Penguins by record",
                                       microdata_spec=SPEC, price_per_epsilon="2.00", shuffle=np.random.default_rng(7))
    return listing, counts


def test_a_microdata_listing_stores_its_spec_ladder_and_sealed_bits(microdata_listing):
    listing, counts = microdata_listing
    assert listing.engine == Listing.Engine.BITS and listing.kinds == ("microdata",) and listing.counted_in_budget
    md = listing.microdata()
    assert isinstance(md, Microdata)
    assert md.levels == (Decimal("1"), Decimal("2"), Decimal("4")) and listing.ceiling == Decimal("4")
    # island: 3 declared + other; sex: 2 declared + other (the empty cells are missing, excluded)
    assert md.labels == ("island = Biscoe", "island = Dream", "island = Torgersen", "island = other",
                         "sex = female", "sex = male", "sex = other")
    assert md.weight == 4  # two one-hot columns, two bits each
    truth = listing.truth_bits()
    assert truth.shape == (2000, 7)
    sums = dict(zip(md.labels, truth.sum(axis=0).tolist()))
    for label, count in counts.items():
        assert sums[label] == count
    assert truth[:, :4].sum(axis=1).max() == 1  # one-hot
    assert b"Biscoe" not in bytes(listing.answer)  # sealed


def test_microdata_needs_a_public_size(owner, public_dataset):
    dataset, _ = public_dataset(relation="private_size")
    with pytest.raises(InvalidInput) as caught:
        listing_create_microdata(owner=owner, dataset_id=dataset.public_id, title="t", microdata_spec=SPEC,
                                 price_per_epsilon="1")
    assert "public" in caught.value.message and "microdata" in caught.value.fields
    assert not Listing.objects.exists()


def test_the_ladder_counts_in_the_budget_and_bad_specs_say_why(owner, public_dataset):
    dataset, _ = public_dataset()
    for spec, words in [
        ({**SPEC, "levels": ["1", "40"]}, "this ceiling can be at most 20"),
        ({**SPEC, "columns": [{"column": "mass"}]}, "categorical or boolean"),
        ({**SPEC, "columns": [{"column": "island", "bloom": {"bits": 16, "hashes": 9}}]}, "hashes"),
        ({**SPEC, "levels": ["0.001"]}, "at least 0.001 per bit"),
        ({**SPEC, "extra": 1}, "unknown field"),
    ]:
        with pytest.raises(InvalidInput) as caught:
            listing_create_microdata(owner=owner, dataset_id=dataset.public_id, title="t", microdata_spec=spec,
                                     price_per_epsilon="1")
        assert words in caught.value.message, (spec, caught.value.message)
    assert not Listing.objects.exists()


def test_buying_up_the_ladder_gives_less_randomised_bits_of_the_same_records(
    microdata_listing, users, fund, eager_celery, django_capture_on_commit_callbacks, api
):
    listing, counts = microdata_listing
    first, second = users("ann"), users("ben")
    for who in (first, second):
        fund(who, 1000)
    with pytest.raises(InvalidInput, match="sells the levels 1, 2, 4"):
        purchase_quote(buyer=first, listing=listing, epsilon="1.5")
    quote = purchase_quote(buyer=first, listing=listing, epsilon="2")
    assert quote.price == Decimal("4.00")
    with django_capture_on_commit_callbacks(execute=True):
        purchase_create(buyer=first, listing_id=listing.pk, epsilon="2")
    # sampled from the top down: the ceiling's point and the level bought, one report (level 2)
    assert sorted(NoisePoint.objects.filter(path__listing=listing).values_list("level", flat=True)) == [Decimal(2), Decimal(4)]
    assert BitReport.objects.count() == 1
    with django_capture_on_commit_callbacks(execute=True):
        purchase_create(buyer=second, listing_id=listing.pk, epsilon="2")
    with django_capture_on_commit_callbacks(execute=True):
        purchase_create(buyer=first, listing_id=listing.pk, epsilon="4")
    with pytest.raises(InvalidInput, match="already hold level 2"):
        purchase_create(buyer=second, listing_id=listing.pk, epsilon="1")
    assert BitReport.objects.count() == 2  # level 2 once for both buyers, then 4

    r2a, r2b = (Release.objects.get(buyer=who, level=2) for who in (first, second))
    r4 = Release.objects.get(buyer=first, level=4)
    files = {}
    for release, who in ((r2a, first), (r2b, second), (r4, first)):
        body = api(who).get(f"/api/v1/releases/{release.public_id}/records.csv")
        assert body.status_code == 200 and body["Content-Type"] == "text/csv"
        rows = list(csv.reader(io.StringIO(b"".join(body.streaming_content).decode())))
        assert rows[0] == ["record", *listing.labels]
        files[release.pk] = np.array([[int(x) for x in row[1:]] for row in rows[1:]])
        assert files[release.pk].shape == (2000, 7)
    assert np.array_equal(files[r2a.pk], files[r2b.pk])  # the same level twice: the same bits
    truth = listing.truth_bits().astype(int)
    wrong2, wrong4 = (np.mean(files[r.pk] != truth) for r in (r2a, r4))
    assert wrong4 < wrong2  # less randomised at the higher level, record for record
    p4, q4 = listing.microdata().rates(Decimal(4))
    assert abs(wrong4 - q4) < 0.02  # a bit is wrong with probability q = 1 - p
    # one path per record and bit: the level-2 bits are the level-4 bits plus independent noise, so they
    # agree far more often than two independent randomisations would (p2 p4 + q2 q4 = 0.56 here);
    # 14,000 bits, so the margin of 0.06 is over ten standard errors
    p2, q2 = listing.microdata().rates(Decimal(2))
    agree = np.mean(files[r2a.pk] == files[r4.pk])
    assert agree > p2 * p4 + q2 * q4 + 0.06, agree

    parquet = api(first).get(f"/api/v1/releases/{r4.public_id}/records.parquet")
    assert parquet.status_code == 200
    table = pq.read_table(io.BytesIO(parquet.content))
    assert table.column_names == ["record", *listing.labels]
    assert np.array_equal(np.column_stack([table.column(j).to_numpy() for j in range(1, 8)]), files[r4.pk])
    # another buyer's release, or a release's records in another format, is 404
    assert api(second).get(f"/api/v1/releases/{r4.public_id}/records.csv").status_code == 404
    assert api(first).get(f"/api/v1/releases/{r4.public_id}/records.json").status_code == 404

    shown = api(first).get(f"/api/v1/releases/{r4.public_id}/").json()
    decoded = {d["label"]: d for d in shown["microdata"]["decoded"]}
    assert shown["microdata"]["records"] == 2000 and shown["microdata"]["records_csv"].endswith("records.csv")
    for label, count in counts.items():
        d = decoded[label]
        assert d["low"] <= count <= d["high"] or abs(d["estimate"] - count) < 4 * d["error_bound"] / 1.96
        assert d["reported"] == int(files[r4.pk][:, listing.labels.index(label)].sum())
    detail = api(first).get(f"/api/v1/listings/{listing.pk}/").json()
    assert [x["level"] for x in detail["microdata"]["levels"]] == ["1.0000", "2.0000", "4.0000"]
    assert detail["microdata"]["records"] == 2000


def test_the_api_creates_microdata_listings_with_strict_input(owner, public_dataset, api):
    dataset, _ = public_dataset()
    client = api(owner)
    body = {"dataset": dataset.public_id, "title": "Penguins", "microdata": SPEC, "price_per_epsilon": "1.00"}
    made = client.post("/api/v1/listings/microdata/", body, format="json")
    assert made.status_code == 201, made.json()
    assert made.json()["engine"] == "bits" and made.json()["microdata"]["bits"] == 7
    bad = client.post("/api/v1/listings/microdata/", {**body, "microdata": {**SPEC, "levels": "1"}}, format="json")
    assert bad.status_code == 400 and "microdata" in bad.json()["error"]["fields"]
    assert Listing.objects.count() == 1


def test_key_rotation_moves_the_bits_noise_and_reports_and_they_stay_append_only(
    settings, owner, public_dataset, buyer, fund, eager_celery, django_capture_on_commit_callbacks
):
    from django.core.management import call_command
    from django.db import DatabaseError, IntegrityError, transaction

    from market.core import crypto
    from tests.security.test_encryption_at_rest import NEW, OLD

    settings.GRADUAL_ENCRYPTION_KEYS = OLD
    dataset, _ = public_dataset()
    listing = listing_create_microdata(owner=owner, dataset_id=dataset.public_id, title="Penguins by record",
                                       microdata_spec=SPEC, price_per_epsilon="2.00")
    fund(buyer, 100)
    with django_capture_on_commit_callbacks(execute=True):
        purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="1")
    release = Release.objects.get(buyer=buyer)
    report = BitReport.objects.get()
    before = report.reports((2000, 7))
    settings.GRADUAL_ENCRYPTION_KEYS = f"{NEW},{OLD}"
    call_command("rotate_encryption_keys", stdout=io.StringIO())
    settings.GRADUAL_ENCRYPTION_KEYS = NEW
    report = BitReport.objects.get()
    assert crypto.key_id_of(bytes(report.bits)) == "new"
    assert np.array_equal(report.reports((2000, 7)), before)
    assert all(crypto.key_id_of(bytes(p.noise)) == "new" for p in NoisePoint.objects.all())
    assert release.listing.truth_bits().shape == (2000, 7)
    with pytest.raises((DatabaseError, IntegrityError), match="append-only"):
        with transaction.atomic():
            BitReport.objects.filter(pk=report.pk).update(ones=[0] * 7)


def test_buying_by_accuracy_rounds_up_to_the_ladder(microdata_listing, buyer, api):
    listing, _ = microdata_listing
    md = listing.microdata()
    # a target between the bounds at levels 1 and 2 needs level 2: the cheapest ladder level meeting it
    target = (md.bound(Decimal(1)) + md.bound(Decimal(2))) / 2
    quote = purchase_quote(buyer=buyer, listing=listing, target=[(None, Decimal(f"{target:.4f}"))])
    assert quote.epsilon == Decimal(2)
    assert quote.statistics[0]["name"] == "each decoded count"
    assert quote.statistics[0]["error_bound"] == pytest.approx(md.bound(Decimal(2)))
    shown = api(buyer).get(f"/api/v1/listings/{listing.pk}/quote/", {"target": f"{md.bound(Decimal(4)) * 0.99:.4f}"})
    assert shown.status_code == 400 and "not reachable" in shown.json()["error"]["message"]


def test_the_privacy_profile_is_the_exact_binomial_loss_and_zero_at_the_level(microdata_listing, api):
    listing, _ = microdata_listing
    md = listing.microdata()
    shown = api().get(f"/api/v1/listings/{listing.pk}/privacy-profile/", {"epsilon": "2"}).json()
    assert shown["points"][-1]["delta"] == 0.0
    # at eps' = 0: delta = E[(1 - e^{-L})+], L = lam (2B - w), B ~ Binomial(w, p): computed here by hand
    lam, (p, q), w = 2 / md.weight, md.rates(Decimal(2)), md.weight
    from math import comb, exp

    by_hand = sum(comb(w, b) * p**b * q ** (w - b) * (1 - exp(-lam * (2 * b - w))) for b in range(w + 1) if 2 * b > w)
    assert shown["points"][0]["delta"] == pytest.approx(by_hand, rel=1e-12)
    assert "exactly ε-differentially private for that record" in shown["guarantee"]


def test_a_released_microdata_listing_counts_in_the_composition_what_if_without_privacy_at_risk(
    microdata_listing, owner, buyer, fund, eager_celery, django_capture_on_commit_callbacks
):
    from market.catalog.whatif import dataset_composition

    listing, _ = microdata_listing
    fund(buyer, 100)
    with django_capture_on_commit_callbacks(execute=True):
        purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="2")
    figures = dataset_composition(user=owner, dataset_id=listing.dataset.public_id, delta="1e-6", eps="0.5")
    (row,) = figures["listings"]
    assert figures["basic"] == Decimal(2) and figures["credited"] == 0
    assert "randomised records" in row["excluded"]


def test_the_per_bit_level_is_shown_exactly(microdata_listing, api):
    listing, _ = microdata_listing
    shown = api().get(f"/api/v1/listings/{listing.pk}/").json()["microdata"]["levels"]
    assert [x["bit_level"] for x in shown] == ["1/4", "1/2", "1"]  # eps / 4, as fractions: never rounded
