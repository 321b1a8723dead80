"""The API fuzzed from its own OpenAPI schema (schemathesis, in process).

The schema is read from the app itself (``/api/schema/`` through the WSGI
application, no network) and every operation is run with inputs generated
from it, valid and invalid, as a seeded buyer (who is also an owner) and
anonymously. Every answer must be:

- never a 5xx;
- a documented status code, with the documented content type and a body
  that matches the documented schema;
- for every 4xx, our one error shape ``{"error": {"status", "code",
  "message", "fields"}}`` (``market/api/errors.py``).

Bounded and deterministic for CI: a fixed number of examples per operation,
derandomized, no example database. Each operation is one test, in one
database transaction (the in-process WSGI app runs in the test's thread), with
Celery eager so that purchases are released while the fuzzer runs.
"""

from __future__ import annotations

from tests.datasets import ready_dataset
import contextlib
import os
from dataclasses import dataclass
from decimal import Decimal

import pytest
import schemathesis
from django.core import signals
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import CHECKS as REGISTERED_CHECKS
from schemathesis.checks import load_all_checks
from schemathesis.generation import GenerationMode
from schemathesis.transport.serialization import Binary

from market.accounts.models import User
from market.accounts.services import api_key_create
from market.catalog.services import listing_create
from market.ledger.payments import ManualFunding
from market.trading.services import purchase_create
from market.wsgi import application
from tests.fixtures.market import STATISTICS, make_csv

#: a real CSV for the aimed uploads, as text: schemathesis validates a case again once a test
#: changes it, cannot validate bytes, and would then count the aimed (valid) upload as negative
CSV = make_csv(50, seed=3).decode("ascii")

#: examples per operation in the fuzzing phase (the coverage phase adds its own
#: deterministic boundary cases); the whole file runs in well under two minutes
MAX_EXAMPLES = int(os.environ.get("FUZZ_MAX_EXAMPLES", "25"))  # more for a deeper run by hand

CONFIG = schemathesis.Config.from_dict(
    {
        "seed": 20261121,
        "generation": {
            "max-examples": MAX_EXAMPLES,
            "deterministic": True,
            "database": "none",
            # credentials are ours (a real token, or none), not generated
            "with-security-parameters": False,
            # valid data (positive) and invalid data (negative): what the schema refuses, the server refuses
            "mode": "all",
        },
        "checks": {
            # valid data may still meet the marketplace's rules: not enough credits (402), a purchase
            # in flight (409); nothing else excuses refusing what the schema documents as valid
            "positive_data_acceptance": {"expected-statuses": ["2xx", "401", "402", "403", "404", "409"]},
        },
        "operations": [
            {
                # rules no schema can state: a level above the one you hold and within the listing's cap,
                # a privacy profile's or a quote's level within the listing's ceiling,
                # a price given one way (a curve or a price per eps, as at creation) that the ceiling allows,
                # columns of your own dataset (and the types their values fit; microdata: a public size and a
                # ladder within the budget), a CSV's content, the right password, a key's expiry in
                # the future, a webhook address that can be reached and events your roles receive, the columns a
                # sampled-sensitivity what-if reads (numeric columns of your own dataset), a resumable upload's
                # parts (each at the offset the upload stands at, within its size; a dataset only of a complete
                # upload), a budget and a δ the dataset's listings fit in, a level the Skellam path can reach
                # (a listing's, a comparison's, a what-if's) and a listing's δ within its dataset's. Their inputs' shapes
                # are still checked (negative data refused; tests/security/test_strict_input.py)
                "include-path-regex": "^/api/v1/(purchases/|listings/(microdata/|compare/|\\{listing_id\\}/(quote/|privacy-profile/)?)?|datasets/(\\{dataset_id\\}/(sampled-sensitivity/|budget/|fits/)?)?|auth/token/|keys/|webhooks/endpoints/(\\{endpoint_id\\}/)?|uploads/(\\{upload_id\\}/(dataset/)?)?)$",
                "checks": {
                    "positive_data_acceptance": {"expected-statuses": ["2xx", "400", "401", "402", "403", "404", "409"]}
                },
            },
            {
                # a list's cursor is opaque (sealed by the server, bound to its list): any string has the
                # documented shape, but only the ones the API handed out in next/previous links are
                # positions, and any other is a 400 (tests/marketplace/test_cursor_pagination.py)
                "include-name-regex": "^GET /api/v1/(releases|wallet/statement|earnings/statement|earnings/payouts|webhooks/deliveries)/$",
                "checks": {
                    "positive_data_acceptance": {"expected-statuses": ["2xx", "400", "401", "402", "403", "404", "409"]}
                },
            },
        ],
    }
)

schema = schemathesis.openapi.from_wsgi("/api/schema/", application, config=CONFIG)

