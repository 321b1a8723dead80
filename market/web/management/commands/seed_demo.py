"""Demo data: an owner, a buyer, staff, listings over a generated clinic dataset (with categories and
missing values), the Palmer penguins table as shipped by ``palmerpenguins``, and credits.

Datasets go through the same service as any upload (``dataset_create``), then are processed at once
(``dataset_process``, the task's body) so that listings can be made in the same run.

Idempotent: running it again changes nothing that exists.
"""

from decimal import Decimal
from pathlib import Path

import numpy as np
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from market.catalog.models import Dataset
from market.catalog.services import dataset_create, dataset_process, listing_create, listing_create_microdata
from market.ledger.models import Transfer
from market.ledger.payments import provider

DEMO_USERS = {
    # username: (password, owner, buyer, staff)
    "demo-owner": ("demo-owner-pass", True, False, False),
    "demo-buyer": ("demo-buyer-pass", False, True, False),
    "demo-admin": ("demo-admin-pass", False, False, True),
}
DATASET = "City clinic visits, 2025"
SURVEY = "Household travel survey (published sample)"


PENGUINS = "Palmer penguins (as published)"
PENGUIN_RECORDS = "Palmer penguins, one row each (public size)"
DISTRICTS = ["North", "Harbour", "Old Town", "Hillside", "East End"]
# the categories the demo owner declares public (the species and islands the study names)
PENGUIN_SPECIES = ["Adelie", "Chinstrap", "Gentoo"]
PENGUIN_ISLANDS = ["Biscoe", "Dream", "Torgersen"]
#: palmerpenguins' penguins.csv, byte for byte (CC0-1.0; Horst, Hill and Gorman)
PENGUINS_CSV = Path(__file__).resolve().parents[2] / "demo_data" / "penguins.csv"
# the owner's confirmation that a declared list of categories is public (buyers see it)
PUBLIC = {"categories_public": True}


def clinic_csv(rows: int = 2000) -> bytes:
    """A plausible table: age, sex, district, smoker, first visit, systolic blood pressure, visits per year,
    household income, and a cholesterol reading that about one patient in eight has not had (empty or "NA")."""
    rng = np.random.default_rng()  # demo data: fresh each time, no secret
    age = np.clip(rng.normal(46, 18, rows), 0, 99).round()
    pressure = np.clip(95 + 0.55 * age + rng.normal(0, 14, rows), 80, 220).round()
    visits = rng.poisson(1.5 + age / 25)
    income = np.clip(rng.lognormal(10.6, 0.55, rows), 5_000, 400_000).round(-2)
    sex = rng.choice(["female", "male"], rows)
    district = rng.choice(DISTRICTS, rows, p=[0.3, 0.2, 0.2, 0.2, 0.1])
    smoker = rng.choice(["yes", "no"], rows, p=[0.2, 0.8])
    first = np.datetime64("2015-01-01") + rng.integers(0, 3650, rows)
    cholesterol = np.clip(rng.normal(5.2, 1.0, rows), 2.5, 9.5).round(1)
    unmeasured = rng.random(rows) < 0.125
    lines = ["age,sex,district,smoker,first_visit,systolic_bp,visits,income,cholesterol"]
    lines += [
        f"{int(a)},{s},{d},{k},{f},{int(p)},{int(v)},{int(i)},{('NA' if j % 2 else '') if u else c}"
        for j, (a, s, d, k, f, p, v, i, c, u) in enumerate(
            zip(age, sex, district, smoker, first, pressure, visits, income, cholesterol, unmeasured)
        )
    ]
    return ("\n".join(lines) + "\n").encode()


def _ready(dataset):
    """Process the upload now (the task's body), so its listings can be made in this run."""
    dataset = dataset_process(dataset_id=dataset.pk)
    if dataset.status != "ready":
        raise RuntimeError(f"the demo dataset {dataset.name!r} failed: {dataset.failure}")
    return dataset


