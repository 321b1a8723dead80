"""``gradual-client`` against a live server: the buyer's flow through the library, the owner's, the errors
as exceptions with the API's codes, the ``gradual`` command line in a subprocess, and the package
installed by pip."""

import csv
import io
import json
import os
import shutil
import subprocess
import sys
from decimal import Decimal

import pytest
from django.conf import settings as django_settings
from django.utils.module_loading import import_string

from gradual_client import (
    AuthenticationError,
    Client,
    ConflictError,
    GradualError,
    InsufficientFundsError,
    NetworkError,
    NotFoundError,
    Purchase,
    ReleaseTimeout,
    ValidationError,
)
from market.accounts.models import User
from market.ledger import selectors as ledger
from market.trading.models import Purchase as PurchaseRow
from tests.clients.conftest import PACKAGE, SOURCE
from tests.fixtures.market import STATISTICS, make_csv

pytestmark = pytest.mark.django_db(transaction=True)


def read_as(listing) -> list[str]:
    """The labels of a release of ``STATISTICS``: the count, the mean (released as a sum: the listing's
    second label), then the histogram's bins."""
    assert list(listing.labels[:2]) == ["count", "sum(age)"]
    return ["count", "mean(age)", *listing.labels[2:]]


@pytest.fixture
def small_pages(monkeypatch):
    """Lists answered two items a page, so that following ``next`` is what finds the rest."""
    pagination = import_string(django_settings.REST_FRAMEWORK["DEFAULT_PAGINATION_CLASS"])
    monkeypatch.setattr(pagination, "page_size", 2)


def test_the_buyer_flow(worker, connect, buyer_key, make_listing, small_pages):
    listings = [make_listing() for _ in range(3)]
    client = connect(buyer_key)

    found = client.listings()
    assert sorted(l.id for l in found) == sorted(l.pk for l in listings)  # three pages of two (the last short)
    assert client.listings(search="no such title") == []
    first = client.listing(listings[0].pk)
    assert first.ceiling == Decimal("5.0000") and first.your_level == Decimal("0.0000")
    assert first.labels == tuple(listings[0].labels)

    # a quote by level: the linear curve at 10 credits per unit of epsilon
    quote = client.quote(first, epsilon="0.5")
    assert (quote.epsilon, quote.price, quote.current_level) == (Decimal("0.5000"), Decimal("5.00"), Decimal(0))
    assert quote.target is None
    assert {s.name for s in quote.statistics} >= {"count"}
    count_at_1 = next(s.error_bound for s in client.quote(first, epsilon=1).statistics if s.name == "count")

    # a quote by accuracy: the cheapest level meeting the count's bound at level 1 is level 1 (or just below)
    by_target = client.quote(first, target={"count": count_at_1})
    assert Decimal("0.9") < by_target.epsilon <= 1
    assert next(s.error_bound for s in by_target.statistics if s.name == "count") <= count_at_1
    assert by_target.target == (("count", Decimal(str(count_at_1))),)
    every = client.quote(first, target=count_at_1 * 4)  # a bound for every statistic (the mean's is wider)
    assert every.target is not None and every.target[0][0] is None

    # buy and wait: the release comes back with the purchase
    bought = client.buy(first, Decimal("0.5"))
    assert isinstance(bought, Purchase) and bought.status == "released" and bought.price == Decimal("5.00")
    assert bought.release is not None and bought.release.level == Decimal("0.5000")
    assert [v.label for v in bought.release.values] == read_as(listings[0])
    assert isinstance(bought.release.value("count"), int)  # a count on the lattice path is a whole number

    # the same step twice with one idempotency key: one purchase, one debit
    again = [client.buy(first, 1, idempotency_key="notebook-run-7") for _ in range(2)]
    assert again[0].id == again[1].id and again[0].price == Decimal("5.00")  # P(1) - P(0.5)
    assert PurchaseRow.objects.filter(buyer__username="bea").count() == 2
    assert client.wallet().balance == Decimal("90.00") == ledger.wallet_balance(user=User.objects.get(username="bea"))
    assert client.listing(first).your_level == Decimal("1.0000")

    purchases = client.purchases()
    assert {p.id for p in purchases} == {bought.id, again[0].id} and all(p.released for p in purchases)
    assert client.purchase(bought.id).release == bought.release

    releases = client.releases()
    assert sorted(r.level for r in releases) == [Decimal("0.5000"), Decimal("1.0000")]
    assert client.release(bought.release.id) == bought.release

    statement = client.statement()  # newest first: two purchases, then the funding
    assert [line.amount for line in statement] == [Decimal("-5.00"), Decimal("-5.00"), Decimal("100.00")]
    assert [line.balance_after for line in statement] == [Decimal("90.00"), Decimal("95.00"), Decimal("100.00")]


