"""Post-processing of the generated OpenAPI schema (drf-spectacular hooks)."""

from __future__ import annotations

import re

from drf_spectacular.plumbing import ResolvedComponent
from drf_spectacular.settings import spectacular_settings


def named_schemas(result, generator, request, public):
    """Every titled schema nested in a component becomes a component of its own, named by its
    title, and a ``$ref`` where it was: one class per kind of statistic and price curve in a
    generated client (``CountStatistic``, ``LinearPriceCurve``), one per plain one-value ``kind``
    enum (``CountStatisticKind``), never an inline model named by its position
    (``Statistics_item_type_0``). A ``oneOf`` of components told apart by distinct one-value
    ``kind`` enums gets its ``discriminator``. Two different schemas under one title are a bug.

    Runs before drf-spectacular's enum hook, which rebuilds the components from the generator's
    registry: the new components are registered there. The schemas come from module constants
    (``statistic_schema()``, ``PRICE_CURVE_SCHEMA``) that also validate inputs, so nothing is
    changed in place: lifting builds new dicts and lists."""
    registry = generator.registry
    lifted: dict[str, dict] = {}

    def lift(node):
        if isinstance(node, list):
            return [lift(item) for item in node]
        if not isinstance(node, dict):
            return node
        node = {key: lift(value) for key, value in node.items()}
        title = node.get("title")
        if not isinstance(title, str) or "type" not in node:  # a property named "title", or not a schema
            return node
        if lifted.setdefault(title, node) != node:
            raise ValueError(f"two different schemas are titled {title!r}")
        return {"$ref": f"#/components/schemas/{title}"}

    components = [c for c in registry._components.values() if c.type == ResolvedComponent.SCHEMA]
    for component in components:
        component.schema = {key: lift(value) for key, value in component.schema.items()}
    for title, schema in lifted.items():
        if (title, ResolvedComponent.SCHEMA) in registry._components:
            raise ValueError(f"the title {title!r} is already a component's name")
        registry.register(ResolvedComponent(title, ResolvedComponent.SCHEMA, schema=schema, object=title))
    schemas = {c.name: c.schema for c in registry._components.values() if c.type == ResolvedComponent.SCHEMA}
    for schema in schemas.values():
        _discriminate(schema, schemas)
    result["components"] = registry.build(spectacular_settings.APPEND_COMPONENTS)
    return result


def _one_kind(ref: dict, schemas: dict) -> str | None:
    """The one value of a referenced component's required ``kind`` (None if it has no such kind)."""
    target = schemas.get(str(ref.get("$ref", "")).rsplit("/", 1)[-1], {})
    kind = (target.get("properties") or {}).get("kind", {})
    kind = schemas.get(str(kind.get("$ref", "")).rsplit("/", 1)[-1], kind)
    values = kind.get("enum") or []
    return values[0] if len(values) == 1 and "kind" in target.get("required", []) else None


def _discriminate(node, schemas: dict) -> None:
    if isinstance(node, list):
        for item in node:
            _discriminate(item, schemas)
        return
    if not isinstance(node, dict):
        return
    variants = node.get("oneOf")
    if isinstance(variants, list) and variants and all(isinstance(v, dict) and "$ref" in v for v in variants):
        kinds = [_one_kind(v, schemas) for v in variants]
        if None not in kinds and len(set(kinds)) == len(kinds):
            node["discriminator"] = {
                "propertyName": "kind", "mapping": {kind: v["$ref"] for kind, v in zip(kinds, variants)},
            }
    for value in node.values():
        _discriminate(value, schemas)


#: the branch drf-spectacular adds beside a blank-allowing text field that has a pattern
_BLANK = {"type": "string", "maxLength": 0}


def _accepts_blank(schema: dict) -> bool:
    pattern = schema.get("pattern")
    return (
        schema.get("type") == "string" and not schema.get("minLength") and "format" not in schema
        and (pattern is None or re.search(pattern, "") is not None)
    )


