"""A synthetic-data release's rows (docs/mathematics.md §19): drawn from the release's noisy tables
alone (``releases.engine.synthetic``), so they cost nothing beyond its level.

The same level always gives the same rows: the draw's random order comes from ChaCha20 keyed by a
secret of that level (a hash of the path's noise at it, which never changes and which only the server
knows), so every buyer of the level, and every download, gets the same file. Codes are read back as
values: a category as itself (or ``other``), a number as a value drawn evenly within its bin (the
declared edges bound the first and last bins), a missing value as empty.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

import numpy as np

from releases.engine.keystream import keyed_words
from releases.engine.osrandom import OSRandom
from releases.engine.synthetic import Workload, synthesize

from .spec import KINDS
from .spec.kinds.synthetic import _named, model_of, sizes_of

#: What the rows' key is derived under (a new version gives new rows for every level).
KEY_CONTEXT = b"gradual synthetic rows v1"


@dataclass(frozen=True)
class Rows:
    """The rows of one level: ``names`` the columns, ``arrays`` one per column (strings, booleans or
    floats; None where missing)."""

    names: list[str]
    arrays: list[list]

    def table(self):
        import pyarrow as pa

        return pa.table({name: pa.array(values) for name, values in zip(self.names, self.arrays)})


def sells_rows(listing) -> bool:
    """Whether ``listing`` sells synthetic rows (its one statistic's kind says so)."""
    statistics = listing.statistics or []
    return len(statistics) == 1 and getattr(KINDS.get(statistics[0].get("kind")), "sells_rows", False)


def _decoded(entry: dict, codes: np.ndarray, rng: OSRandom) -> list:
    if "bins" in entry:
        edges = np.asarray(entry["bins"], dtype=np.float64)
        bins = len(edges) - 1
        inside = codes < bins
        low = edges[np.minimum(codes, bins - 1)]
        high = edges[np.minimum(codes, bins - 1) + 1]
        values = low + (high - low) * rng.random(codes.size)
        return [float(v) if ok else None for v, ok in zip(values, inside)]
    names = _named(entry)
    return [names[c] if c < len(names) else None for c in codes]


def _codes(plan, values, key: bytes, level):
    """``(stat, sizes, workload, codes, rng)``: the codes drawn from ``values`` (released at ``level``)
    under ``key`` (the rng continues, for the values read from the codes); ``plan`` the listing's
    (``selectors.listing_plan``). From model 2 on, the estimate knows the level's noise variance (public)."""
    stat = plan.statistics[0]
    sizes = sizes_of(stat, plan.labels)
    workload = Workload(sizes)
    if workload.width != len(values):
        raise ValueError("the release's values are not this listing's tables")
    rng = OSRandom(words=keyed_words(key))
    total = float(plan.neighbours.size) if plan.neighbours.public else None
    variance = ([plan.variance(i, level) for i in range(workload.width)] if model_of(stat) >= 2 else None)
    codes = synthesize(np.asarray(values, dtype=np.float64), workload, total=total, variance=variance, rng=rng)
    return stat, sizes, workload, codes, rng


def rows(plan, values, key: bytes, level) -> Rows:
    """The rows of a release whose released values are ``values`` at ``level``, drawn under ``key``; ``plan``
    its listing's."""
    stat, _, _, codes, rng = _codes(plan, values, key, level)
    names = [entry["column"] for entry in stat["columns"]]
    return Rows(names, [_decoded(entry, codes[:, i], rng) for i, entry in enumerate(stat["columns"])])


def key_of(point) -> bytes:
    """The secret the rows of ``point``'s level are drawn under: a hash of its noise (never changes)."""
    from market.core import crypto

    secret = crypto.unseal(bytes(point.noise), context=point.noise_context())
    return hmac.new(secret, KEY_CONTEXT, hashlib.sha256).digest()


def delivered_quality(listing, plan) -> list[dict]:
    """Per level released, the rows' average 2-way TVD against the data's true tables, and their number:
    what only the owner sees (the true tables are the listing's secret answer)."""
    from releases.engine.synthetic import tables_tvd
    from releases.models import NoisePoint, Release

    truth = np.asarray(listing.true_answer(), dtype=np.float64)
    out = []
    points = NoisePoint.objects.filter(path__listing=listing).order_by("level")
    for point in points:
        release = Release.objects.filter(point=point).only("values").first()
        if release is None:
            continue
        _, _, workload, codes, _ = _codes(plan, release.values, key_of(point), point.level)
        out.append({"level": point.level, "tvd": tables_tvd(workload.measure(codes), truth, workload),
                    "rows": int(codes.shape[0])})
    return out