def test_releases_as_data_frames(worker, connect, buyer_key, listing):
    pandas = pytest.importorskip("pandas")
    client = connect(buyer_key)
    low = client.buy(listing.pk, "0.5").release
    high = client.buy(listing.pk, "2").release
    frame = low.to_frame()
    assert list(frame.columns) == ["release", "listing", "level", "label", "kind", "value", "error_bound", "noise_scale",
                                   "note"]  # note: a mean cell's words ("too few records to estimate", ...)
    assert list(frame["label"]) == read_as(listing)
    assert (frame["level"] == 0.5).all() and (frame["release"] == low.id).all() and (frame["listing"] == listing.pk).all()
    assert list(frame["value"]) == [v.value for v in low.values]
    assert list(frame["error_bound"]) == [v.error_bound for v in low.values]

    everything = client.releases_frame()
    assert isinstance(everything, pandas.DataFrame) and len(everything) == len(low.values) + len(high.values)
    count = everything[everything["label"] == "count"].set_index("level")
    assert count.loc[2.0, "error_bound"] < count.loc[0.5, "error_bound"]  # more epsilon, a tighter bound


def test_the_owner_flow(worker, connect, owner, users, fund, key_for, tmp_path):
    path = tmp_path / "visits.csv"
    path.write_bytes(make_csv(200))
    client = connect(key_for(owner))

    dataset = client.upload(path, budget="10", name="Visits", record_name="patient", wait=True, timeout=120)
    assert dataset.status == "ready" and dataset.column_names == ["age", "income", "visits"]
    assert dataset.budget == Decimal("10.0000") and [d.id for d in client.datasets()] == [dataset.id]
    dataset = client.confirm_columns(dataset, {"visits": "ignored"})
    dataset = client.wait_dataset(dataset, timeout=120)
    assert {c["name"]: c["type"] for c in dataset.columns}["visits"] == "ignored"

    listing = client.create_listing(
        dataset, title="Visits by age", statistics=STATISTICS[:2], ceiling="4", price_per_epsilon="2.50"
    )
    assert listing.ceiling == Decimal("4.0000") and listing.labels == ("count", "sum(age)")

    bea = users("bea")
    fund(bea, 20)
    bought = connect(key_for(bea)).buy(listing.id, 2)
    assert bought.price == Decimal("5.00") and bought.release is not None
    with pytest.raises(ValidationError) as refused:  # a column the owner dropped cannot be listed
        client.create_listing(dataset, title="x", statistics=[{"kind": "sum", "column": "visits", "lower": 0,
                                                               "upper": 9}], ceiling="1", price_per_epsilon="1")
    assert refused.value.status == 400


