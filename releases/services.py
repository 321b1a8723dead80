"""Noise points and releases on a path the caller has locked: the marketplace's calls into the engine.

This half of ``releases`` knows nothing of purchases, holdings or money: it is
handed a listing's noise path, already locked (``releases.locks.path_lock``),
and the levels to release, and it reads the neighbouring released levels, takes
one exact step per new level (or reuses a stored one), stores the new points and
the releases, and raises the path's released maximum. The caller
(``market.trading.services.purchase_release``) owns the transaction, the
purchases and their status: the point, the release and the buyer's released
level are committed together. A level is sampled at most once (the lock, and a
unique constraint per path and level).
"""

from __future__ import annotations

import logging
import zlib
from dataclasses import dataclass

import numpy as np
from django.db import connection, transaction

from market.core import crypto
from market.core.crypto import CryptoError, UnknownKeyError
from market.core.levels import level_text
from market.core.migration_helpers import append_only_lifted
from market.core.locks import retrying

from .bitpaths import NotOnLadder, bits_points
from .engine import lattice
from .locks import path_lock_by_id
from .selectors import FLOAT_RETIRED, float_level_open
from .engine.mechanism import l2_at, l2_extend, l2_path, new_rng
from .models import BitReport, NoisePath, NoisePoint, Release
from .engine.path import NoisePath as EnginePath
from .engine.postprocess import snap

log = logging.getLogger(__name__)

#: The lattice path's bit source: the operating system's generator (``secrets.SystemRandom``);
#: tests replace it with a seeded one.
new_bit_source = lattice.new_rng


class ReleaseImpossible(Exception):
    """A release that can never be made (damaged stored data): the caller refunds its purchase."""


def _checkpoint(name: str) -> None:
    """A named point in the release transaction where fault-injection tests stop it."""


def _l2_point_at(path: NoisePath, level, ceiling, rng: np.random.Generator) -> NoisePoint:
    """The l2 path's point at ``level``, under the path's row lock.

    The path is sampled from the listing's ceiling down (only that direction
    has a simple exact law), as a jump list: the first release samples it
    from the ceiling to its level; a level below the known bottom extends it
    (the jump process is memoryless); any other level is read off the list.
    The stored size is the jumps, never one sample per buyer.
    """
    found = NoisePoint.objects.filter(path=path, level=level).first()
    if found:
        return found
    eps, top = float(level), float(ceiling)
    known = _opened(path.jump_list, "the path's stored jump list")
    if known is None:
        levels, values = l2_path(path.dim, top, eps, rng)
        method = "l2 initial"
    else:
        levels, values = known
        method = "l2 lookup"
        if eps < levels[-1]:
            levels, values = l2_extend(levels, values, eps, rng)
            method = "l2 extend"
    if method != "l2 lookup":
        path.set_jump_list(levels, values)
        path.save(update_fields=["jumps", "updated_at"])
    return _new_point(path, level, l2_at(levels, values, eps), method)


def _new_point(path: NoisePath, level, noise, method: str) -> NoisePoint:
    """Store the path's noise at ``level``, encrypted (market.core.crypto)."""
    point = NoisePoint(path=path, level=level, method=method)
    point.set_vector(noise)
    point.save(force_insert=True)
    return point


def _opened(read, what: str):
    """``read()``, with stored data that does not decrypt (damaged, or moved from another row) as
    :class:`ReleaseImpossible` (refunded at once); a key missing from the configuration stays an
    error for the operator (the task is retried, with the reason in the log, as for any other error)."""
    try:
        return read()
    except UnknownKeyError:
        raise
    except CryptoError:
        raise ReleaseImpossible(f"{what} is damaged (it does not decrypt)") from None


