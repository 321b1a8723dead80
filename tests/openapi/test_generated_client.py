"""A client generated from the served OpenAPI document runs the buyer's and the owner's flows (issue 16).

The schema is read from a live server, ``openapi-python-client`` turns it into a package (with
``--fail-on-warning``: a warning fails the test), and the package, imported from a temporary
folder, does everything below against that server, with a real Celery worker releasing the
purchases and reading the uploads. Nothing here talks to the server but the generated code.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import time
import uuid
from decimal import Decimal
from io import BytesIO
from pathlib import Path

import httpx
import pytest

from market.accounts.models import User
from market.catalog.models import Listing
from tests.fixtures.market import make_csv

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.queued_datasets]

PACKAGE = "gradual_generated"
PASSWORD = "a-long-password-1"  # tests.fixtures.market.users
WAIT = 20  # seconds a request may hold its answer (Prefer: wait)


def _generate(schema: Path, into: Path) -> subprocess.CompletedProcess:
    tool = Path(sys.executable).with_name("openapi-python-client")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}  # its ruff
    return subprocess.run(
        [str(tool), "generate", "--path", str(schema), "--output-path", str(into / PACKAGE), "--meta", "none",
         "--fail-on-warning"],
        capture_output=True, text=True, env=env, timeout=300,
    )


@pytest.fixture(scope="module")
def generated(live_server, tmp_path_factory, django_db_blocker):
    """The package generated from ``/api/schema/`` as served, imported; and what the tool printed."""
    folder = tmp_path_factory.mktemp("generated")
    with django_db_blocker.unblock():  # the request opens (and checks) the server's connection
        answer = httpx.get(f"{live_server.url}/api/schema/?format=json", timeout=60)
    assert answer.status_code == 200
    schema = folder / "schema.json"
    schema.write_bytes(answer.content)
    run = _generate(schema, folder)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    sys.path.insert(0, str(folder))
    try:
        package = importlib.import_module(PACKAGE)
        importlib.import_module(f"{PACKAGE}.models")
        yield package, output
    finally:
        sys.path.remove(str(folder))
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(f"{PACKAGE}.")]:
            del sys.modules[name]


def _api(name: str):
    return importlib.import_module(f"{PACKAGE}.api.v1.{name}")


def _models():
    return importlib.import_module(f"{PACKAGE}.models")


def _signed_in(live_server, username: str):
    """A client holding a new API key, from POST auth/token/ with the account's password."""
    client_module = importlib.import_module(f"{PACKAGE}.client")
    m = _models()
    anonymous = client_module.Client(base_url=live_server.url, timeout=httpx.Timeout(60.0))
    answer = _api("v1_auth_token_create").sync_detailed(
        client=anonymous, body=m.TokenRequestRequest(username=username, password=PASSWORD)
    )
    assert answer.status_code == 200, answer.content
    assert answer.parsed.token.startswith("gradual_")
    return client_module.AuthenticatedClient(base_url=live_server.url, token=answer.parsed.token,
                                             timeout=httpx.Timeout(WAIT + 30.0))


def test_the_served_schema_generates_a_client_without_warnings(generated):
    package, output = generated
    assert "warning" not in output.lower(), output
    m = _models()
    # one class per kind of statistic and price curve, none named by its position in a union
    for name in ("CountStatistic", "SumStatistic", "MeanStatistic", "HistogramStatistic", "DateHistogramStatistic",
                 "TableStatistic", "CentroidStatistic", "LinearPriceCurve", "PowerPriceCurve",
                 "CompensationPriceCurve", "LinearPriceCurveRequest", "Condition", "Error"):
        assert hasattr(m, name), name
    assert not [name for name in dir(m) if "Type0" in name or "Item" in name], dir(m)


def test_a_bad_key_is_an_error_the_client_reads(generated, live_server):
    client_module = importlib.import_module(f"{PACKAGE}.client")
    bad = client_module.AuthenticatedClient(base_url=live_server.url, token="gradual_" + "x" * 46)
    answer = _api("v1_wallet_retrieve").sync_detailed(client=bad)
    assert answer.status_code == 401
    assert answer.parsed.error.code == "invalid_key" and answer.parsed.error.status == 401


