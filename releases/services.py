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
from market.core.migration_helpers import append_only_lifted
from market.core.levels import level_text
from market.core.locks import retrying

from .bitpaths import NotOnLadder, bits_points
from .engine import lattice
from .engine.mechanism import new_rng
from .locks import path_lock_by_id
from .models import BitReport, NoisePath, NoisePoint, Release
from .selectors import path_released

log = logging.getLogger(__name__)

#: The lattice path's bit source: ChaCha20 under a key from the operating system (``lattice.new_rng``);
#: tests replace it with a seeded one.
new_bit_source = lattice.new_rng


class ReleaseImpossible(Exception):
    """A release that can never be made (damaged stored data): the caller refunds its purchase."""


def _checkpoint(name: str) -> None:
    """A named point in the release transaction where fault-injection tests stop it."""


def _l2_point_at(path: NoisePath, mechanism, level, ceiling, rng: np.random.Generator) -> NoisePoint:
    """The l2 path's point at ``level``, under the path's row lock.

    The path is sampled from the listing's ceiling down (only that direction
    has a simple exact law), as a jump list (``mechanism.jump``): the first release samples it
    from the ceiling to its level; a level below the known bottom extends it
    (the jump process is memoryless); any other level is read off the list.
    The stored size is the jumps, never one sample per buyer.
    """
    found = NoisePoint.objects.filter(path=path, level=level).first()
    if found:
        return found
    known = _opened(path.jump_list, "the path's stored jump list")
    changed, noise, method = mechanism.jump(known, level, dim=path.dim, ceiling=ceiling, rng=rng)
    if changed is not None:
        path.set_jump_list(*changed)
        path.save(update_fields=["jumps", "updated_at"])
    return _new_point(path, mechanism, level, noise, method)


def _new_point(path: NoisePath, mechanism, level, noise, method: str) -> NoisePoint:
    """Store the path's noise at ``level``, encrypted (market.core.crypto)."""
    point = NoisePoint(path=path, level=level, method=method)
    point.set_noise_of(mechanism.noise, noise)
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


def _point_at(path: NoisePath, mechanism, level, weights, rng, known: _Known) -> NoisePoint:
    """The path's point at ``level``: the stored one, or one new exact step from its nearest
    released neighbours (``mechanism.step``: on the lattice coordinate ``i`` at ``level /
    weights[i]``, ``rng`` anything with ``getrandbits``; on the float path a numpy-like generator).

    Only the nearest released level below and above are read: the step
    depends on nothing else (the path is Markov), so the cost does not grow
    with the number of levels or buyers.
    """
    found, below, above = known.near(level)
    if found:
        return found
    sides = {}
    for name, p in (("below", below), ("above", above)):
        if p is not None:
            noise = _opened(lambda p=p: p.noise_of(mechanism.noise), f"the stored noise at level {level_text(p.level)}")
            if noise.shape[:1] != (path.dim,):
                raise ReleaseImpossible(f"stored noise at level {level_text(p.level)} does not match the listing's statistics")
            sides[name] = (p.level, noise)
    noise, method = mechanism.step(level, dim=path.dim, weights=weights, rng=rng, **sides)
    point = NoisePoint(path=path, level=level, method=method)
    point.set_noise_of(mechanism.noise, noise)
    return known.add(point)


def _answer(listing, path: NoisePath, mechanism) -> np.ndarray:
    """The listing's true answer, opened and checked against its path once per batch."""
    answer = _opened(listing.true_answer, "the listing's stored answer")
    intact = mechanism.intact(answer, dim=path.dim, weights=listing.weights, grids=listing.grids)
    if answer.shape != (path.dim,) or not intact:
        raise ReleaseImpossible("the listing's stored answer is damaged")
    return answer


def _stepped_values(listing, path: NoisePath, mechanism, levels, rng) -> dict:
    """The releases of a path stepped level by level from its released neighbours (the lattice,
    and the float l1 path): per level, its point, the released values (the mechanism's
    ``values``: on the lattice whole steps clamped to the declared range times each value's grid;
    on the float path rounded and clamped) and the noise scales shown."""
    known = _Known(path, levels)
    answer = _answer(listing, path, mechanism)
    rng = rng if rng is not None else _source(mechanism)
    made_at = {}
    for level in levels:
        point = _point_at(path, mechanism, level, listing.weights, rng, known)
        _checkpoint("after_noise")
        made_at[level] = _made(listing, mechanism, point, answer, level)
    known.save()
    return made_at


def _jump_values(listing, path: NoisePath, mechanism, levels, rng) -> dict:
    """The releases of an l2 path, read off (or extended along) its jump list."""
    answer = _answer(listing, path, mechanism)
    rng = rng if rng is not None else _source(mechanism)
    made_at = {}
    for level in levels:
        point = _l2_point_at(path, mechanism, level, listing.ceiling, rng)
        _checkpoint("after_noise")
        made_at[level] = _made(listing, mechanism, point, answer, level)
    return made_at


def _made(listing, mechanism, point: NoisePoint, answer, level) -> tuple[NoisePoint, list, list[float]]:
    noise = _opened(lambda: point.noise_of(mechanism.noise), "the stored noise")
    values = mechanism.values(answer, noise, level=level, weights=listing.weights, lower=listing.lower,
                              upper=listing.upper, grids=listing.grids)
    return point, values, [float(b) for b in listing.noise_scales(level)]


def _source(mechanism):
    """The mechanism's randomness: whole random bits (``new_bit_source``) or floating-point
    uniforms (``new_rng``), both the operating system's; tests replace them with seeded ones."""
    return {"bits": new_bit_source, "floats": new_rng}[mechanism.source]()


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
    batch of orders costs one step per new level. The path's mechanism says how
    (``releases.engine.mechanisms``: its ``store``). ``figures``: what to store
    with the releases of each level (``{level: privacy-at-risk figures}``,
    the caller's, computed once). Returns ``{purchase_id:
    Release}``. Raises :class:`ReleaseImpossible` if a stored answer or noise
    is damaged, or a level cannot be given on the path (the caller's transaction then writes nothing).
    """
    levels = sorted({order.level for order in orders})
    mechanism = path.release_mechanism.bound(listing.plan)  # a calibrated mechanism carries the listing's calibration
    _levels_check(path, listing, mechanism, levels)
    made_at = _STORES[mechanism.store](listing, path, mechanism, levels, rng)
    return _releases_store(path, listing, orders, made_at, figures)


def _levels_check(path: NoisePath, listing, mechanism, levels) -> None:
    """A level the path's mechanism does not give (on the retired float path, one that would draw
    new noise or go above its largest level; on a microdata path, one off its ladder) is
    :class:`ReleaseImpossible`, so that its purchases are refunded (a purchase paid before the
    retirement and still waiting for its release)."""
    for level in levels:
        refusal = mechanism.refusal(level, released=lambda: path_released(path=path),
                                    ladder=lambda: listing.microdata().levels)
        if refusal is not None:
            raise ReleaseImpossible(refusal.impossible)


def _bits_values(listing, path: NoisePath, mechanism, levels, rng) -> dict:
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


#: How each kind of path makes its releases (``Mechanism.store``).
_STORES = {"steps": _stepped_values, "jumps": _jump_values, "ladder": _bits_values}


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
