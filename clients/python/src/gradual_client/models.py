"""The API's answers as plain frozen dataclasses.

Money, levels (epsilon) and budgets are :class:`decimal.Decimal` (the API sends them as decimal text);
released values, noise scales and error bounds are numbers as the API sends them (a count is an ``int``).
Every object keeps the answer it was read from in ``raw`` (not compared, not shown), so fields this
version does not know are still at hand.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - typing only
    import pandas  # type: ignore[import-untyped, unused-ignore]

Json = Mapping[str, Any]


def _decimal(value: Any) -> Decimal | None:
    return None if value is None or value == "" else Decimal(str(value))


def _required_decimal(value: Any) -> Decimal:
    number = _decimal(value)
    if number is None:
        raise ValueError("a decimal was expected, got nothing")
    return number


def _time(value: Any) -> datetime | None:
    if not value:
        return None
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def _raw() -> Any:
    return field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class Listing:
    id: int
    title: str
    description: str
    owner: str
    statistics: tuple[Mapping[str, Any], ...]
    labels: tuple[str, ...]
    engine: str
    #: the listing's total: the highest level sold (buyable_ceiling) plus its size release's level
    ceiling: Decimal
    price_curve: Mapping[str, Any]
    your_level: Decimal | None
    your_cap: Decimal | None
    is_open: bool
    closed_reason: str
    relation: str
    public_size: int | None
    protects: str
    created_at: datetime | None
    raw: Json = _raw()
    #: the highest level buyers may buy (the ceiling less size_level)
    buyable_ceiling: Decimal | None = None
    #: the level of the listing's size release (0: none)
    size_level: Decimal | None = None
    #: the public noisy count of each mean cell: {"level", "confidence", "error_bound", "cells": [{"label", "value",
    #: "note"}]}, or None
    size_release: Mapping[str, Any] | None = None
    #: lattice (exactly eps-DP), skellam ((eps, delta)-DP, Gaussian-like), bits, or a retired float path
    mechanism: str | None = None
    #: the delta of every level sold, as text ("1e-9"); None: exactly eps-DP
    delta: str | None = None
    #: the levels a listing sold on a ladder offers (the Skellam path), lowest first; None: any level up to its ceiling
    levels: tuple[Decimal, ...] | None = None
    #: ready (sold); yours only: preparing (its answer being computed over a large table) or failed (see failure)
    status: str = "ready"
    #: why your listing could not be prepared (status failed; else empty)
    failure: str = ""

    @classmethod
    def from_json(cls, data: Json) -> Listing:
        return cls(
            id=int(data["id"]),
            title=str(data.get("title", "")),
            description=str(data.get("description", "")),
            owner=str(data.get("owner", "")),
            statistics=tuple(data.get("statistics") or ()),
            labels=tuple(data.get("labels") or ()),
            engine=str(data.get("engine", "")),
            ceiling=_required_decimal(data["ceiling"]),
            price_curve=dict(data.get("price_curve") or {}),
            your_level=_decimal(data.get("your_level")),
            your_cap=_decimal(data.get("your_cap")),
            is_open=bool(data.get("is_open", True)),
            closed_reason=str(data.get("closed_reason") or ""),
            relation=str(data.get("relation", "")),
            public_size=data.get("public_size"),
            protects=str(data.get("protects", "")),
            created_at=_time(data.get("created_at")),
            raw=data,
            buyable_ceiling=_decimal(data.get("buyable_ceiling")),
            size_level=_decimal(data.get("size_level")),
            size_release=data.get("size_release"),
            mechanism=data.get("mechanism"),
            delta=data.get("delta"),
            levels=None if data.get("levels") is None else tuple(_required_decimal(v) for v in data["levels"]),
            status=str(data.get("status") or "ready"),
            failure=str(data.get("failure") or ""),
        )


@dataclass(frozen=True)
class Accuracy:
    """One released value's noise at a quoted level."""

    label: str
    noise_scale: float
    error_bound: float


@dataclass(frozen=True)
class StatisticBound:
    """One statistic's 95% error bound at a quoted level (a mean once, though released as a sum and a count)."""

    name: str
    kind: str
    error_bound: float
    assumes_records: int | None
    #: a mean cell too small for any useful estimate (error_bound is then the whole range)
    too_few: bool = False
    #: "" or what the figure says of its cell ("too few records to estimate", "other: ...")
    note: str = ""


