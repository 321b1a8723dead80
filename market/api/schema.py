"""Post-processing of the generated OpenAPI schema (drf-spectacular hooks)."""

from __future__ import annotations

import re

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
        listing["anyOf"] = [{"required": ["price_per_epsilon"]}, {"required": ["price_curve"]}]
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