FUZZ_SETTINGS = settings(
    max_examples=MAX_EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    # one world per operation, shared by its examples: that is the point
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@schemathesis.check
def one_error_shape(ctx, response, case):
    """Every 4xx answer has the API's one error shape, whatever its status."""
    if not 400 <= response.status_code < 500:
        return None
    assert (response.headers.get("content-type") or [""])[0].startswith("application/json"), (
        f"a {response.status_code} that is not JSON: {response.headers.get('content-type')}"
    )
    body = response.json()
    assert isinstance(body, dict) and set(body) == {"error"}, f"not the error shape: {body!r}"
    error = body["error"]
    # a price_changed (POST purchases/ with a max_price below the price) carries the new quote, and only it
    # an offset_mismatch (PUT uploads/{id}/ at the wrong offset) carries where the upload stands
    extra = {"price_changed": {"quote"}, "offset_mismatch": {"received"}}.get(error.get("code"), set())
    assert set(error) == {"status", "code", "message", "fields"} | extra, f"not the error shape: {body!r}"
    assert error["status"] == response.status_code, f"status {error['status']} in a {response.status_code}"
    assert isinstance(error["code"], str) and error["code"], body
    assert isinstance(error["message"], str) and error["message"], body
    assert isinstance(error["fields"], dict), body
    for name, messages in error["fields"].items():
        assert isinstance(messages, list) and all(isinstance(m, str) for m in messages), (name, messages)
    return True


load_all_checks()
#: every check schemathesis has (server errors, status codes, content types, headers, bodies,
#: positive data accepted, negative data refused, undocumented methods, auth, ...) and ours,
#: but one: ``use_after_free`` expects a resource to be gone after its DELETE. The one DELETE
#: of the API revokes a key, and a revoked key stays readable on purpose (status "revoked", for
#: the owner's audit, as Stripe does); tests/accounts/test_api_keys.py checks exactly that
#: (revoked at once, refused for sign-in, still listed), so the generic check is replaced there.
CHECKS = [*(c for c in REGISTERED_CHECKS.get_all() if c.__name__ != "use_after_free"), one_error_shape]


@dataclass
class World:
    token: str
    listing: int  # someone else's open listing, bought by the fuzzing user at 0.5 and released
    dataset: str  # the fuzzing user's own dataset (they are an owner too), by its public id
    purchase: str
    release: str
    upload: str = ""  # the fuzzing user's open resumable upload (a part received), by its public id


@pytest.fixture
def in_process():
    """Requests go through the real WSGI handler in the test's thread and transaction. Like
    Django's test client, keep the handler from closing the connection at each request's
    start and end (on PostgreSQL that would end the test's transaction)."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture
def world(db, in_process, django_capture_on_commit_callbacks, settings) -> World:
    # the fuzzer tries many wrong passwords: judge their answers, not the per-account lockout
    # (tests/security/test_signin_lockout.py tests that)
    settings.LOGIN_FAILURE_LIMIT = 10**9
    settings.UPLOAD_SESSIONS_PER_OWNER = 10**6  # judge the uploads' answers, not the per-owner cap (tests/marketplace)
    from market.celery import app

    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    try:
        owner = User.objects.create_user("olivia", "olivia@example.com", "a-long-password-1", is_owner=True)
        fuzz = User.objects.create_user("fuzz", "fuzz@example.com", "a-long-password-1", is_owner=True)
        other = User.objects.create_user("otto", "otto@example.com", "a-long-password-1")
        data = ready_dataset(owner=owner, name="visits", data=make_csv(200), total_budget="10000")
        listing = listing_create(
            owner=owner,
            dataset_id=data.public_id,
            title="Clinic visits",
            statistics=STATISTICS,
            # the highest ceiling there is, and cheap: any level the schema's pattern allows can be bought
            ceiling="10000",
            price_per_epsilon="0.01",
        )
        own = ready_dataset(owner=fuzz, name="mine", data=make_csv(120, seed=2), total_budget="8")
        funding = ManualFunding()
        funding.fund(user=fuzz, amount=Decimal("100000"))
        funding.fund(user=other, amount=Decimal("100"))
        with django_capture_on_commit_callbacks(execute=True):
            purchase, *_ = purchase_create(buyer=fuzz, listing_id=listing.pk, epsilon="0.5")
            purchase_create(buyer=other, listing_id=listing.pk, epsilon="0.5")  # rows that are not the fuzzer's
        purchase.refresh_from_db()
        assert purchase.status == "released", purchase.failure_reason
        yield World(
            token=api_key_create(user=fuzz, name="fuzz")[1],
            listing=listing.pk,
            dataset=own.public_id,
            purchase=str(purchase.pk),
            release=purchase.release.public_id,
            upload=_open_upload(fuzz),
        )
    finally:
        app.conf.task_always_eager = before


def _open_upload(owner) -> str:
    from market.catalog import chunks

    upload = chunks.upload_open(owner=owner, size=len(CSV), filename="fuzz.csv")
    first = CSV[:100].encode()
    chunks.upload_part(owner=owner, upload_id=upload.public_id, data=first,
                       where=chunks.Range(start=0, end=len(first) - 1, total=len(CSV)))
    return upload.public_id


def _is_even(value) -> bool:
    """An id the fuzzer generated (an int, or its text in the coverage phase) that is even."""
    if isinstance(value, str) and value.isascii() and value.isdigit():
        value = int(value)
    return isinstance(value, int) and not isinstance(value, bool) and value % 2 == 0


def aim(case, world: World) -> None:
    """Point about half of the valid cases (all of the schema's own examples) at rows
    that exist, so that the fuzzer reaches past "not found" and "not a CSV": chosen
    by the generated value itself, so that a run stays deterministic."""
    if case.meta is None or case.meta.generation.mode is not GenerationMode.POSITIVE:
        return
    always = case.meta.phase.name.value == "examples"

    def hit(value) -> bool:
        return always or _is_even(value)

    path = case.path_parameters or {}
    def hit_text(value) -> bool:  # an opaque id: chosen by the generated text's length
        return isinstance(value, str) and (always or len(value) % 2 == 0)

    if hit(path.get("listing_id")):
        path["listing_id"] = world.listing
    for name, target in (("purchase_id", world.purchase), ("release_id", world.release), ("upload_id", world.upload)):
        if hit_text(path.get(name)):
            path[name] = target
    if isinstance(case.body, dict):
        if "listing" in case.body and hit(case.body["listing"]):
            case.body["listing"] = world.listing
        if "dataset" in case.body and hit_text(case.body["dataset"]):
            case.body["dataset"] = world.dataset
        if isinstance(case.body.get("file"), (bytes, str)) and (always or len(case.body["file"]) % 2 == 0):
            case.body["file"] = CSV


def files_as_text(case) -> None:
    """Send a negative case's generated file as plain text, so that schemathesis can judge it.

    In multipart every field is text on the wire: a "negative" licence of 310 or null arrives as
    "310" or "null", which the server rightly reads as text. Schemathesis excuses such a case by
    validating the form as it was sent, but cannot validate a file it generated as a ``Binary``
    (jsonschema_rs: "Unsupported type: 'Binary'") and then reports the case as accepted negative
    data. The file's bytes go as Latin-1 text instead (NULs and control bytes included; hostile
    files are tests/security/test_hostile_uploads.py's)."""
    if case.meta is None or case.meta.generation.mode is not GenerationMode.NEGATIVE or not isinstance(case.body, dict):
        return
    for name, value in case.body.items():
        if isinstance(value, Binary):
            case.body[name] = value.data.decode("latin-1")


@schema.parametrize()
@FUZZ_SETTINGS
def test_api_as_a_signed_in_buyer(case, world, django_capture_on_commit_callbacks):
    aim(case, world)
    files_as_text(case)
    with django_capture_on_commit_callbacks(execute=True):  # a purchase's release runs at its commit
        case.call_and_validate(headers={"Authorization": f"Bearer {world.token}"}, checks=CHECKS)


@schema.parametrize()
@settings(FUZZ_SETTINGS, max_examples=8)
def test_api_anonymously(case, world):
    case.call_and_validate(checks=CHECKS)


#: steps per stateful scenario, and scenarios per run (FUZZ_MAX_EXAMPLES raises both)
STATEFUL_SCENARIOS = max(5, MAX_EXAMPLES // 2)


@pytest.mark.parametrize("signed_in", [True, False], ids=["signed-in", "anonymous"])
def test_api_statefully_through_the_schemas_links(world, signed_in, django_capture_on_commit_callbacks):
    """Scenarios that follow the schema's links (market/api/schema.py): list listings, read one,
    quote it, buy it, poll the purchase, read the release; every step under every check."""
    headers = {"Authorization": f"Token {world.token}"} if signed_in else {}

    class Workflow(schema.as_state_machine()):
        def get_call_kwargs(self, case):
            return {"headers": headers}

        def validate_response(self, response, case, additional_checks=None, **kwargs):
            # the credentials are ours, given explicitly: the auth checks probe without them
            try:
                case.validate_response(
                    response,
                    checks=CHECKS,
                    headers=kwargs.get("headers"),
                    transport_kwargs=kwargs or None,
                    recorder=getattr(self, "recorder", None),
                )
            except Exception:
                # said at once: a scenario that depends on the state earlier ones left may not replay
                # the same way, and Hypothesis then reports its replay, not this failure
                with contextlib.suppress(Exception):  # the report never hides the failure
                    print(f"failing step: {case.method} {case.formatted_path} -> {response.status_code}: "
                          f"{response.text[:2000]}\n{case.as_curl_command()}")
                raise

    with django_capture_on_commit_callbacks(execute=True):
        Workflow.run(settings=settings(FUZZ_SETTINGS, max_examples=STATEFUL_SCENARIOS, stateful_step_count=8))