def test_an_owner_lists_quantiles_and_the_command_line_shows_the_estimates(worker, live_server, connect, owner,
                                                                          users, fund, key_for, tmp_path):
    path = tmp_path / "visits.csv"
    path.write_bytes(make_csv(300))
    client = connect(key_for(owner))
    dataset = client.upload(path, budget="10", name="Visits", wait=True, timeout=120)
    quantiles = {"kind": "quantile", "column": "age", "bins": [0, 30, 50, 70, 100], "quantiles": [0.25, 0.5, 0.75]}
    listing = client.create_listing(dataset, title="Age quantiles", statistics=[quantiles], ceiling="2",
                                    price_per_epsilon="1")
    assert listing.labels[0] == "quantile bin of age: [0, 30)" and listing.statistics[0]["quantiles"] == [0.25, 0.5, 0.75]
    bea = users("bea")
    fund(bea, 20)
    key = key_for(bea)
    connect(key).buy(listing.id, 2)
    env = {"GRADUAL_URL": live_server.url, "GRADUAL_API_KEY": key}
    rows = list(csv.DictReader(io.StringIO(gradual("releases", "--format", "csv", env=env, home=tmp_path).stdout)))
    shown = {row["label"]: row for row in rows}
    assert {"quantile(age, 0.25)", "median(age)", "quantile(age, 0.75)"} <= set(shown)
    assert 18 <= float(shown["median(age)"]["value"]) <= 90 and "interval" in shown["median(age)"]["note"]


def test_declared_categories_are_sent_confirmed_only_when_the_owner_says_so(worker, connect, owner, key_for, tmp_path):
    path = tmp_path / "towns.csv"
    path.write_text("town,age\n" + "".join(f"{town},{30 + i % 40}\n" for i, town in
                                            enumerate(["Oslo", "Bergen", "Tromsø"] * 40)))
    client = connect(key_for(owner))
    dataset = client.upload(path, budget="10", name="Towns", wait=True, timeout=120)
    grouped = [{"kind": "count", "by": "town", "categories": ["Oslo", "Bergen"]}]
    with pytest.raises(ValidationError) as refused:  # buyers would see the categories: confirm them
        client.create_listing(dataset, title="By town", statistics=grouped, ceiling="1", price_per_epsilon="1")
    assert refused.value.status == 400
    assert any(m.startswith("statistic 1 (count): ") and "categories_public" in m
               for m in refused.value.fields["statistics"])
    assert client.listings(search="By town") == []
    listing = client.create_listing(dataset, title="By town", statistics=grouped, ceiling="1", price_per_epsilon="1",
                                    categories_public=True)
    assert listing.labels == ("count | town = Oslo", "count | town = Bergen", "count | town = other")
    assert "categories_public" not in listing.statistics[0]


def test_errors_carry_the_api_code_and_fields(connect, live_server, users, fund, key_for, listing):
    with pytest.raises(AuthenticationError) as bad_key:
        connect("gradual_not-a-key").wallet()
    assert (bad_key.value.status, bad_key.value.code) == (401, "invalid_key")
    with pytest.raises(AuthenticationError):
        connect().wallet()  # no key where one is needed

    poor = users("pat")
    fund(poor, 1)
    client = connect(key_for(poor))
    with pytest.raises(InsufficientFundsError) as short:
        client.buy(listing.pk, 4, wait=False)  # the ceiling 5 less the size release's 0.5 is for sale
    assert (short.value.status, short.value.code) == (402, "insufficient_funds") and short.value.message
    assert client.wallet().balance == Decimal("1.00") and client.purchases() == []

    with pytest.raises(ValidationError) as above:
        client.quote(listing.pk, epsilon=7)  # above the ceiling of 5
    assert above.value.code == "invalid" and "epsilon" in above.value.fields
    with pytest.raises(NotFoundError) as missing:
        client.release("rel_0000000000000000000000")
    assert missing.value.status == 404 and isinstance(missing.value, GradualError)
    with pytest.raises(ValueError):
        client.quote(listing.pk)  # neither epsilon nor target: refused before any request

    with pytest.raises(NetworkError):
        Client("http://127.0.0.1:9", "gradual_x", retries=0, timeout=5).listings()


def test_signing_in_with_a_password_makes_a_key(live_server, users, fund):
    fund(users("bea"), 12)
    with Client.sign_in(live_server.url, "bea", "a-long-password-1") as client:
        assert client.key.startswith("gradual_") and client.wallet().balance == Decimal("12.00")
    with pytest.raises(ValidationError) as wrong:
        Client.sign_in(live_server.url, "bea", "not-the-password")
    assert wrong.value.status == 400 and "credentials" in wrong.value.message