def one_blank(result, generator, request, public):
    """An optional text field (``text_field(required=False)``) is one string schema.

    drf-spectacular documents a blank-allowing field with a pattern as ``oneOf: [the field,
    {"maxLength": 0}]``, for patterns that refuse "". Ours accept "" already, so "" matched
    both variants and ``oneOf`` refused what the server rightly takes (an empty licence is no
    licence); and a fuzzer negating one variant made text the other still accepts. The
    variant is folded back into the property when it accepts "" itself."""
    for component in result.get("components", {}).get("schemas", {}).values():
        for prop in (component.get("properties") or {}).values():
            variants = prop.get("oneOf")
            if isinstance(variants, list) and len(variants) == 2 and variants[1] == _BLANK and _accepts_blank(variants[0]):
                del prop["oneOf"]
                prop.update(variants[0])
    return result


def strict_inputs(result, generator, request, public):
    """Every request body is a ``StrictSerializer``: its component says so, since the server
    refuses any property it does not document."""
    for name, component in result.get("components", {}).get("schemas", {}).items():
        if name.endswith("Request") and component.get("type") == "object":
            component["additionalProperties"] = False
    listing = result.get("components", {}).get("schemas", {}).get("ListingCreateRequest")
    if listing is not None:  # one price: price_per_epsilon or price_curve, never both
        listing["not"] = {"required": ["price_per_epsilon", "price_curve"]}
        # (and at least one, which is said in words: an ``anyOf`` beside the properties makes a
        # generated client (openapi-python-client) take the body as untyped)
        listing["description"] = "A new listing: give its price as price_per_epsilon or as price_curve (one of them)."
    key = result.get("components", {}).get("schemas", {}).get("ApiKeyCreateRequest")
    if key is not None:  # one expiry at most: in days or at a moment
        key["not"] = {"required": ["expires_in_days", "expires_at"]}
    return result


#: operations linked to the ones that can follow them (OpenAPI links; drf-spectacular emits none):
#: (path, method, status) -> {link name: (operationId, parameters, requestBody)}
_LISTING = "$response.body#/id"
_FIRST = "$response.body#/results/0/id"
LINKS = {
    ("/api/v1/listings/", "get", "200"): {
        "ListingDetail": ("v1_listings_retrieve", {"listing_id": _FIRST}, None),
        "Quote": ("v1_listings_quote_retrieve", {"listing_id": _FIRST}, None),
        "Purchase": ("v1_purchases_create", {}, {"listing": _FIRST, "epsilon": "0.5"}),
    },
    ("/api/v1/listings/", "post", "201"): {
        "ListingDetail": ("v1_listings_retrieve", {"listing_id": _LISTING}, None),
        "Quote": ("v1_listings_quote_retrieve", {"listing_id": _LISTING}, None),
    },
    ("/api/v1/listings/{listing_id}/", "get", "200"): {
        "Quote": ("v1_listings_quote_retrieve", {"listing_id": _LISTING}, None),
        "Purchase": ("v1_purchases_create", {}, {"listing": _LISTING, "epsilon": "1"}),
    },
    ("/api/v1/purchases/", "post", "202"): {
        "PurchaseDetail": ("v1_purchases_retrieve", {"purchase_id": "$response.body#/id"}, None),
    },
    ("/api/v1/purchases/", "post", "200"): {
        "PurchaseDetail": ("v1_purchases_retrieve", {"purchase_id": "$response.body#/id"}, None),
    },
    ("/api/v1/purchases/", "get", "200"): {
        "PurchaseDetail": ("v1_purchases_retrieve", {"purchase_id": _FIRST}, None),
    },
    ("/api/v1/releases/", "get", "200"): {
        "ReleaseDetail": ("v1_releases_retrieve", {"release_id": _FIRST}, None),
    },
}


def operation_links(result, generator, request, public):
    """Links between operations, so that stateful tests (schemathesis) follow what a client
    does: list listings, read one, quote it, buy it, poll the purchase, read the release."""
    ids = {op.get("operationId") for item in result.get("paths", {}).values() for op in item.values() if isinstance(op, dict)}
    for (path, method, status), links in LINKS.items():
        response = result.get("paths", {}).get(path, {}).get(method, {}).get("responses", {}).get(status)
        if response is None:
            continue
        for name, (operation_id, parameters, body) in links.items():
            if operation_id not in ids:  # renamed elsewhere: no dangling link
                continue
            link = {"operationId": operation_id}
            if parameters:
                link["parameters"] = parameters
            if body is not None:
                link["requestBody"] = body
            response.setdefault("links", {})[name] = link
    return result