def test_the_buyer_flow(generated, live_server, worker, listing, users, fund):
    m = _models()
    bea = users("bea")
    fund(bea, 100)
    signed_in = _signed_in(live_server, "bea")
    # a key of its own for the notebook, made with the sign-in's key, and used from here on as the
    # generated client sends it (Authorization: Bearer <key>), or as older clients do (Token <key>)
    made = _api("keys_create").sync_detailed(client=signed_in, body=m.ApiKeyCreateRequest(name="notebook",
                                                                                         expires_in_days=30))
    assert made.status_code == 201, made.content
    assert made.parsed.status == m.ApiKeyStatusEnum.ACTIVE and made.parsed.secret.startswith(made.parsed.prefix)
    client_module = importlib.import_module(f"{PACKAGE}.client")
    client = client_module.AuthenticatedClient(base_url=live_server.url, token=made.parsed.secret,
                                               timeout=httpx.Timeout(WAIT + 30.0))
    older = client_module.AuthenticatedClient(base_url=live_server.url, token=made.parsed.secret, prefix="Token")
    assert _api("v1_wallet_retrieve").sync_detailed(client=older).parsed.balance == "100.00"

    found = _api("v1_listings_list").sync_detailed(client=client, search="Clinic")
    assert found.status_code == 200
    mine = [item for item in found.parsed.results if item.id == listing.pk]
    assert len(mine) == 1 and mine[0].title == "Clinic visits"
    assert isinstance(mine[0].price_curve, m.LinearPriceCurve) and mine[0].price_curve.c == "10.00"
    assert {type(s) for s in mine[0].statistics} == {m.CountStatistic, m.MeanStatistic, m.HistogramStatistic}

    quote = _api("v1_listings_quote_retrieve").sync_detailed(listing.pk, client=client, epsilon="1.5")
    assert quote.status_code == 200, quote.content
    price = Decimal(quote.parsed.price)
    assert price == Decimal("15.00")  # the listing's linear curve: 10.00 credits per unit of eps

    key = str(uuid.uuid4())
    body = m.PurchaseCreateRequest(listing=listing.pk, epsilon="1.5")
    bought = _api("v1_purchases_create").sync_detailed(client=client, body=body, idempotency_key=key,
                                                       prefer=f"wait={WAIT}")
    assert bought.status_code in (201, 202), bought.content
    assert bought.headers.get("preference-applied") == f"wait={WAIT}"
    purchase = bought.parsed
    deadline = time.monotonic() + 90
    while purchase.status != m.PurchaseStatusEnum.RELEASED:  # 202: not released within the wait
        assert purchase.status != m.PurchaseStatusEnum.FAILED, purchase.failure_reason
        assert time.monotonic() < deadline, "the purchase was not released"
        purchase = _api("v1_purchases_retrieve").sync_detailed(str(purchase.id), client=client,
                                                               prefer=f"wait={WAIT}").parsed
    assert purchase.epsilon == "1.5000" and Decimal(purchase.price) == price

    again = _api("v1_purchases_create").sync_detailed(client=client, body=body, idempotency_key=key)
    assert again.status_code == 200 and again.parsed.id == purchase.id  # the first purchase, charged once

    releases = _api("v1_releases_list").sync_detailed(client=client)
    assert releases.status_code == 200
    assert [r.id for r in releases.parsed.results] == [purchase.release.id]
    release = _api("v1_releases_retrieve").sync_detailed(purchase.release.id, client=client).parsed
    assert release.level == "1.5000" and release.listing == listing.pk
    labels = [v.label for v in release.values]
    assert labels[0] == "count" and "mean(age)" in labels and len(labels) == 2 + 50  # count, mean, 50 bins
    for value in release.values:
        assert isinstance(value.value, (int, float)) and value.error_bound > 0 and value.noise_scale > 0
    assert release.values[0].value == int(release.values[0].value)  # a count on the lattice path: whole

    wallet = _api("v1_wallet_retrieve").sync_detailed(client=client).parsed
    assert Decimal(wallet.balance) == Decimal(100) - price
    statement = _api("v1_wallet_statement_list").sync_detailed(client=client)
    assert statement.status_code == 200
    amounts = [Decimal(leg.amount) for leg in statement.parsed.results]
    assert amounts == [-price, Decimal(100)]  # newest first: the purchase, then the top-up
    assert Decimal(statement.parsed.results[0].balance_after) == Decimal(100) - price