def _penguins(owner, name: str, relation: str, budget: str, description: str):
    """The Palmer penguins table as shipped by ``palmerpenguins``, uploaded and processed. A copy of its
    ``penguins.csv`` (CC0) is kept in ``market/web/demo_data``, so the demo needs neither that package nor
    pandas (tests/marketplace/test_seed_demo.py checks the copy is byte for byte the package's)."""
    with open(PENGUINS_CSV, "rb") as f:
        return _ready(dataset_create(
            owner=owner, name=name, description=description,
            source="palmerpenguins (Horst, Hill and Gorman), data from Palmer Station LTER", licence="CC0-1.0",
            upload=f, total_budget=budget, relation=relation, record_name="penguin", record_name_plural="penguins",
        ))


def survey_csv(rows: int = 400) -> bytes:
    """Homes around a town hall (metres east and north) and a weekly commute in km."""
    rng = np.random.default_rng()  # demo data: fresh each time, no secret
    east, north = rng.normal(300, 1200, rows).round(), rng.normal(-200, 900, rows).round()
    commute = np.clip(rng.gamma(2.0, 30.0, rows), 0, 400).round(1)
    lines = ["east,north,commute_km"] + [f"{int(e)},{int(n)},{c}" for e, n, c in zip(east, north, commute)]
    return ("\n".join(lines) + "\n").encode()


