"""The kinds of statistic, one module each, and the registry they register into.

Adding a kind is one module here (its validation, schema, groups of coordinates with their
sensitivities, description, accuracy curve and reading; see docs/architecture.md, "Statistic
kinds") imported below, plus its tests. Everything else (the plan, the API's schema and errors, the
listing builder, the charts, the docs' table of kinds) iterates over :data:`KINDS`.
"""

from __future__ import annotations

# The registry's order is the order shown everywhere (the API's schema, errors, the builder): import order.
# isort: off
from . import count  # noqa: F401
from . import sum  # noqa: F401
from . import mean  # noqa: F401
from . import histogram  # noqa: F401
from . import table  # noqa: F401
from . import quantile  # noqa: F401
from . import centroid  # noqa: F401
from . import point  # noqa: F401
from . import microdata  # noqa: F401
from . import synthetic  # noqa: F401
# isort: on
from .registry import KINDS, register

__all__ = ["KINDS", "OFFERED_KINDS", "VECTOR_KINDS", "kinds_table", "register", "statistic_schema"]

VECTOR_KINDS = tuple(name for name, kind in KINDS.items() if kind.vector)
#: The kinds a new listing's statistics may offer (the point is withdrawn; microdata is a listing of its own;
#: a vector statistic, the centroid, only on the Skellam path, listed alone).
OFFERED_KINDS = tuple(name for name, kind in KINDS.items() if kind.offered)


def statistic_schema() -> dict:
    """The JSON schema of one statistic as sent and stored: the union of the kinds' schemas
    (the point is withdrawn, but stored listings still hold it)."""
    variants = []
    for kind in KINDS.values():
        schema = kind.schema()
        variants += schema["oneOf"] if "oneOf" in schema else [schema]
    return {"oneOf": variants}


def kinds_table() -> str:
    """The docs' table of the kinds a new listing may offer (docs/owners.md, written by
    ``scripts/kinds_table.py``; a test checks it matches): each kind's name, title, what it releases
    (its schema's description) and its fields, required then optional."""
    rows = ["| kind | builder title | what it releases | fields (required; optional) |", "|---|---|---|---|"]
    for name in OFFERED_KINDS:
        kind = KINDS[name]
        schema = kind.schema()
        variants = schema.get("oneOf", [schema])
        text = "; or ".join(v["description"] for v in variants)
        required = [f for f in variants[0]["required"] if f != "kind"]
        optional = [f for v in variants for f in v["properties"] if f not in ("kind", *required, *kind.legacy_fields)]
        optional = list(dict.fromkeys(optional))
        fields = (", ".join(f"`{f}`" for f in required) or "none") + "; " + (", ".join(f"`{f}`" for f in optional) or "none")
        rows.append(f"| `{name}` | {kind.title} | {text} | {fields} |")
    return "\n".join(rows) + "\n"
