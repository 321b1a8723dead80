"""The security tests reuse the marketplace's fixtures (users, listings, funding, eager Celery)
and add one seeded world in which every actor of the authorization matrix has something of their own."""

from __future__ import annotations

from tests.datasets import ready_dataset
import csv
import io
from dataclasses import dataclass, field

import pytest

from market.accounts.services import api_key_create
from market.catalog import chunks
from market.catalog.services import listing_create, listing_create_microdata
from market.trading.services import purchase_create
from market.webhooks.models import Delivery, Endpoint
from market.webhooks.services import events_record
from releases.models import NoisePoint
from tests.fixtures.market import (  # noqa: F401 - fixtures
    STATISTICS,
    api,
    before_float_retirement,
    buyer,
    eager_celery,
    fund,
    listing,
    make_csv,
    make_listing,
    owner,
    seeded_noise,
    users,
)

PASSWORD = "a-long-password-1"  # what tests.fixtures.market.users gives everyone
#: the six actors of the matrix, in the order of its columns
ACTORS = ("anon", "buyer", "other_buyer", "owner", "other_owner", "staff")
ROWS = 12345  # a count with five digits: distinctive enough to search every page for


@dataclass
class World:
    """One marketplace: the owner's dataset and listing, the buyer's purchase and release
    on it, and the other actors' own things (another owner's listing bought by another buyer)."""

    people: dict  # actor -> User (None for anon)
    dataset: object
    listing: object
    purchase: object
    release: object
    other_dataset: object
    other_listing: object
    other_purchase: object
    csv_bytes: bytes
    rows: list = field(default_factory=list)  # the uploaded CSV's data rows, as the strings uploaded
    endpoint: object = None  # the buyer's webhook endpoint
    delivery: object = None  # a delivery to it of the buyer's purchase.released (not sent)
    md_dataset: object = None  # the owner's dataset of public size (birds' colours), for microdata
    md_release: object = None  # the buyer's release of the owner's microdata listing on it, at level 1
    upload: object = None  # the owner's complete resumable upload (a small CSV in two parts)
    upload_parts: list = field(default_factory=list)  # its parts' bytes, in order

    def user(self, actor):
        return self.people[actor]


def _buy(buyer, listing, eps, capture):
    with capture(execute=True):
        purchase, *_ = purchase_create(buyer=buyer, listing_id=listing.pk, epsilon=eps)
    purchase.refresh_from_db()
    assert purchase.status == "released", purchase.failure_reason
    return purchase


@pytest.fixture
def world(users, fund, eager_celery, seeded_noise, django_capture_on_commit_callbacks):
    people = {
        "anon": None,
        "buyer": users("bob"),
        "other_buyer": users("carol"),
        "owner": users("olivia", owner=True),
        "other_owner": users("oscar", owner=True),
        "staff": users("sam"),
    }
    people["staff"].is_staff = people["staff"].is_superuser = True
    people["staff"].save()
    for actor in ("buyer", "other_buyer", "other_owner", "staff", "owner"):
        fund(people[actor], 500)

    data = make_csv(ROWS)
    dataset = ready_dataset(owner=people["owner"], name="visits", data=data, total_budget="100")
    listing = listing_create(
        owner=people["owner"], dataset_id=dataset.public_id, title="Clinic visits", statistics=STATISTICS,
        # its mean's size release publishes a noisy count of the 12,345 records: a DP release that equals the
        # truth with probability about size_level / 2, so small here that no page shows 12345 by chance
        ceiling="5", size_level="0.0001", price_per_epsilon="10.00",
    )
    other_dataset = ready_dataset(owner=people["other_owner"], name="heights", data=make_csv(120, seed=7), total_budget="100")
    other_listing = listing_create(
        owner=people["other_owner"], dataset_id=other_dataset.public_id, title="Heights", statistics=[{"kind": "count"}],
        ceiling="3", price_per_epsilon="1.00",
    )
    purchase = _buy(people["buyer"], listing, "1", django_capture_on_commit_callbacks)
    other_purchase = _buy(people["other_buyer"], other_listing, "1", django_capture_on_commit_callbacks)
    md_dataset = ready_dataset(owner=people["owner"], name="birds", total_budget="10", relation="public_size",
                               data=("colour\n" + "red\nblue\ngreen\n" * 20).encode())
    md_listing = listing_create_microdata(
        owner=people["owner"], dataset_id=md_dataset.public_id, title="Birds by record", price_per_epsilon="1.00",
        microdata_spec={"columns": [{"column": "colour", "categories": ["red", "blue"], "categories_public": True}],
                        "levels": ["1", "2"]},
    )
    md_purchase = _buy(people["buyer"], md_listing, "1", django_capture_on_commit_callbacks)
    rows = list(csv.reader(io.StringIO(data.decode())))[1:]
    endpoint = Endpoint(owner=people["buyer"], url="http://127.0.0.1:9/hook", events=["purchase.released"])
    endpoint.set_secret("whsec_matrix")
    endpoint.save()
    [delivery_id] = events_record(items=[("purchase.released", str(purchase.pk), people["buyer"].pk)])
    upload = chunks.upload_open(owner=people["owner"], size=len(data), filename="visits.csv")
    halves = [data[: len(data) // 2], data[len(data) // 2:]]
    for start, part in ((0, halves[0]), (len(halves[0]), halves[1])):
        where = chunks.Range(start=start, end=start + len(part) - 1, total=len(data))
        upload = chunks.upload_part(owner=people["owner"], upload_id=upload.public_id, where=where, data=part)
    return World(
        upload=upload, upload_parts=halves,
        people=people, dataset=dataset, listing=listing, purchase=purchase, release=purchase.release,
        other_dataset=other_dataset, other_listing=other_listing, other_purchase=other_purchase,
        csv_bytes=data, rows=rows, endpoint=endpoint, delivery=Delivery.objects.get(pk=delivery_id),
        md_dataset=md_dataset, md_release=md_purchase.release,
    )


@pytest.fixture
def tokens(world):
    return {actor: (api_key_create(user=user, name="matrix")[1] if user else None) for actor, user in world.people.items()}


def noise_vectors(listing) -> list[list]:
    """Each stored point's noise: integers on the lattice path, floats on the float path."""
    points = NoisePoint.objects.filter(path__listing=listing).order_by("level")
    codec = listing.release_mechanism.noise
    return [[v.item() for v in point.noise_of(codec)] for point in points]


def noise_values(listing) -> list[float]:
    return [v for vector in noise_vectors(listing) for v in vector]