class _Known:
    """The path's points a batch of levels can depend on: for each level of the batch, the stored
    point at it and the nearest stored below and above (read in one statement), and the new points
    the batch makes, kept in memory and written together at the end. The nearest known point
    below (above) a level is then its nearest released neighbour below (above), stored or made
    just before it in this batch: the path is Markov, nothing else matters."""

    def __init__(self, path: NoisePath, levels):
        self.points: dict = {}
        self.new: list[NoisePoint] = []
        levels = sorted(set(levels))
        if not levels:
            return
        table = NoisePoint._meta.db_table
        columns = ", ".join(f'"{f.column}"' for f in NoisePoint._meta.concrete_fields)
        part = f'SELECT * FROM (SELECT {columns} FROM "{table}" WHERE "path_id" = %s AND "level" {{}} %s {{}} LIMIT 1) AS p{{}}'
        parts, params = [], []
        field = NoisePoint._meta.get_field("level")
        for i, level in enumerate(levels):
            at = field.get_db_prep_value(level, connection)
            parts += [part.format("=", "", f"{i}a"), part.format("<", 'ORDER BY "level" DESC', f"{i}b"),
                      part.format(">", 'ORDER BY "level" ASC', f"{i}c")]
            params += [path.pk, at] * 3
        for point in NoisePoint.objects.raw(" UNION ALL ".join(parts), params):
            self.points[point.level] = point

    def near(self, level) -> tuple[NoisePoint | None, NoisePoint | None, NoisePoint | None]:
        """The known point at ``level``, and the nearest known below and above."""
        below = max((x for x in self.points if x < level), default=None)
        above = min((x for x in self.points if x > level), default=None)
        return (self.points.get(level), self.points.get(below) if below is not None else None,
                self.points.get(above) if above is not None else None)

    def add(self, point: NoisePoint) -> NoisePoint:
        self.points[point.level] = point
        self.new.append(point)
        return point

    def save(self) -> None:
        """Write the batch's new points (one INSERT)."""
        if self.new:
            NoisePoint.objects.bulk_create(self.new)


def _point_at(path: NoisePath, level, rng: np.random.Generator, known: _Known) -> NoisePoint:
    """The path's point at ``level``: the stored one, or one new exact step from its neighbours.

    Only the nearest released level below and above are read: the step
    depends on nothing else (the path is Markov), so the cost does not grow
    with the number of levels or buyers.
    """
    found, below, above = known.near(level)
    if found:
        return found
    sides = [p for p in (below, above) if p is not None]
    vectors = [_opened(p.vector, f"the stored noise at level {p.level}") for p in sides]
    for p, v in zip(sides, vectors):
        if v.shape != (path.dim,):
            raise ReleaseImpossible(f"stored noise at level {p.level} does not match the listing's statistics")
    engine = EnginePath(path.dim, [float(p.level) for p in sides], vectors if sides else None)
    draw = engine.draw(float(level), rng)
    point = NoisePoint(path=path, level=level, method=draw.method)
    point.set_vector(draw.noise)
    return known.add(point)


def _lattice_point_at(path: NoisePath, level, weights, rng, known: _Known) -> NoisePoint:
    """The lattice path's point at ``level`` (integer noise): the stored one, or one new exact
    step from its nearest released neighbours (``releases.engine.lattice.step``), coordinate ``i`` at
    ``level / weights[i]``. ``rng``: anything with ``getrandbits`` (the operating system's
    generator in the product)."""
    found, below, above = known.near(level)
    if found:
        return found
    sides = {}
    for name, p in (("below", below), ("above", above)):
        if p is not None:
            noise = _opened(p.integers, f"the stored noise at level {p.level}")
            if noise.shape != (path.dim,):
                raise ReleaseImpossible(f"stored noise at level {p.level} does not match the listing's statistics")
            sides[name] = (p.level, noise)
    noise, method = lattice.step(level, weights, rng, **sides)
    point = NoisePoint(path=path, level=level, method=method)
    point.set_integers(noise)
    return known.add(point)


def _answer(listing, path: NoisePath) -> np.ndarray:
    """The listing's true answer, opened and checked against its path once per batch."""
    answer = _opened(listing.true_answer, "the listing's stored answer")
    if path.engine == "lattice":
        intact = len(listing.weights) == path.dim and len(listing.grids or ()) == path.dim
    else:
        intact = len(listing.weights) == path.dim and bool(np.isfinite(answer).all())
    if answer.shape != (path.dim,) or not intact:
        raise ReleaseImpossible("the listing's stored answer is damaged")
    return answer