class Command(BaseCommand):
    help = "Create demo users, a dataset, listings and credits (idempotent)."

    @transaction.atomic
    def handle(self, *args, **options):
        User = get_user_model()
        users = {}
        for name, (password, is_owner, is_buyer, is_staff) in DEMO_USERS.items():
            user, created = User.objects.get_or_create(
                username=name,
                defaults={"is_owner": is_owner, "is_buyer": is_buyer, "is_staff": is_staff, "is_superuser": is_staff},
            )
            if created:
                user.set_password(password)
                user.save()
            users[name] = user
        owner, buyer = users["demo-owner"], users["demo-buyer"]
        if not Dataset.objects.filter(owner=owner, name=DATASET).exists():
            dataset = dataset_create(
                owner=owner,
                name=DATASET,
                description="2,000 patients of a city clinic: age, sex, district, smoking, first visit, blood pressure, "
                "visits, income and cholesterol (not measured for every patient).",
                source="generated for the demo",
                upload=clinic_csv(),
                total_budget="10",
                relation="private_size",
                record_name="patient",
                record_name_plural="patients",
            )
            dataset = _ready(dataset)
            listing_create(
                owner=owner,
                dataset_id=dataset.public_id,
                title="Clinic patients: how many, how old, how often they visit",
                description="Patient count, mean age, total visits and an age histogram.",
                statistics=[
                    {"kind": "count"},
                    {"kind": "mean", "column": "age", "lower": 0, "upper": 100},
                    {"kind": "sum", "column": "visits", "lower": 0, "upper": 20},
                    {"kind": "histogram", "column": "age", "bins": [0, 18, 30, 45, 65, 80, 100]},
                ],
                ceiling="5",
                price_per_epsilon="20.00",
                # the number of patients is private: the compensation is stated for all of them together
                compensation={"E": "80000", "rate": "1", "E_min": "0"},
            )
            listing_create(
                owner=owner,
                dataset_id=dataset.public_id,
                title="Clinic patients: household income and blood pressure",
                description="Mean household income and mean systolic blood pressure.",
                statistics=[
                    {"kind": "mean", "column": "income", "lower": 0, "upper": 200000},
                    {"kind": "mean", "column": "systolic_bp", "lower": 80, "upper": 220},
                ],
                ceiling="2",
                price_curve={"kind": "compensation", "margin": "0.1"},
                compensation={"E": "4000", "rate": "1", "E_min": "0"},
            )
            listing_create(
                owner=owner,
                dataset_id=dataset.public_id,
                title="Clinic patients by district, sex and smoking",
                description="Patients per district, blood pressure of smokers and non-smokers, cholesterol of the "
                "over-40s by sex (of those measured), district by sex, and first visits per year.",
                statistics=[
                    {"kind": "count", "by": "district", "categories": DISTRICTS, **PUBLIC},
                    {"kind": "mean", "column": "systolic_bp", "lower": 80, "upper": 220, "by": "smoker"},
                    {"kind": "mean", "column": "cholesterol", "lower": 2, "upper": 10, "by": "sex",
                     "categories": ["female", "male"], "where": [{"column": "age", "op": ">=", "value": 40}], **PUBLIC},
                    {"kind": "table", "rows": "district", "columns": "sex", "row_categories": DISTRICTS,
                     "column_categories": ["female", "male"], **PUBLIC},
                    {"kind": "histogram", "column": "first_visit", "bin": "year", "from": "2015", "to": "2024"},
                ],
                ceiling="3",
                price_per_epsilon="25.00",
            )
        if not Dataset.objects.filter(owner=owner, name=SURVEY).exists():
            survey = dataset_create(
                owner=owner,
                name=SURVEY,
                description="The 400 households of a published sample: where they live (metres from the town hall) "
                "and their weekly commute. The sample's size is public.",
                upload=survey_csv(),
                total_budget="6",
                relation="public_size",
                record_name="household",
                record_name_plural="households",
            )
            survey = _ready(survey)
            listing_create(
                owner=owner,
                dataset_id=survey.public_id,
                title="Sampled households: weekly commute",
                description="Mean weekly commute in km and a histogram of it.",
                statistics=[
                    {"kind": "mean", "column": "commute_km", "lower": 0, "upper": 300},
                    {"kind": "histogram", "column": "commute_km", "bins": [0, 25, 50, 100, 200, 300]},
                ],
                ceiling="3",
                price_per_epsilon="10.00",
            )
        if not Dataset.objects.filter(owner=owner, name=PENGUINS).exists():
            penguins = _penguins(owner, PENGUINS, "private_size", "4",
                                 "344 penguins of three species on three islands of the Palmer Archipelago, Antarctica: "
                                 "bill, flipper and body measurements, sex (missing for 11) and year.")
            listing_create(
                owner=owner,
                dataset_id=penguins.public_id,
                title="Penguins by species and island",
                description="Penguins per species, mean body mass per island, total flipper length of the females, "
                "species by island, and bill lengths of Adelie and Gentoo penguins.",
                statistics=[
                    {"kind": "count", "by": "species", "categories": PENGUIN_SPECIES, **PUBLIC},
                    {"kind": "mean", "column": "body_mass_g", "lower": 2500, "upper": 6500, "by": "island",
                     "categories": PENGUIN_ISLANDS, **PUBLIC},
                    {"kind": "sum", "column": "flipper_length_mm", "lower": 150, "upper": 250,
                     "where": [{"column": "sex", "op": "=", "value": "female"}]},
                    {"kind": "table", "rows": "species", "columns": "island", "row_categories": PENGUIN_SPECIES,
                     "column_categories": PENGUIN_ISLANDS, **PUBLIC},
                    {"kind": "histogram", "column": "bill_length_mm", "bins": [30, 35, 40, 45, 50, 55, 60],
                     "where": [{"column": "species", "op": "in", "values": ["Adelie", "Gentoo"]}]},
                ],
                ceiling="2",
                price_per_epsilon="10.00",
            )
        if not Dataset.objects.filter(owner=owner, name=PENGUIN_RECORDS).exists():
            self._penguin_records(owner)
        if not Transfer.objects.filter(reference="demo-seed-credits").exists():
            provider().fund(user=buyer, amount=Decimal("500.00"), reference="demo-seed-credits", memo="demo credits")
        self.stdout.write(self.style.SUCCESS("Demo ready: demo-owner / demo-owner-pass, demo-buyer / demo-buyer-pass, demo-admin / demo-admin-pass"))

    @staticmethod
    def _penguin_records(owner):
        """The penguins again, their number public, sold record by record: species, island and sex as
        randomised bits on a ladder of levels (bit-report microdata). The table has no free-text column
        to hash into a Bloom filter."""
        records = _penguins(owner, PENGUIN_RECORDS, "public_size", "8",
                            "The 344 Palmer penguins, the number of them public, to sell one row per penguin.")
        listing_create_microdata(
            owner=owner,
            dataset_id=records.public_id,
            title="Penguins, one randomised row each",
            description="Every penguin's species, island and sex as randomised bits: buy a level, then a higher one "
            "for less-randomised bits of the same penguins.",
            microdata_spec={"columns": [{"column": "species", "categories": PENGUIN_SPECIES, **PUBLIC},
                                        {"column": "island", "categories": PENGUIN_ISLANDS, **PUBLIC},
                                        {"column": "sex", "categories": ["female", "male"], **PUBLIC}],
                            "levels": ["1", "2", "4", "8"]},
            price_per_epsilon="5.00",
        )
