"""An owner, in a real browser: signs up, uploads a CSV, creates a listing, reads the dashboard."""

import re

import pytest
from playwright.sync_api import expect

from market.catalog.models import Dataset, Listing
from tests.fixtures.market import make_csv

pytestmark = pytest.mark.django_db(transaction=True)
LABEL = {name: re.compile(rf"^{name}:?$") for name in ("Kind", "Column", "Lower", "Upper", "Bin edges", "Name", "Title")}


def sign_up_as_owner(page, username):
    page.goto("/signup/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("List my data").check()
    page.locator("#id_password1").fill("a-long-password-1")
    page.locator("#id_password2").fill("a-long-password-1")
    page.get_by_role("button", name="Sign up").click()
    expect(page.get_by_role("heading", name="Owner dashboard")).to_be_visible()


def new_listing(page, dataset, title: str, ceiling: str, price: str):
    """The builder on ``dataset`` with the title, ceiling and linear price filled in: its first statistic row."""
    page.goto(f"/owner/listings/new/?dataset={dataset.public_id}")
    page.get_by_label(LABEL["Title"]).fill(title)
    page.get_by_label(re.compile(r"^Ceiling \(ε\)")).fill(ceiling)
    page.get_by_label(re.compile(r"^Price scale c")).fill(price)
    return page.locator("fieldset.stat-row").nth(0)


def upload(page, name, content: bytes):
    page.get_by_role("link", name="Upload a dataset").first.click()
    page.get_by_label(LABEL["Name"]).fill(name)
    page.get_by_label(re.compile("^CSV or Parquet file")).set_input_files({"name": f"{name}.csv", "mimeType": "text/csv", "buffer": content})


def test_an_owner_uploads_data_and_lists_it(browse, shot):
    page = browse()
    sign_up_as_owner(page, "olga")

    upload(page, "Clinic visits", make_csv(600))
    page.get_by_label(re.compile("Private size: protect any one record")).check()
    page.get_by_label(re.compile("^One record is about a")).fill("patient")
    page.get_by_label(re.compile("^Plural")).fill("patients")
    page.get_by_label(re.compile(r"^Privacy budget")).fill("10")
    page.get_by_role("button", name="Upload").click()
    expect(page.get_by_role("heading", name="Clinic visits: its columns")).to_be_visible()
    page.get_by_role("button", name="Confirm columns").click()
    expect(page.get_by_role("heading", name="Create a listing")).to_be_visible()
    dataset = Dataset.objects.get(owner__username="olga")
    assert dataset.row_count == 600 and dataset.public_size is None
    assert dataset.protects.startswith("Protects any one patient, whether or not they are in the data")

    page.get_by_label(LABEL["Title"]).fill("Clinic ages")
    page.get_by_label(re.compile(r"^Ceiling \(ε\)")).fill("4")
    page.get_by_label(re.compile(r"^Price scale c")).fill("12")
    rows = page.locator("fieldset.stat-row")
    rows.nth(0).get_by_label(LABEL["Kind"]).select_option("count")
    second = rows.nth(1)
    second.get_by_label(LABEL["Kind"]).select_option("mean")
    second.get_by_label(LABEL["Column"]).select_option("age")
    second.get_by_label(LABEL["Lower"]).fill("0")
    second.get_by_label(LABEL["Upper"]).fill("100")
    third = rows.nth(2)
    third.get_by_label(LABEL["Kind"]).select_option("histogram")
    third.get_by_label(LABEL["Column"]).select_option("age")
    third.get_by_label(LABEL["Bin edges"]).fill("0, 18, 65, 100")
    shot(page, "owner-create-listing")
    page.get_by_role("button", name="Create the listing").click()

    expect(page.get_by_role("heading", name="Clinic ages")).to_be_visible()
    listing = Listing.objects.get(title="Clinic ages")
    # the mean divides by a private count: a tenth of the ceiling goes to the size release, the rest is sold
    assert str(listing.total_level.normalize()) == "4" and str(listing.size_level.normalize()) == "0.4"
    assert [s["kind"] for s in listing.statistics] == ["count", "mean", "histogram"]
    expect(page.locator("#privacy-gauge svg.plot")).to_be_visible()
    expect(page.get_by_text(re.compile("Every buyer of this listing will read the same noise path"))).to_be_visible()

    page.goto("/owner/")
    expect(page.get_by_role("link", name="Clinic ages")).to_be_visible()
    shot(page, "owner-dashboard")
    page.goto(f"/listings/{listing.pk}/")
    expect(page.get_by_text(re.compile("Protects any one patient, whether or not they are in the data"))).to_be_visible()
    expect(page.get_by_text("This is your listing.")).to_be_visible()


def test_a_broken_csv_shows_its_reasons(browse, shot):
    page = browse()
    sign_up_as_owner(page, "oscar")
    upload(page, "Broken", b"age,income\n31,52000\n40,=SUM(A1)\n7\n")
    page.get_by_role("button", name="Upload").click()
    expect(page.get_by_role("heading", name="The file was not accepted")).to_be_visible()
    expect(page.get_by_text(re.compile(r"line 4: has 1 cells but the header has 2"))).to_be_visible()
    shot(page, "owner-upload-errors")
    assert Dataset.objects.get().status == "failed"


@pytest.mark.queued_datasets
def test_upload_progress_then_column_review(browse, shot, worker):
    """The penguins table as shipped: processed by a Celery worker while the page polls, then
    reviewed column by column; a wrong choice is refused with its reason, a good one rebuilds."""
    from pathlib import Path

    import palmerpenguins

    page = browse()
    sign_up_as_owner(page, "pia")
    page.get_by_role("link", name="Upload a dataset").first.click()
    page.get_by_label(LABEL["Name"]).fill("Penguins")
    content = (Path(palmerpenguins.__file__).parent / "data" / "penguins.csv").read_bytes()
    page.get_by_label(re.compile("^CSV or Parquet file")).set_input_files(
        {"name": "penguins.csv", "mimeType": "text/csv", "buffer": content})
    page.get_by_role("button", name="Upload").click()
    expect(page.get_by_role("heading", name="Penguins: its columns")).to_be_visible()
    # the status fragment polls until the worker is done, then the page shows the review
    expect(page.locator("#dataset-status[data-status=ready]")).to_be_visible(timeout=30_000)
    review = page.locator("#column-review")
    expect(review.locator("tr[data-column=sex]")).to_contain_text("11 missing (NA)")
    expect(review.locator("tr[data-column=species]")).to_contain_text("Adelie")
    shot(page, "owner-column-review")
    review.get_by_label("missing policy of sex").select_option("none")
    review.get_by_label("type of island").select_option("integer")
    page.get_by_role("button", name="Confirm columns").click()
    errors = page.locator("#column-errors")
    expect(errors).to_contain_text("column 'sex': 11 cells missing (NA), first at line 5")
    expect(errors).to_contain_text("column 'island': 344 values are not whole numbers")
    review = page.locator("#column-review")
    review.get_by_label("type of year").select_option("ignored")
    page.get_by_role("button", name="Confirm columns").click()
    expect(page.locator("#dataset-status[data-status=ready]")).to_be_visible(timeout=30_000)
    dataset = Dataset.objects.get(name="Penguins")
    assert dataset.status == "ready" and [c["type"] for c in dataset.columns if c["name"] == "year"] == ["ignored"]