def _lattice_values(listing, path: NoisePath, answer, level, rng, known: _Known) -> tuple[NoisePoint, list, list[float]]:
    """A lattice release: the point at ``level``, the released values (whole steps clamped to the
    declared range, times each value's grid: ints on an integer grid) and the noise scales shown."""
    point = _lattice_point_at(path, level, [int(w) for w in listing.weights], rng, known)
    _checkpoint("after_noise")
    noise = _opened(point.integers, "the stored noise")
    values = []
    for u, n, low, high, grid in zip(answer.tolist(), noise.tolist(), listing.lower, listing.upper, listing.grid_steps()):
        steps = min(max(int(u) + int(n), int(low)), int(high))
        amount = steps * grid
        values.append(int(amount) if amount == amount.to_integral_value() else float(amount))
    return point, values, [float(b) for b in listing.noise_scales(level)]


def _float_values(listing, path: NoisePath, answer, level, rng, known: _Known) -> tuple[NoisePoint, list[float], list[float]]:
    """A float-path release (listings made before the lattice, and vectors): the point at
    ``level``, the values rounded and clamped (``releases.engine.postprocess.snap``), the noise scales."""
    if path.norm == "l2":
        point = _l2_point_at(path, level, listing.ceiling, rng)
    else:
        point = _point_at(path, level, rng, known)
    _checkpoint("after_noise")
    scales = listing.noise_scales(level)
    noisy = answer + np.asarray(listing.weights, dtype=np.float64) * _opened(point.vector, "the stored noise")
    values = snap(noisy, scales, listing.lower, listing.upper)
    return point, [float(v) for v in np.atleast_1d(values)], [float(b) for b in scales]


@dataclass(frozen=True)
class Order:
    """One release to make: a purchase (by id, the caller's) of ``buyer_id`` at ``level``."""

    purchase_id: object
    buyer_id: int
    level: object


def releases_make(*, path: NoisePath, listing, orders: list[Order], rng=None, figures=None) -> dict:
    """Make one release per order on ``path`` (locked by the caller, in the caller's transaction).

    ``listing`` is the path's listing (its stored answer, weights, ranges and
    grids). Each distinct level is stepped to once, in increasing order, so a
    batch of orders costs one step per new level. ``figures``: what to store
    with the releases of each level (``{level: privacy-at-risk figures}``,
    the caller's, computed once). Returns ``{purchase_id:
    Release}``. Raises :class:`ReleaseImpossible` if a stored answer or noise
    is damaged (the caller's transaction then writes nothing).
    """
    levels = sorted({order.level for order in orders})
    if path.engine == "bits":
        made_at = _bits_values(listing, path, levels, rng)
        return _releases_store(path, listing, orders, made_at, figures)
    known = _Known(path, levels if path.norm != "l2" else ())  # l2 paths keep their jump list
    answer = _answer(listing, path)
    if path.engine == "lattice":
        values_at, rng = _lattice_values, (rng if rng is not None else new_bit_source())
    else:
        _float_levels_check(path, levels)
        values_at, rng = _float_values, (rng if rng is not None else new_rng())
    made_at = {level: values_at(listing, path, answer, level, rng, known) for level in levels}
    known.save()
    return _releases_store(path, listing, orders, made_at, figures)


def _float_levels_check(path: NoisePath, levels) -> None:
    """The float path is retired (``releases.selectors.FLOAT_RETIRED``): a batch that would draw new
    noise on it, or release above its largest level, is :class:`ReleaseImpossible`, so that its
    purchases are refunded (a purchase paid before the retirement and still waiting for its release)."""
    released = list(NoisePoint.objects.filter(path=path).values_list("level", flat=True))
    for level in levels:
        if not float_level_open(norm=path.norm, released=released, released_max=path.released_max, level=level):
            raise ReleaseImpossible(f"{FLOAT_RETIRED}, and level {level_text(level)} was never released on it")