@dataclass(frozen=True)
class Quote:
    listing: int
    epsilon: Decimal
    current_level: Decimal
    ceiling: Decimal
    cap: Decimal
    cap_reason: str
    #: on a trust-capped listing, what is bounded for your whole trust tier on the dataset ("" otherwise)
    cap_bound: str
    price: Decimal
    accuracy: tuple[Accuracy, ...]
    statistics: tuple[StatisticBound, ...]
    #: the targets the level was chosen for, as (statistic name or None for all, bound); None: you named the level
    target: tuple[tuple[str | None, Decimal], ...] | None
    #: a plain sentence when, at this level, answers would be mostly noise (an interval wider than the range
    #: the true value can take); "" otherwise
    warning: str = ""
    raw: Json = _raw()

    @classmethod
    def from_json(cls, data: Json) -> Quote:
        target = data.get("target")
        return cls(
            listing=int(data["listing"]),
            epsilon=_required_decimal(data["epsilon"]),
            current_level=_required_decimal(data["current_level"]),
            ceiling=_required_decimal(data["ceiling"]),
            cap=_required_decimal(data["cap"]),
            cap_reason=str(data.get("cap_reason", "")),
            cap_bound=str(data.get("cap_bound") or ""),
            price=_required_decimal(data["price"]),
            accuracy=tuple(
                Accuracy(label=str(a["label"]), noise_scale=float(a["noise_scale"]), error_bound=float(a["error_bound"]))
                for a in data.get("accuracy") or ()
            ),
            statistics=tuple(
                StatisticBound(
                    name=str(s["name"]), kind=str(s["kind"]), error_bound=float(s["error_bound"]),
                    assumes_records=s.get("assumes_records"), too_few=bool(s.get("too_few", False)),
                    note=str(s.get("note") or ""),
                )
                for s in data.get("statistics") or ()
            ),
            target=None if target is None else tuple((t.get("name"), _required_decimal(t["error_bound"])) for t in target),
            warning=str(data.get("warning") or ""),
            raw=data,
        )


@dataclass(frozen=True)
class Reading:
    """One released value: a statistic's (or one group's, bin's or cell's) label, its value and its error."""

    label: str
    kind: str
    value: float | int
    noise_scale: float
    error_bound: float
    #: a mean cell's words: "" or "too few records to estimate", or what its "other" cell holds
    note: str = ""


#: the columns of a release's DataFrame, one row per released value
FRAME_COLUMNS = ("release", "listing", "level", "label", "kind", "value", "error_bound", "noise_scale", "note")


@dataclass(frozen=True)
class Release:
    id: str
    listing: int
    purchase: str
    level: Decimal
    values: tuple[Reading, ...]
    #: where the release's exact guarantee is (a path of the API)
    privacy_profile: str
    privacy_at_risk: Mapping[str, Any] | None
    created_at: datetime | None
    raw: Json = _raw()

    @classmethod
    def from_json(cls, data: Json) -> Release:
        return cls(
            id=str(data["id"]),
            listing=int(data["listing"]),
            purchase=str(data.get("purchase", "")),
            level=_required_decimal(data["level"]),
            values=tuple(
                Reading(
                    label=str(v["label"]), kind=str(v.get("kind", "")), value=v["value"],
                    noise_scale=float(v["noise_scale"]), error_bound=float(v["error_bound"]),
                    note=str(v.get("note") or ""),
                )
                for v in data.get("values") or ()
            ),
            privacy_profile=str(data.get("privacy_profile") or ""),
            privacy_at_risk=data.get("privacy_at_risk"),
            created_at=_time(data.get("created_at")),
            raw=data,
        )

    def rows(self) -> list[dict[str, Any]]:
        """One dict per released value: release, listing, level, label, kind, value, error_bound, noise_scale, note."""
        return [
            {"release": self.id, "listing": self.listing, "level": self.level, "label": v.label, "kind": v.kind,
             "value": v.value, "error_bound": v.error_bound, "noise_scale": v.noise_scale, "note": v.note}
            for v in self.values
        ]

    @property
    def files(self) -> dict[str, dict[str, str]]:
        """What this release offers to download besides its values, as ``{name: {format: API path}}``: a microdata
        release's ``{"records": {"csv": ..., "parquet": ...}}``. Read from the answer's ``<name>_<format>`` links
        (``microdata.records_csv``, ...), so a later kind of file (synthetic rows) is found the same way."""
        found: dict[str, dict[str, str]] = {}
        for part in self.raw.values():
            if not isinstance(part, Mapping):
                continue
            for field_name, link in part.items():
                name, _, fmt = str(field_name).rpartition("_")
                if name and fmt and isinstance(link, str) and link.startswith("/api/"):
                    found.setdefault(name, {})[fmt] = link
        return found

    def value(self, label: str) -> float | int:
        """The released value with this label (KeyError if there is none)."""
        for reading in self.values:
            if reading.label == label:
                return reading.value
        raise KeyError(label)

    def to_frame(self) -> pandas.DataFrame:
        """A pandas DataFrame, one row per released value (needs pandas: ``pip install gradual-client[pandas]``)."""
        return releases_to_frame([self])


