"""Strict input (issue #10, section 4): what the OpenAPI schema says is what the server does.

Every refusal is a 4xx in the API's one error shape and changes nothing: no purchase, no ledger
leg, no listing. The schema's bounds are read from ``/api/schema/`` and tried at the boundary.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from market.catalog.models import Dataset, Listing
from market.ledger.models import Leg
from market.ledger.payments import ManualFunding
from market.trading.models import Purchase
from tests.fixtures.market import STATISTICS
from tests.marketplace.test_api import assert_error

from .conftest import STATISTICS, make_csv

pytestmark = pytest.mark.django_db


def _nothing_changed(before):
    assert (Purchase.objects.count(), Leg.objects.count(), Listing.objects.count(), Dataset.objects.count()) == before


def _counts():
    return Purchase.objects.count(), Leg.objects.count(), Listing.objects.count(), Dataset.objects.count()


def _post_raw(client, path, text, content_type="application/json"):
    return client.post(path, text, content_type=content_type)


@pytest.mark.parametrize(
    "listing_json",
    ["true", "false", "{pk}.9", "{pk}.0", '"{pk} "', '"{pk}"', "[{pk}]", "null", "0", "-{pk}", "9223372036854775808"],
)
def test_a_purchase_names_its_listing_by_a_json_integer(api, listing, buyer, fund, listing_json):
    """Today true, 2.9 and "4 " buy listings 1, 2 and 4."""
    fund(buyer, 100)
    before = _counts()
    body = '{"listing": %s, "epsilon": "0.5"}' % listing_json.format(pk=listing.pk)
    assert_error(_post_raw(api(buyer), "/api/v1/purchases/", body), 400, "invalid", field="listing")
    _nothing_changed(before)


def test_unknown_fields_are_named_and_refused(api, listing, buyer, fund):
    fund(buyer, 100)
    before = _counts()
    answer = api(buyer).post(
        "/api/v1/purchases/", {"listing": listing.pk, "epsilon": "0.5", "price": "0", "buyer": 1}, format="json"
    )
    error = assert_error(answer, 400, "invalid")
    assert {"price", "buyer"} <= set(error["fields"]), error
    assert "listing" not in error["fields"] and "epsilon" not in error["fields"]
    _nothing_changed(before)
    error = assert_error(api(buyer).post("/api/v1/wallet/top-up/", {"amount": "5", "to": 2}, format="json"), 400)
    assert list(error["fields"]) == ["to"]
    _nothing_changed(before)


def _listing_body(dataset_id, **change):
    return {"dataset": dataset_id, "title": "t", "statistics": STATISTICS, "ceiling": "2", "price_per_epsilon": "1", **change}


@pytest.fixture
def dataset(api, owner):
    upload = SimpleUploadedFile("visits.csv", make_csv(50), content_type="text/csv")
    answer = api(owner).post("/api/v1/datasets/", {"name": "v", "file": upload, "total_budget": "100"}, format="multipart")
    assert answer.status_code == 202 and answer.json()["status"] == "ready", answer.content  # processed at once in tests
    return answer.json()["id"]


@pytest.mark.parametrize(
    "change,field",
    [
        ({"price_curve": {"kind": "linear", "c": "2"}}, "price_curve"),  # exclusive with price_per_epsilon
        ({"statistics": [{"kind": "count", "secret": 1}]}, "statistics"),
        ({"statistics": [{"kind": "mean", "column": "age", "lower": "0", "upper": 100}]}, "statistics"),
        ({"statistics": [{"kind": "mean", "column": "age", "lower": 0, "upper": True}]}, "statistics"),
        ({"price_per_epsilon": None, "price_curve": {"kind": "power", "c": "1", "p": "2", "q": "1"}}, "price_curve"),
        ({"price_per_epsilon": None, "price_curve": {"kind": "power", "c": 1, "p": "2"}}, "price_curve"),
        (
            {
                "price_per_epsilon": None,
                "price_curve": {"kind": "compensation", "margin": "1"},
                "compensation": {"E": "1", "people": 3, "extra": "x"},
            },
            "compensation",
        ),
        (
            {
                "price_per_epsilon": None,
                "price_curve": {"kind": "compensation", "margin": "1"},
                "compensation": {"E": "1", "people": 2.5},
            },
            "compensation",
        ),
        ({"dataset": True}, "dataset"),
        ({"title": "x" * 201}, "title"),
        ({"title": "   "}, "title"),
        ({"ceiling": 2}, "ceiling"),
        ({"price_per_epsilon": 1}, "price_per_epsilon"),
        ({"ceiling": "10000.0001"}, "ceiling"),
    ],
)
def test_listing_create_holds_nested_inputs_to_their_schema(api, owner, dataset, change, field):
    body = {k: v for k, v in _listing_body(dataset, **change).items() if v is not None}
    before = _counts()
    assert_error(api(owner).post("/api/v1/listings/", body, format="json"), 400, "invalid", field=field)
    _nothing_changed(before)
    assert api(owner).post("/api/v1/listings/", _listing_body(dataset, title="x" * 200), format="json").status_code == 201


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_json_depth_is_read_off_the_brackets_outside_strings():
    from market.api.parsers import json_depth

    assert json_depth(b'{"a": [1, {"b": "[[[[{{"}], "c\\"[": 2}') == 3
    assert json_depth(b"42") == 0 and json_depth(b"") == 0
    assert json_depth(_nested(100_000).encode()) == 100_000


@pytest.mark.parametrize("path", ["/api/v1/auth/token/", "/api/v1/purchases/", "/api/v1/listings/", "/api/v1/wallet/top-up/"])
def test_deeply_nested_json_is_400_before_it_is_decoded(api, buyer, path):
    """Today 1000-deep arrays are 500 on every JSON endpoint, the anonymous token exchange included."""
    client = api() if path.endswith("token/") else api(buyer)
    before = _counts()
    error = assert_error(_post_raw(client, path, _nested(1000)), 400, "parse_error")
    assert "32" in error["message"]
    assert_error(_post_raw(client, path, _nested(33)), 400, "parse_error")
    # 32 deep is within the limit: the body is read, then refused for what it is (not an object)
    assert assert_error(_post_raw(client, path, _nested(32)), 400)["code"] != "parse_error"
    _nothing_changed(before)


@pytest.mark.parametrize(
    "body",
    [
        '{"listing": 1e309, "epsilon": "0.5"}',
        '{"listing": LISTING, "epsilon": 1e309}',
        '{"listing": LISTING, "epsilon": -1e400}',
        '{"listing": LISTING, "epsilon": NaN}',
        '{"listing": LISTING, "epsilon": Infinity}',
    ],
)
def test_numbers_json_cannot_hold_are_400(api, listing, buyer, fund, body):
    fund(buyer, 100)
    before = _counts()
    assert_error(_post_raw(api(buyer), "/api/v1/purchases/", body.replace("LISTING", str(listing.pk))), 400, "parse_error")
    _nothing_changed(before)


def test_a_body_over_the_limit_is_413_in_the_error_shape(api, listing, buyer, fund, settings):
    fund(buyer, 100)
    before = _counts()
    settings.API_JSON_MAX_BYTES = 1000
    padded = json.dumps({"listing": listing.pk, "epsilon": "0.5", "x": "y" * 1000})
    error = assert_error(_post_raw(api(buyer), "/api/v1/purchases/", padded), 413, "payload_too_large")
    assert "1000" in error["message"]
    assert_error(_post_raw(api(), "/api/v1/auth/token/", padded), 413, "payload_too_large")
    # Django's own limit (today a 500): a body over DATA_UPLOAD_MAX_MEMORY_SIZE
    settings.API_JSON_MAX_BYTES = 10**7
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2000
    huge = json.dumps({"listing": listing.pk, "epsilon": "0.5", "x": "y" * 5000})
    assert _post_raw(api(buyer), "/api/v1/purchases/", huge).status_code in (400, 413)  # within the JSON limit
    _nothing_changed(before)


def test_uploads_over_the_limit_are_413_and_bad_forms_400(api, owner, settings):
    settings.UPLOAD_MAX_BYTES = 4000
    before = _counts()
    upload = SimpleUploadedFile("visits.csv", make_csv(500), content_type="text/csv")  # > 4000 bytes
    assert_error(api(owner).post("/api/v1/datasets/", {"name": "v", "file": upload, "total_budget": "100"}, format="multipart"), 413, "payload_too_large")
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10**7
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 5
    upload = SimpleUploadedFile("visits.csv", make_csv(20), content_type="text/csv")
    fields = {f"f{i}": "x" for i in range(10)}
    error = assert_error(
        api(owner).post("/api/v1/datasets/", {"name": "v", "file": upload, "total_budget": "100", **fields}, format="multipart"), 400
    )
    assert error["code"] == "parse_error"
    _nothing_changed(before)


def test_unsupported_media_types_are_415_in_the_error_shape(api, listing, buyer, fund):
    fund(buyer, 100)
    before = _counts()
    body = f"listing={listing.pk}&epsilon=0.5"
    for content_type in ("text/plain", "application/x-www-form-urlencoded"):  # the purchase takes JSON only
        assert_error(_post_raw(api(buyer), "/api/v1/purchases/", body, content_type), 415, "unsupported_media_type")
    _nothing_changed(before)


@pytest.fixture
def schema(api):
    return api().get("/api/schema/?format=json").json()


def _body_schema(schema, path, media="application/json"):
    ref = schema["paths"][path]["post"]["requestBody"]["content"][media]["schema"]["$ref"]
    return schema["components"]["schemas"][ref.rsplit("/", 1)[1]]


def test_every_body_operation_documents_413_and_415_and_refuses_unknown_properties(schema):
    operations = 0
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if "requestBody" not in operation:
                continue
            operations += 1
            assert {"400", "413", "415"} <= set(operation["responses"]), (method, path)
            for media, content in operation["requestBody"]["content"].items():
                if media == "application/octet-stream":  # a part of a resumable upload: raw bytes, no properties
                    assert content["schema"] == {"type": "string", "format": "binary"}, path
                    continue
                ref = content["schema"]["$ref"].rsplit("/", 1)[1]
                assert schema["components"]["schemas"][ref]["additionalProperties"] is False, (path, media)
    assert operations >= 5


def _string_and_number(field):
    string, number = field["oneOf"]
    assert string["type"] == "string" and number["type"] == "number"
    return re.compile(string["pattern"]), number


@pytest.mark.parametrize(
    "amount", ["0.01", "0.1", "1", "25.5", "99999.99", "100000", "100000.00", "0", "0.00", "0.001", "100000.01", "-5", "1e3", " 5", "1,5"]
)
def test_top_up_bounds_in_the_schema_are_the_accepted_bounds(api, buyer, schema, settings, amount):
    settings.DEMO_MODE = True
    pattern, number = _string_and_number(_body_schema(schema, "/api/v1/wallet/top-up/")["properties"]["amount"])
    assert Decimal(str(number["minimum"])) == Decimal("0.01")
    assert Decimal(str(number["maximum"])) == ManualFunding.max_amount
    documented = bool(pattern.fullmatch(amount))
    answer = api(buyer).post("/api/v1/wallet/top-up/", {"amount": amount}, format="json")
    assert answer.status_code == (201 if documented else 400), (amount, answer.content)
    # the same value as a JSON number is judged by the number form's bounds, alike
    try:
        value = float(amount)
    except ValueError:
        return
    in_range = number["minimum"] <= value <= number["maximum"] and Decimal(amount) == round(Decimal(amount), 2)
    answer = api(buyer).post("/api/v1/wallet/top-up/", {"amount": value}, format="json")
    assert answer.status_code == (201 if in_range else 400), (value, answer.content)


@pytest.mark.parametrize(
    "level", ["0.0001", "0.5", "1", "9999.9999", "10000", "10000.0000", "0", "0.0000", "0.00001", "10000.0001", "10001", "-1", "01", ".5", "5 "]
)
def test_level_bounds_in_the_schema_are_the_accepted_bounds(api, make_listing, buyer, schema, level):
    # 100 credits per eps: the smallest level (0.0001) costs 0.01, so no valid level is refused as free
    # a count and a histogram: no size release, so every level up to the ceiling is for sale
    listing = make_listing(ceiling="10000", price="100", rows=50, budget="10000", statistics=[STATISTICS[0], STATISTICS[2]])
    quote = schema["paths"]["/api/v1/listings/{listing_id}/quote/"]["get"]["parameters"]
    pattern = re.compile(next(p for p in quote if p["name"] == "epsilon")["schema"]["pattern"])
    body_pattern, number = _string_and_number(_body_schema(schema, "/api/v1/purchases/")["properties"]["epsilon"])
    assert body_pattern.pattern == pattern.pattern
    assert number["minimum"] == 0 and number["exclusiveMinimum"] is True and number["maximum"] == 10000
    answer = api(buyer).get(f"/api/v1/listings/{listing.pk}/quote/", {"epsilon": level})
    assert answer.status_code == (200 if pattern.fullmatch(level) else 400), (level, answer.content)
    if not pattern.fullmatch(level):
        before = _counts()
        assert_error(api(buyer).post("/api/v1/purchases/", {"listing": listing.pk, "epsilon": level}, format="json"), 400, field="epsilon")
        _nothing_changed(before)


@pytest.mark.parametrize("value", [0, -0.5, 10000.0001, 10001, 0.00001, True])
def test_a_level_sent_as_a_number_outside_the_schema_is_refused(api, make_listing, buyer, fund, value):
    listing = make_listing(ceiling="10000", price="0.01", rows=50, budget="10000", statistics=[STATISTICS[0], STATISTICS[2]])
    fund(buyer, 100)
    before = _counts()
    assert_error(api(buyer).post("/api/v1/purchases/", {"listing": listing.pk, "epsilon": value}, format="json"), 400, field="epsilon")
    _nothing_changed(before)


def test_title_length_in_the_schema_is_the_accepted_length(api, owner, dataset, schema):
    title = _body_schema(schema, "/api/v1/listings/")["properties"]["title"]
    longest = title["maxLength"]
    assert longest == Listing._meta.get_field("title").max_length
    assert_error(api(owner).post("/api/v1/listings/", _listing_body(dataset, title="x" * (longest + 1)), format="json"), 400, field="title")
    assert api(owner).post("/api/v1/listings/", _listing_body(dataset, title="x" * longest), format="json").status_code == 201


def _upload(**fields):
    return {"name": "v", "file": SimpleUploadedFile("visits.csv", make_csv(20), content_type="text/csv"), "budget": "5", **fields}


def test_optional_text_in_the_schema_takes_what_the_server_takes(api, owner, schema):
    """An empty licence is no licence: the server takes it, and so does the schema (drf-spectacular's
    ``oneOf: [text, {"maxLength": 0}]`` matched "" twice, which ``oneOf`` refuses)."""
    from jsonschema import Draft202012Validator

    properties = _body_schema(schema, "/api/v1/datasets/", "multipart/form-data")["properties"]
    for name in ("description", "source", "licence", "record_name", "record_name_plural"):
        field = Draft202012Validator(properties[name])
        longest = properties[name]["maxLength"]
        assert field.is_valid("") and field.is_valid("x" * longest), name
        assert not field.is_valid("x" * (longest + 1)) and not field.is_valid("a\u0000b"), name
        assert api(owner).post("/api/v1/datasets/", _upload(**{name: ""}), format="multipart").status_code == 202, name
        assert_error(api(owner).post("/api/v1/datasets/", _upload(**{name: "x" * (longest + 1)}), format="multipart"), 400, field=name)


def test_a_record_name_of_the_longest_length_gets_a_plural_that_fits(api, owner):
    """Today a 60-character record name without a plural is 500: "s" made it 61 characters."""
    answer = api(owner).post("/api/v1/datasets/", _upload(record_name="n" * 60), format="multipart")
    assert answer.status_code == 202, answer.content
    assert answer.json()["record_name_plural"] == "n" * 60
    answer = api(owner).post("/api/v1/datasets/", _upload(record_name="n" * 59), format="multipart")
    assert answer.json()["record_name_plural"] == "n" * 59 + "s"


def test_a_form_field_given_twice_is_refused_not_read_as_its_last_value(api, owner):
    before = _counts()
    body = _upload()
    body["licence"] = ["CC0-1.0", "proprietary"]  # sent as two parts named licence
    error = assert_error(api(owner).post("/api/v1/datasets/", body, format="multipart"), 400, "invalid", field="licence")
    assert error["fields"]["licence"] == ["Give this field once."]
    _nothing_changed(before)


@pytest.mark.parametrize("prefer", ["return=minimal", "0", "wait=soon"])
def test_a_preference_the_server_ignores_is_one_the_schema_allows(api, listing, buyer, fund, schema, prefer):
    """RFC 7240: a server ignores the preferences it does not honour; the schema says so (it documented
    ``wait=N`` alone, and a fuzzer's ``Prefer: 0`` was then accepted negative data)."""
    from jsonschema import Draft202012Validator

    fund(buyer, 100)
    parameters = schema["paths"]["/api/v1/purchases/"]["post"]["parameters"]
    header = next(p for p in parameters if p["name"] == "Prefer" and p["in"] == "header")
    assert Draft202012Validator(header["schema"]).is_valid(prefer)
    answer = api(buyer).post("/api/v1/purchases/", {"listing": listing.pk, "epsilon": "0.5"}, format="json", HTTP_PREFER=prefer)
    assert answer.status_code == 202 and "Preference-Applied" not in answer, answer.content


def test_an_optional_query_parameter_given_empty_is_refused_not_read_as_left_out(api, listing, buyer):
    path = f"/api/v1/listings/{listing.pk}/privacy-profile/"
    assert api(buyer).get(path).json()["level"] == "4.5000"  # left out: the highest level sold (less the size release)
    error = assert_error(api(buyer).get(path + "?epsilon="), 400, "invalid")
    assert "epsilon" in error["fields"]
    assert api(buyer).get(path + "?epsilon=0.5").json()["level"] == "0.5000"