def _bits_values(listing, path: NoisePath, levels, rng) -> dict:
    """A microdata listing's releases (``releases.bitpaths``): per level, its point, the number of
    reports saying 1 for each bit (the release's values: what its decoded counts are read from) and
    each bit's noise scale (``weight / eps``, as for a lattice value)."""
    try:
        made = bits_points(path=path, listing=listing, levels=levels, rng=rng, opened=_opened)
    except (NotOnLadder, ValueError, zlib.error) as exc:
        raise ReleaseImpossible(str(exc)) from None
    _checkpoint("after_noise")
    weight = float(listing.weights[0]) if listing.weights else 1.0
    return {level: (point, list(report.ones), [weight / float(level)] * len(report.ones))
            for level, (point, report) in made.items()}


def _releases_store(path: NoisePath, listing, orders, made_at: dict, figures) -> dict:
    """One release per order from ``made_at`` (``{level: (point, values, scales)}``), and the
    path's released maximum raised: the common end of every engine's release."""
    releases = Release.objects.bulk_create(
        Release(purchase_id=order.purchase_id, listing=listing, buyer_id=order.buyer_id, point=made_at[order.level][0],
                level=order.level, values=made_at[order.level][1], noise_scales=made_at[order.level][2],
                privacy_at_risk=(figures or {}).get(order.level))
        for order in orders
    )
    top = max(made_at)
    if top > path.released_max:
        path.released_max = top
        path.save(update_fields=["released_max", "updated_at"])
    return {release.purchase_id: release for release in releases}


@crypto.register_rotator("stored noise")
def noise_rotate() -> crypto.Rotated:
    """Re-encrypt every path's jump list and noise point under the current key
    (``manage.py rotate_encryption_keys``).

    One path at a time, under the path's row lock (the lock releases take, so none is
    made meanwhile). Noise points are append-only: their trigger is lifted for the
    rewrite only, in the same transaction, and only when the path has a point to
    rewrite; the noise itself never changes. Idempotent (what is already under the
    current key is only checked to open); what does not open is counted as damaged
    and left as it is.
    """
    done = crypto.Rotated()
    for path_id in NoisePath.objects.order_by("pk").values_list("pk", flat=True).iterator():
        counts = retrying(lambda p=path_id: _path_reseal(path_id=p), what="key rotation")
        for name, n in counts.items():
            setattr(done, name, getattr(done, name) + n)
    return done


def _path_reseal(*, path_id: int) -> dict[str, int]:
    counts = {"resealed": 0, "unchanged": 0, "damaged": 0}

    def rewrite(obj, field, context):
        try:
            new = crypto.reseal(getattr(obj, field), context=context)
        except CryptoError:
            counts["damaged"] += 1
            return False
        if new is None:
            counts["unchanged"] += 1
            return False
        setattr(obj, field, new)
        counts["resealed"] += 1
        return True

    with transaction.atomic():
        path = path_lock_by_id(path_id=path_id)
        if path is None:
            return counts
        if path.jumps is not None and rewrite(path, "jumps", path.jumps_context()):
            path.save(update_fields=["jumps"])
        points = NoisePoint.objects.filter(path=path).only("pk", "path_id", "level", "noise").order_by("pk")
        changed = [p for p in points if rewrite(p, "noise", p.noise_context())]
        if changed:
            with append_only_lifted(transaction.get_connection(), NoisePoint._meta.db_table):
                NoisePoint.objects.bulk_update(changed, ["noise"])
        # a bit-report path's reports are sealed too (releases.bitpaths)
        reports = BitReport.objects.filter(point__path=path).only("pk", "point_id", "bits").order_by("pk")
        changed = [r for r in reports if rewrite(r, "bits", r.report_context())]
        if changed:
            with append_only_lifted(transaction.get_connection(), BitReport._meta.db_table):
                BitReport.objects.bulk_update(changed, ["bits"])
    return counts