def _until_ready(client, dataset_id: str, m):
    deadline = time.monotonic() + 90
    while True:
        dataset = _api("v1_datasets_retrieve").sync_detailed(dataset_id, client=client).parsed
        if dataset.status != m.DatasetStatusEnum.PROCESSING:
            return dataset
        assert time.monotonic() < deadline, "the upload was not read"
        time.sleep(0.2)


def test_the_owner_flow(generated, live_server, worker, users):
    m = _models()
    types = importlib.import_module(f"{PACKAGE}.types")
    users("olivia", owner=True)
    client = _signed_in(live_server, "olivia")

    upload = m.DatasetUploadRequest(
        name="visits", budget="10", licence="CC0-1.0",
        file=types.File(payload=BytesIO(make_csv(300, seed=7)), file_name="visits.csv", mime_type="text/csv"),
    )
    sent = _api("v1_datasets_create").sync_detailed(client=client, body=upload)
    assert sent.status_code == 202, sent.content
    dataset = _until_ready(client, sent.parsed.id, m)
    assert dataset.status == m.DatasetStatusEnum.READY, dataset.failure
    assert {c.name: c.type_ for c in dataset.columns} == {
        "age": m.ColumnTypeEnum.INTEGER, "income": m.ColumnTypeEnum.DECIMAL, "visits": m.ColumnTypeEnum.INTEGER,
    }

    columns = m.DatasetColumnsRequest(columns=[
        m.ColumnChoiceRequest(name="age", type_=m.ColumnTypeEnum.INTEGER, missing=m.MissingPolicyEnum.NONE),
        m.ColumnChoiceRequest(name="visits", type_=m.ColumnTypeEnum.IGNORED),
    ])
    confirmed = _api("v1_datasets_partial_update").sync_detailed(dataset.id, client=client, body=columns)
    assert confirmed.status_code == 200, confirmed.content
    dataset = _until_ready(client, dataset.id, m)
    assert dataset.status == m.DatasetStatusEnum.READY, dataset.failure
    assert {c.name: c.type_ for c in dataset.columns} == {
        "age": m.ColumnTypeEnum.INTEGER, "income": m.ColumnTypeEnum.DECIMAL, "visits": m.ColumnTypeEnum.IGNORED,
    }

    body = m.ListingCreateRequest(
        dataset=dataset.id, title="Visits by age", ceiling="4",
        statistics=[
            m.CountStatistic(kind=m.CountStatisticKind.COUNT),
            m.MeanStatistic(kind=m.MeanStatisticKind.MEAN, column="age", lower=0, upper=100),
            m.SumStatistic(kind=m.SumStatisticKind.SUM, column="income", lower=0, upper=200000, grid="0.01",
                           where=[m.Condition(column="age", op=m.ConditionOp.VALUE_5, value=40)]),
        ],
        price_curve=m.PowerPriceCurveRequest(kind=m.PowerPriceCurveKind.POWER, c="4.00", p="1.5"),
    )
    made = _api("v1_listings_create").sync_detailed(client=client, body=body)
    assert made.status_code == 201, made.content
    created = made.parsed
    assert created.labels[0] == "count" and "sum(income) | age >= 40" in created.labels
    assert isinstance(created.price_curve, m.PowerPriceCurve)
    assert (created.price_curve.c, created.price_curve.p) == ("4.00", "1.5")
    # a mean over the private size: a size release at a tenth of the ceiling 4, the rest (3.6) for sale
    assert (created.ceiling, created.buyable_ceiling, created.size_level) == ("4.0000", "3.6000", "0.4000")
    assert [c.label for c in created.size_release.cells] == ["count"] and created.size_release.level == "0.4000"
    assert [p.epsilon for p in created.price_curve.points] == ["0.9000", "1.8000", "2.7000", "3.6000"]
    assert created.price_curve.points[3].price == "27.32"  # 4.00 * 3.6^1.5
    assert [type(s) for s in created.statistics] == [m.CountStatistic, m.MeanStatistic, m.SumStatistic]
    assert Listing.objects.get(pk=created.id).dataset.owner == User.objects.get(username="olivia")