def test_a_slow_release_a_busy_listing_and_waiting_again(late_worker, connect, buyer_key, listing):
    """No worker yet: the wait ends with ReleaseTimeout (the purchase in it), the next step is 409 busy with
    Retry-After; once the worker runs, waiting again returns the release."""
    client = connect(buyer_key, retries=0)
    with pytest.raises(ReleaseTimeout) as slow:
        client.buy(listing.pk, "0.5", timeout=1)
    pending = slow.value.purchase
    assert pending.status == "queued" and pending.release is None and pending.price == Decimal("5.00")
    with pytest.raises(ConflictError) as busy:
        client.buy(listing.pk, 1, wait=False)
    assert (busy.value.status, busy.value.code) == (409, "busy") and busy.value.retry_after >= 1
    late_worker()
    released = client.wait(pending.id, timeout=60)
    assert released.id == pending.id and released.release is not None and released.release.level == Decimal("0.5000")
    assert client.wallet().balance == Decimal("95.00")  # the busy step changed nothing


# -- the command line --------------------------------------------------------------------------------


def gradual(*args, env=None, home, command=None, check=True):
    """Run the ``gradual`` command line in a subprocess (``python -m gradual_client`` from the repository,
    or ``command``), with the environment given and no user config file (``HOME`` is a fresh folder)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("GRADUAL_")}
    environ.update({"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "PYTHONPATH": str(SOURCE)})
    environ.update(env or {})
    program = command or [sys.executable, "-m", "gradual_client"]
    done = subprocess.run([*program, *args], env=environ, capture_output=True, text=True, timeout=180)
    if check:
        assert done.returncode == 0, done.stderr
    return done


def test_the_command_line(worker, live_server, buyer_key, listing, tmp_path):
    env = {"GRADUAL_URL": live_server.url, "GRADUAL_API_KEY": buyer_key}

    listed = list(csv.DictReader(io.StringIO(gradual("listings", "--format", "csv", env=env, home=tmp_path).stdout)))
    assert [(int(row["id"]), row["title"], row["ceiling"]) for row in listed] == [(listing.pk, "Clinic visits", "5")]  # a level, normalized
    table = gradual("listings", env=env, home=tmp_path).stdout
    assert table.splitlines()[0].split()[:3] == ["id", "title", "owner"] and "Clinic visits" in table

    quote = json.loads(gradual("quote", str(listing.pk), "--epsilon", "1.5", "--format", "json", env=env, home=tmp_path).stdout)
    assert (quote["epsilon"], quote["price"]) == ("1.5000", "15.00")
    by_target = gradual("quote", str(listing.pk), "--target", "count:50", "--target", "mean(age):40", env=env, home=tmp_path)
    assert "price" in by_target.stdout and "count" in by_target.stdout

    bought = gradual("buy", str(listing.pk), "--epsilon", "1.5", env=env, home=tmp_path)
    assert "released" in bought.stdout and "count" in bought.stdout

    rows = list(csv.DictReader(io.StringIO(gradual("releases", "--format", "csv", env=env, home=tmp_path).stdout)))
    release = PurchaseRow.objects.get(buyer__username="bea").release
    assert [row["label"] for row in rows] == read_as(listing)
    assert {row["release"] for row in rows} == {release.public_id} and {row["level"] for row in rows} == {"1.5"}
    with Client(live_server.url, buyer_key) as client:
        assert int(rows[0]["value"]) == client.release(release.public_id).value("count")

    wallet = json.loads(gradual("wallet", "--format", "json", env=env, home=tmp_path).stdout)
    assert wallet == {"balance": "85.00", "currency": "credits"}
    statement = list(csv.DictReader(io.StringIO(gradual("statement", "--format", "csv", env=env, home=tmp_path).stdout)))
    assert [row["amount"] for row in statement] == ["-15.00", "100.00"]


def test_the_command_line_reads_a_config_file_and_flags_win(live_server, buyer_key, listing, tmp_path):
    config = tmp_path / ".config" / "gradual" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'url = "{live_server.url}"\napi_key = "{buyer_key}"\n')
    assert json.loads(gradual("wallet", "--format", "json", home=tmp_path).stdout)["balance"] == "100.00"

    other = tmp_path / "elsewhere.toml"
    other.write_text(f'url = "{live_server.url}"\nkey = "gradual_revoked"\n')
    refused = gradual("--config", str(other), "wallet", home=tmp_path, check=False)
    assert refused.returncode == 1 and "401 invalid_key" in refused.stderr
    # a flag wins over the file, and an environment variable wins over the file too
    assert gradual("--config", str(other), "wallet", "--key", buyer_key, home=tmp_path).returncode == 0
    assert gradual("--config", str(other), "wallet", env={"GRADUAL_API_KEY": buyer_key}, home=tmp_path).returncode == 0


def test_the_command_line_says_what_went_wrong(live_server, users, fund, key_for, listing, tmp_path):
    poor = users("pat")
    fund(poor, 1)
    env = {"GRADUAL_URL": live_server.url, "GRADUAL_API_KEY": key_for(poor)}

    short = gradual("buy", str(listing.pk), "--epsilon", "4", env=env, home=tmp_path, check=False)
    assert short.returncode == 1 and "402 insufficient_funds" in short.stderr and short.stdout == ""
    # a price above the one agreed to buys nothing, and says what to do
    changed = gradual("buy", str(listing.pk), "--epsilon", "0.05", "--max-price", "0.40", env=env, home=tmp_path,
                      check=False)
    assert changed.returncode == 1 and changed.stdout == "", changed.stderr
    assert "the price changed" in changed.stderr and "now costs 0.50 credits" in changed.stderr
    assert f"gradual buy {listing.pk} --epsilon 0.05 --max-price 0.50" in changed.stderr
    assert ledger.wallet_balance(user=poor) == Decimal("1.00")
    above = gradual("quote", str(listing.pk), "--epsilon", "7", env=env, home=tmp_path, check=False)
    assert above.returncode == 1 and "epsilon:" in above.stderr

    no_key = gradual("wallet", env={"GRADUAL_URL": live_server.url}, home=tmp_path, check=False)
    assert no_key.returncode == 2 and "no API key" in no_key.stderr
    nowhere = gradual("wallet", env={"GRADUAL_URL": "http://127.0.0.1:9", "GRADUAL_API_KEY": "gradual_x"},
                      home=tmp_path, check=False)
    assert nowhere.returncode == 3 and "could not reach" in nowhere.stderr
    assert gradual("buy", str(listing.pk), env=env, home=tmp_path, check=False).returncode == 2  # no --epsilon


# -- the package -------------------------------------------------------------------------------------


def test_the_package_installs(live_server, listing, tmp_path):
    """``pip install`` of the package (a copy, so nothing is built inside the repository) into a folder of
    its own; the library and the ``gradual`` console script work from there. The build uses the setuptools
    already installed (``--no-build-isolation``), so the test needs no package index."""
    source = tmp_path / "src-copy"
    shutil.copytree(PACKAGE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    target = tmp_path / "site"
    pip = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index", "--target", str(target), str(source)],
        capture_output=True, text=True, timeout=600,
    )
    assert pip.returncode == 0, pip.stderr
    assert (target / "gradual_client" / "py.typed").is_file()  # typed for users' type checkers

    environ = {k: v for k, v in os.environ.items() if not k.startswith("GRADUAL_")}
    environ.update({"PYTHONPATH": str(target), "HOME": str(tmp_path)})
    where = subprocess.run([sys.executable, "-c", "import gradual_client; print(gradual_client.__file__)"],
                           env=environ, capture_output=True, text=True, timeout=60)
    assert where.returncode == 0, where.stderr
    assert where.stdout.strip().startswith(str(target))

    script = target / "bin" / "gradual"
    listed = gradual("listings", "--format", "json", env={**environ, "GRADUAL_URL": live_server.url},
                     home=tmp_path, command=[str(script)])
    assert [item["id"] for item in json.loads(listed.stdout)] == [listing.pk]
