"""The served OpenAPI document is one that client generators take as it is (issue 16, part 1): plain
enums, one content type per operation, the API's one error shape on every 4xx, decimals as text with a
pattern, one named schema per kind of statistic and price curve, the API key as a bearer token."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from market.catalog.spec import KINDS

pytestmark = pytest.mark.django_db

ERROR = "#/components/schemas/Error"


@pytest.fixture(scope="module")
def schema(django_db_blocker):
    with django_db_blocker.unblock():
        answer = APIClient().get("/api/schema/?format=json")
    assert answer.status_code == 200
    return answer.json()


def _operations(schema):
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            yield path, method, operation


def _nodes(node, where=""):
    if isinstance(node, dict):
        yield where, node
        for key, value in node.items():
            yield from _nodes(value, f"{where}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _nodes(value, f"{where}/{i}")


def test_enums_are_plain_and_never_wrapped(schema):
    for where, node in _nodes(schema):
        for variant in node.get("allOf", []):
            assert "enum" not in variant, f"an enum wrapped in allOf at {where}"
        if "enum" in node:  # an enum is a component of its own, or a parameter's inline list
            assert where.count("/") == 3 or "/parameters/" in where, f"an inline enum at {where}"


def test_each_operation_takes_one_content_type_json_but_for_the_upload(schema):
    for path, method, operation in _operations(schema):
        body = operation.get("requestBody")
        if body is None:
            continue
        types = list(body["content"])
        expected = {
            ("/api/v1/datasets/", "post"): ["multipart/form-data"],
            ("/api/v1/uploads/{upload_id}/", "put"): ["application/octet-stream"],  # a part of a resumable upload
        }.get((path, method), ["application/json"])
        assert types == expected, (path, method, types)


def test_every_4xx_answer_is_the_one_error_shape(schema):
    for path, method, operation in _operations(schema):
        errors = {code: r for code, r in operation["responses"].items() if code.startswith("4")}
        assert {"401", "429"} <= set(errors), (path, method)
        for code, response in errors.items():
            assert response["content"]["application/json"]["schema"] == {"$ref": ERROR}, (path, method, code)


def test_decimals_are_text_with_a_pattern(schema):
    components = schema["components"]["schemas"]
    for where, node in _nodes(components):
        if node.get("format") == "decimal":
            assert node.get("type") == "string" and node.get("pattern"), where
    listing = components["Listing"]["properties"]
    for name in ("ceiling", "your_level", "your_cap", "spent"):
        assert listing[name]["type"] == "string" and listing[name]["pattern"], name
    assert components["Quote"]["properties"]["price"]["pattern"]
    for name, field in (("PurchaseCreateRequest", "epsilon"), ("TopUpRequest", "amount"), ("PayoutCreateRequest", "amount")):
        text = [v for v in components[name]["properties"][field]["oneOf"] if v["type"] == "string"]
        assert len(text) == 1 and text[0]["pattern"], name  # text with a pattern (or a number in range)


def test_one_schema_per_kind_of_statistic_and_of_price_curve(schema):
    components = schema["components"]["schemas"]
    variants = [v["$ref"].rsplit("/", 1)[1] for v in components["Statistics"]["items"]["oneOf"]]
    kinds = {}
    for name in variants:
        kind = components[name]["properties"]["kind"]["$ref"].rsplit("/", 1)[1]
        assert len(components[kind]["enum"]) == 1 and components[name]["additionalProperties"] is False
        kinds.setdefault(components[kind]["enum"][0], []).append(name)
    assert set(kinds) == set(KINDS)
    assert kinds["histogram"] == ["HistogramStatistic", "DateHistogramStatistic"] and kinds["count"] == ["CountStatistic"]
    assert components["Condition"]["properties"]["op"] == {"$ref": "#/components/schemas/ConditionOp"}

    for union, suffix in ((components["PriceCurveInput"], "Request"), (components["Listing"]["properties"]["price_curve"], "")):
        mapping = union["discriminator"]["mapping"]
        assert union["discriminator"]["propertyName"] == "kind"
        assert mapping == {k: f"#/components/schemas/{k.capitalize()}PriceCurve{suffix}"
                           for k in ("linear", "power", "compensation")}
        assert [v["$ref"] for v in union["oneOf"]] == list(mapping.values())
    power = components["PowerPriceCurve"]
    assert {"kind", "c", "p", "formula", "points", "compensation"} <= set(power["properties"])
    assert components["PowerPriceCurveRequest"]["properties"]["kind"] == power["properties"]["kind"]


def test_the_api_key_is_a_bearer_token_on_every_operation(schema):
    scheme = schema["components"]["securitySchemes"]["apiKey"]
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer")
    for path, method, operation in _operations(schema):
        assert {"apiKey": []} in operation["security"], (path, method)


def test_every_schema_is_draft_4_as_openapi_3_0_reads_it(schema):
    """OpenAPI 3.0 schemas are JSON Schema draft 4 (the server's validator is draft 4 too): an
    exclusive bound is a boolean beside minimum or maximum. A number there (a later draft's
    spelling) is an invalid schema: the server would not enforce it and generators refuse it."""
    from jsonschema import Draft4Validator

    assert schema["openapi"].startswith("3.0")
    for name, component in schema["components"]["schemas"].items():
        Draft4Validator.check_schema(component)  # raises SchemaError, naming the keyword
        for where, node in _nodes(component, name):
            for bound in ("exclusiveMinimum", "exclusiveMaximum"):
                if bound in node:
                    assert isinstance(node[bound], bool), f"{where}: {bound} must be a boolean in draft 4"
