"""Bit-report (microdata) paths: their points and reports, on a path the caller has locked.

A microdata listing (``market.catalog.microdata``) sells every record's bits
at the levels of a ladder ``L_1 < ... < L_m`` (``L_m`` its ceiling). Each
record and bit has its own exact lattice path at the per-bit level ``eps /
weight`` (``releases.engine.bitreport``), and all of them are stored together,
one :class:`~releases.models.NoisePoint` per ladder level (the noise of every
record and bit, packed and encrypted).

The paths are sampled **from the top down only**: the first release samples
the top level ``L_m`` and tightens down the ladder to the level bought;
a later level below the lowest sampled one extends the paths downwards (one
tightening step per ladder level, each independent of everything before:
the lattice path's tightening law); any other ladder level is already
stored. So the points always form the top of the ladder down to the lowest
level sold, no level is ever sampled twice, and no step other than
tightening is needed. Releasing any set of levels costs the highest: the
reports at lower levels are the report at the highest's noise plus
independent noise.

The reports of a level (``[bit + noise >= 1]`` for every record and bit) are
made once, when the level is first released, stored as a
:class:`~releases.models.BitReport` beside its point and read by every buyer of
that level: buying the same level twice gives the same bits.
"""

from __future__ import annotations

from decimal import Decimal

import numpy as np

from market.core.levels import level_text

from .engine import bitreport
from .models import BitReport, NoisePath, NoisePoint


class NotOnLadder(ValueError):
    """A level that is not one of the listing's ladder levels."""


def _source(rng):
    """The bit source: the operating system's (``bitreport.new_source``) unless a test hands one
    (a ``WordSource``, or a seeded numpy generator)."""
    if rng is None:
        return bitreport.new_source()
    if isinstance(rng, bitreport.WordSource):
        return rng
    if isinstance(rng, np.random.Generator):
        return bitreport.WordSource.from_generator(rng)
    return bitreport.new_source()


def bits_points(*, path: NoisePath, listing, levels, rng=None, opened=lambda read, what: read()) -> dict:
    """The point and report of each of ``levels`` (ladder levels of ``listing``'s microdata),
    sampling and storing what is missing under the caller's lock and transaction. Returns
    ``{level: (point, report)}``. ``opened(read, what)``: how stored secrets are opened (the
    caller turns damaged ones into a refusal)."""
    md = listing.microdata()
    ladder = list(md.levels)
    shape = (md.records, md.bits)
    for level in levels:
        if Decimal(level) not in ladder:
            raise NotOnLadder(f"level {level_text(level)} is not on the listing's ladder "
                              f"({', '.join(level_text(at) for at in ladder)})")
    stored = {p.level: p for p in NoisePoint.objects.filter(path=path).defer("noise")}
    lowest = ladder.index(min(Decimal(level) for level in levels))
    src = None
    noise: dict[Decimal, np.ndarray] = {}
    new_points: list[NoisePoint] = []
    # the stored points are the top of the ladder down to some level: extend them down to ``lowest``
    start = next((i for i, level in enumerate(ladder) if level in stored), None)
    if start is None or start > lowest:
        src = _source(rng)
        if start is None:
            top = ladder[-1]
            current = bitreport.sample(md.bit_level(top), shape, src)
            noise[top] = current
            new_points.append(_point(path, top, current, "bits top"))
            start = len(ladder) - 1
        else:
            current = _noise(stored[ladder[start]], shape, opened)
            noise[ladder[start]] = current
        for i in range(start - 1, lowest - 1, -1):
            hi, lo = ladder[i + 1], ladder[i]
            current = bitreport.tighten(current, md.bit_level(hi), md.bit_level(lo), src)
            noise[lo] = current
            new_points.append(_point(path, lo, current, "bits tighten"))
    for point in new_points:
        point.save(force_insert=True)
        stored[point.level] = point
    truth = None
    out = {}
    reports = {r.point_id: r for r in BitReport.objects.filter(point__in=[stored[Decimal(v)] for v in levels]).defer("bits")}
    for level in sorted({Decimal(v) for v in levels}):
        point = stored[level]
        report = reports.get(point.pk)
        if report is None:
            if truth is None:
                truth = opened(listing.truth_bits, "the listing's stored records")
                if truth.shape != shape:
                    raise ValueError("the listing's stored records do not match its microdata")
            values = noise.get(level)
            if values is None:
                values = _noise(point, shape, opened)
            z = bitreport.report(truth, values)
            report = BitReport(point=point, ones=[int(x) for x in z.sum(axis=0, dtype=np.int64)])
            report.set_reports(z)
            report.save(force_insert=True)
        out[level] = (point, report)
    return out


def _point(path: NoisePath, level, values: np.ndarray, method: str) -> NoisePoint:
    point = NoisePoint(path=path, level=level, method=method)
    point.set_packed_noise(bitreport.pack_noise(values))
    return point


def _noise(point: NoisePoint, shape, opened) -> np.ndarray:
    if "noise" in point.get_deferred_fields():
        point.refresh_from_db(fields=["noise"])
    values = opened(lambda: bitreport.unpack_noise(point.packed_noise(), shape), f"the stored noise at level {level_text(point.level)}")
    return values
