"""A listing's statistics held to their JSON schema, with every fault said in words.

The schema of one statistic is a ``oneOf`` over the kinds (``market.catalog.spec.statistic_schema``),
and the validator's own message for a bad item is only "... is not valid under any of the given
schemas". Here the item's ``kind`` picks its kind's schema (of a kind with several shapes, such as
a histogram of numbers or of dates, the shape the item resembles most), and that schema's faults are
said as the owner's builder says them: which statistic (its number and kind), which field, and why,
e.g. "statistic 1 (mean): lower and upper are required: the bounds each value is clamped to".
"""

from __future__ import annotations

from jsonschema import Draft4Validator

from market.catalog.spec import KINDS, MAX_STATISTICS, expected_kinds

__all__ = ["FIELD_WORDS", "statistics_errors"]

#: What a field is, in the words of the owner's builder (else the schema's own description).
FIELD_WORDS = {
    "column": "the number column it reads",
    "lower": "the bounds each value is clamped to",
    "upper": "the bounds each value is clamped to",
    "grid": "the rounding of the exact lattice path, a decimal such as 0.01 or 1",
    "bins": "the bin edges, in increasing order, such as 0, 18, 65, 100",
    "quantiles": "the fractions to read, such as 0.5 or 0.25, 0.5, 0.75",
    "by": "the categorical, boolean or date column it is grouped by",
    "categories": "the categories of the group-by column you declare public",
    "rows": "the categorical column of the table's rows",
    "columns": "the categorical column of the table's columns",
    "row_categories": "the row categories you declare public",
    "column_categories": "the column categories you declare public",
    "bin": "month or year",
    "from": "the first period, YYYY-MM for months or YYYY for years",
    "to": "the last period, YYYY-MM for months or YYYY for years",
    "categories_public": "true, to confirm the declared categories are public",
    "where": "the conditions the records it reads must meet",
    "op": "the condition's operator",
    "value": "the condition's constant",
    "values": "the condition's constants",
}

_TYPES = {
    "number": "a number", "integer": "a whole number", "string": "a text", "boolean": "true/false",
    "array": "a list", "object": "an object", "null": "null",
}


def _and(words: list[str], last: str = "and") -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + f" {last} " + words[-1]


def _shown(value) -> str:
    """A value as a sentence may quote it: never a whole object or list."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _path(path) -> str:
    """Where in the statistic: "lower", "categories[2]", "where[1].op" (positions from 1)."""
    out = ""
    for part in path:
        out += f"[{part + 1}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _accepted(schema: dict) -> str:
    """What a schema accepts, in words ("a text or true or false", "one of month or year")."""
    if "enum" in schema:
        return "one of " + _and([_shown(v) for v in schema["enum"]], "or")
    if "oneOf" in schema:
        return _and(list(dict.fromkeys(_accepted(s) for s in schema["oneOf"])), "or")
    kind = schema.get("type")
    if kind == "string" and "pattern" in schema:
        return "a decimal number such as 0.01" if r"\d" in schema["pattern"] else "a text in the documented form"
    return _TYPES.get(kind, "a value of the documented form")


def _meaning(field: str, schema: dict) -> str:
    return FIELD_WORDS.get(field) or schema.get("properties", {}).get(field, {}).get("description", "")


def _sentence(error, schema: dict) -> str:
    """One schema fault of a statistic in words, without the statistic's name."""
    where = _path(error.path)
    about = f"{where} " if where else ""
    kind, value, instance = error.validator, error.validator_value, error.instance
    if kind == "required":
        missing = [f for f in value if isinstance(instance, dict) and f not in instance]
        meanings = list(dict.fromkeys(m for m in (_meaning(f, error.schema) for f in missing) if m))
        verb = "is" if len(missing) == 1 else "are"
        prefix = f"{where}: " if where else ""
        return f"{prefix}{_and(missing)} {verb} required" + (f": {'; '.join(meanings)}" if meanings else "")
    if kind == "additionalProperties":
        known = [f for f in error.schema.get("properties", {}) if f != "kind"]
        extra = [f for f in instance if f not in error.schema.get("properties", {})]
        takes = f" (it takes {_and(known, 'or')})" if known else " (it takes no other field)"
        prefix = f"{where}: " if where else ""
        return f"{prefix}unknown field{'s' if len(extra) > 1 else ''} {_and([repr(f) for f in extra])}{takes}"
    if kind in ("type", "oneOf", "enum", "pattern"):
        return f"{about}must be {_accepted(error.schema)}, got {_shown(instance)}".lstrip()
    if kind == "minItems":
        return f"{about}must list at least {value} value{'s' if value != 1 else ''}"
    if kind == "maxItems":
        return f"{about}lists {len(instance)} values; at most {value} are allowed"
    if kind in ("minimum", "maximum"):
        strict = error.schema.get("exclusiveMinimum" if kind == "minimum" else "exclusiveMaximum", False)
        side = {("minimum", False): "at least", ("minimum", True): "above",
                ("maximum", False): "at most", ("maximum", True): "below"}[kind, bool(strict)]
        return f"{about}must be {side} {value}, got {_shown(instance)}"
    return f"{about}is not of the documented form (got {_shown(instance)})"


def _variant(item: dict, variants: list[dict]) -> tuple[dict, list]:
    """The variant of a kind the item resembles most (most of its fields known, then fewest faults),
    with the item's faults against it."""
    scored = []
    for order, variant in enumerate(variants):
        errors = sorted(Draft4Validator(variant).iter_errors(item), key=lambda e: (len(e.path), list(e.path)))
        known = sum(1 for f in item if f in variant.get("properties", {}))
        scored.append((-known, len(errors), order, variant, errors))
    _, _, _, variant, errors = min(scored, key=lambda s: s[:3])
    return variant, errors


def _statistic_errors(item, number: int) -> list[str]:
    if not isinstance(item, dict):
        return [f"statistic {number} must be an object with a kind ({expected_kinds()}), got {_shown(item)}"]
    kind = item.get("kind")
    if "kind" not in item:
        return [f"statistic {number}: kind is required ({expected_kinds()})"]
    if not isinstance(kind, str) or kind not in KINDS:
        return [f"statistic {number}: unknown kind {_shown(kind)} (expected {expected_kinds()})"]
    schema = KINDS[kind].schema()
    variant, errors = _variant(item, schema.get("oneOf") or [schema])
    seen: list[str] = []
    for error in errors:
        sentence = f"statistic {number} ({kind}): {_sentence(error, variant)}"
        if sentence not in seen:
            seen.append(sentence)
    return seen


def statistics_errors(data) -> list[str]:
    """Every fault of a list of statistics against its schema, in words (empty: none)."""
    if not isinstance(data, list):
        return [f"the statistics must be a list of statistics, each an object with a kind, got {_shown(data)}"]
    if not data:
        return ["the list of statistics is empty"]
    if len(data) > MAX_STATISTICS:
        return [f"at most {MAX_STATISTICS} statistics are allowed, got {len(data)}"]
    out: list[str] = []
    for number, item in enumerate(data, start=1):
        out += _statistic_errors(item, number)
    return out
