"""JSON-schema fragments the kinds build their schemas from (``Kind.schema``)."""

from __future__ import annotations

_S_NUMBER = {"type": "number"}
_S_NAME = {"type": "string"}
_S_CONSTANT = {"oneOf": [{"type": "number"}, {"type": "string"}, {"type": "boolean"}]}
_S_WHERE = {
    "type": "array", "maxItems": 10,
    "description": "conditions all records read must meet; constants are typed to the column "
                   "(numbers, text, true/false, ISO dates); a missing value meets only 'is missing'",
    "items": {
        "title": "Condition",
        "type": "object",
        "properties": {
            "column": _S_NAME,
            "op": {"title": "ConditionOp", "type": "string",
                   "enum": list(("=", "in", "<", "<=", ">", ">=", "between", "is missing"))},
            "value": _S_CONSTANT,
            "values": {"type": "array", "items": _S_CONSTANT, "minItems": 1, "maxItems": 100},
        },
        "required": ["column", "op"],
        "additionalProperties": False,
    },
}
_S_GRID = {"oneOf": [{"type": "number"}, {"type": "string", "pattern": r"^\d+(\.\d+)?$"}],
           "description": "the lattice path's rounding: each value is rounded to a multiple of this "
                          "(e.g. 0.01 or 1); default: the smallest power of ten with at most a million "
                          "steps in the bounds (1 at least for an integer column)"}
_S_CATEGORIES = {"type": "array", "items": {"oneOf": [{"type": "string"}, {"type": "boolean"}]},
                 "minItems": 1, "maxItems": 100}
_S_BIN = {"title": "DateBin", "type": "string", "enum": ["month", "year"]}
_S_PERIOD = {"type": "string", "description": "YYYY-MM for months, YYYY for years; both ends included"}
S_CONFIRM = {"type": "boolean", "description": "true to confirm that the categories declared here are public: buyers "
             "see them, and which values occur in your data is itself private. Required (true) whenever categories are "
             "declared; never stored"}
_S_BY = {
    "by": {"type": "string", "description": "group by this categorical, boolean or date column"},
    "categories": {**_S_CATEGORIES, "description": "the categories of 'by' you declare public (others fall in 'other')"},
    "categories_public": S_CONFIRM,
    "bin": _S_BIN, "from": _S_PERIOD, "to": _S_PERIOD,
}


def _object(kind: str, properties: dict, required: tuple[str, ...], description: str, title: str = "") -> dict:
    """An object schema of one kind, with no other properties. Its ``title`` (by default
    ``CountStatistic`` for "count") names it in the API's schema: ``market.api.schema.named_schemas``
    makes each titled schema one component, its plain one-value ``kind`` enum another."""
    title = title or f"{kind.capitalize()}Statistic"
    return {
        "title": title,
        "type": "object",
        "description": description,
        "properties": {"kind": {"title": f"{title}Kind", "type": "string", "enum": [kind]}, **properties},
        "required": ["kind", *required],
        "additionalProperties": False,
    }


#: One column of a microdata listing as it is stored and shown (``market.catalog.microdata.Field.stored``).
MICRODATA_COLUMN = {
    "title": "MicrodataColumn",
    "type": "object",
    "properties": {
        "column": _S_NAME,
        "encoding": {"type": "string", "enum": ["onehot", "bloom"]},
        "categories": _S_CATEGORIES,
        "labels": {"type": "array", "items": _S_NAME, "description": "one per bit"},
        "weight": {"type": "integer", "description": "the most of its bits one record change flips"},
        "other": {"type": "boolean"},
        "missing": {"type": "boolean"},
        "bloom": {"title": "BloomFilter", "type": "object", "required": ["bits", "hashes"],
                  "properties": {"bits": {"type": "integer"}, "hashes": {"type": "integer"}}},
    },
    "required": ["column", "encoding", "labels", "weight", "other", "missing"],
}