def releases_to_frame(releases: Iterable[Release]) -> pandas.DataFrame:
    """One DataFrame for many releases, one row per released value (columns: ``FRAME_COLUMNS``; ``level`` as a
    float, the exact Decimal stays on the Release)."""
    try:
        import pandas  # type: ignore[import-untyped, unused-ignore]
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("DataFrames need pandas: pip install 'gradual-client[pandas]'") from exc
    rows = [row for release in releases for row in release.rows()]
    frame = pandas.DataFrame(rows, columns=list(FRAME_COLUMNS))
    frame["level"] = frame["level"].astype(float)
    return frame


@dataclass(frozen=True)
class Purchase:
    id: str
    listing: int
    level_from: Decimal
    epsilon: Decimal
    price: Decimal
    #: queued, computing, released or failed
    status: str
    failure_reason: str
    created_at: datetime | None
    release: Release | None
    #: only when the marketplace could not reach its release queue: the release follows later
    note: str | None = None
    raw: Json = _raw()

    PENDING = ("queued", "computing")

    @classmethod
    def from_json(cls, data: Json) -> Purchase:
        release = data.get("release")
        return cls(
            id=str(data["id"]),
            listing=int(data["listing"]),
            level_from=_required_decimal(data["level_from"]),
            epsilon=_required_decimal(data["epsilon"]),
            price=_required_decimal(data["price"]),
            status=str(data["status"]),
            failure_reason=str(data.get("failure_reason") or ""),
            created_at=_time(data.get("created_at")),
            release=Release.from_json(release) if release else None,
            note=data.get("note"),
            raw=data,
        )

    @property
    def pending(self) -> bool:
        return self.status in self.PENDING

    @property
    def released(self) -> bool:
        return self.status == "released"

    @property
    def failed(self) -> bool:
        return self.status == "failed"


@dataclass(frozen=True)
class Wallet:
    balance: Decimal
    currency: str
    raw: Json = _raw()

    @classmethod
    def from_json(cls, data: Json) -> Wallet:
        return cls(balance=_required_decimal(data["balance"]), currency=str(data.get("currency", "credits")), raw=data)


@dataclass(frozen=True)
class Earnings:
    """Owners: earnings not yet paid out, payouts asked for and payouts paid."""

    balance: Decimal
    requested: Decimal
    paid: Decimal
    currency: str
    raw: Json = _raw()

    @classmethod
    def from_json(cls, data: Json) -> Earnings:
        return cls(balance=_required_decimal(data["balance"]), requested=_required_decimal(data["requested"]),
                   paid=_required_decimal(data["paid"]), currency=str(data.get("currency", "credits")), raw=data)


@dataclass(frozen=True)
class StatementLine:
    """One movement of your wallet (or earnings), with the balance once it was made."""

    transfer: str
    kind: str
    memo: str
    description: str
    amount: Decimal
    balance_after: Decimal
    at: datetime | None
    raw: Json = _raw()

    @classmethod
    def from_json(cls, data: Json) -> StatementLine:
        return cls(
            transfer=str(data.get("transfer", "")),
            kind=str(data.get("kind", "")),
            memo=str(data.get("memo", "")),
            description=str(data.get("description", "")),
            amount=_required_decimal(data["amount"]),
            balance_after=_required_decimal(data["balance_after"]),
            at=_time(data.get("at")),
            raw=data,
        )


@dataclass(frozen=True)
class Dataset:
    """One of your datasets (owners)."""

    id: str
    name: str
    #: processing, ready or failed
    status: str
    progress: Mapping[str, Any] | None
    failure: tuple[str, ...]
    columns: tuple[Mapping[str, Any], ...]
    row_count: int | None
    budget: Decimal
    ceilings_total: Decimal
    spent: Decimal
    relation: str
    created_at: datetime | None
    raw: Json = _raw()
    #: the dataset's delta as text ("1e-6"); None: its listings are exactly eps-DP and their ceilings add up
    delta: str | None = None
    #: with a delta: what its listings spend composed at their ceilings, {"delta", "epsilon"}; else None
    composed: Mapping[str, Any] | None = None

    @classmethod
    def from_json(cls, data: Json) -> Dataset:
        return cls(
            id=str(data["id"]),
            name=str(data.get("name", "")),
            status=str(data.get("status", "")),
            progress=data.get("progress"),
            failure=tuple(data.get("failure") or ()),
            columns=tuple(data.get("columns") or ()),
            row_count=data.get("row_count"),
            budget=_required_decimal(data.get("budget", data.get("total_budget"))),
            ceilings_total=_decimal(data.get("ceilings_total")) or Decimal(0),
            spent=_decimal(data.get("spent")) or Decimal(0),
            relation=str(data.get("relation", "")),
            created_at=_time(data.get("created_at")),
            raw=data,
            delta=data.get("delta"),
            composed=data.get("composed"),
        )

    @property
    def column_names(self) -> list[str]:
        return [str(c["name"]) for c in self.columns]

