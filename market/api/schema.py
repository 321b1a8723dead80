"""Post-processing of the generated OpenAPI schema (drf-spectacular hooks)."""

from __future__ import annotations


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
    return result
