"""Distances in an owner's trust network, and the map from a distance to a cap.

An edge list is a sequence of ``(a, b, weight)``: an undirected edge between
two differently named nodes with a finite weight > 0. From one node, the
``source`` (the owner's own organisation), two distances are offered:

- :func:`shortest_distances`: the weighted shortest-path length, the weights
  read as lengths (Dijkstra, ``scipy.sparse.csgraph.dijkstra``);
- :func:`resistance_distances`: the effective resistance of the network seen
  as an electrical circuit, the weights read as conductances, from the
  Moore-Penrose pseudo-inverse ``L+`` of the weighted graph Laplacian of the
  source's connected component: ``R_ab = L+_aa + L+_bb - 2 L+_ab``. Many
  paths between two nodes bring them closer; with shortest paths, only the
  best path counts.

Both return a distance for every node of the graph, and for the source, which
is a node even when no edge touches it (at distance 0 from itself); a node not
connected to the source is at ``math.inf``. Distances are rounded to
:data:`DISTANCE_PLACES` decimal places: that drops the noise of floating-point
sums and of the pseudo-inverse (about 1e-15 relative), so that a distance of
exactly 1 reads 1, not 0.9999999999999996 (whose cap would round down to
the next lower step). Parallel edges between the same
two nodes are allowed: the shortest path takes the shorter, the resistance
adds their conductances (parallel resistors).

:func:`cap_for` maps a distance ``d >= 0`` to the highest privacy level a
buyer at that distance may buy, decreasing in ``d`` and equal to the ceiling
at 0: ``"exp"``: ``ceiling * exp(-lambda * d)``, ``"inverse"``:
``ceiling / (1 + d)``; rounded down to 4 decimal places, so a cap never
exceeds the map. Deciding the distance of a buyer outside the network is the
caller's business.

This module is plain numpy/scipy; it does not import Django. Every function
raises ``ValueError`` with a clear message for an input it cannot use.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable
from decimal import ROUND_DOWN, Decimal, localcontext

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components, dijkstra

__all__ = [
    "DISTANCE_PLACES",
    "Edge",
    "MAP_KINDS",
    "cap_for",
    "cap_formula",
    "plain",
    "resistance_distances",
    "shortest_distances",
]

#: ``(a, b, weight)``: an undirected edge.
Edge = tuple[str, str, float]

#: Decimal places kept in a distance.
DISTANCE_PLACES = 10

#: The maps from a distance to a cap.
MAP_KINDS = ("exp", "inverse")

_CAP_QUANTUM = Decimal("0.0001")


def _graph(edges: Iterable[Edge], source: str, combine) -> tuple[list[str], int, coo_matrix]:
    """The nodes (source first), the source's index, and the upper-triangular
    weight matrix, the weights of parallel edges merged by ``combine(w1, w2)``."""
    if not isinstance(source, str) or not source:
        raise ValueError("the source must be a non-empty node name")
    index = {source: 0}
    merged: dict[tuple[int, int], float] = {}
    for number, edge in enumerate(edges, start=1):
        try:
            a, b, weight = edge
        except (TypeError, ValueError):
            raise ValueError(f"edge {number}: give (a, b, weight)") from None
        if not (isinstance(a, str) and isinstance(b, str) and a and b):
            raise ValueError(f"edge {number}: node names must be non-empty strings")
        if a == b:
            raise ValueError(f"edge {number}: {a!r} is joined to itself")
        try:
            weight = float(weight)
        except (TypeError, ValueError):
            raise ValueError(f"edge {number}: the weight must be a number, not {weight!r}") from None
        if not (math.isfinite(weight) and weight > 0):
            raise ValueError(f"edge {number}: the weight must be finite and greater than 0, not {weight!r}")
        i, j = sorted((index.setdefault(a, len(index)), index.setdefault(b, len(index))))
        merged[(i, j)] = combine(merged[(i, j)], weight) if (i, j) in merged else weight
    n = len(index)
    rows, cols = zip(*merged) if merged else ((), ())
    matrix = coo_matrix((np.fromiter(merged.values(), float, len(merged)), (rows, cols)), shape=(n, n))
    return list(index), 0, matrix


def _rounded(nodes: list[str], distances) -> dict[str, float]:
    return {
        node: round(float(d), DISTANCE_PLACES) if math.isfinite(d) else math.inf for node, d in zip(nodes, distances)
    }


def shortest_distances(edges: Iterable[Edge], source: str) -> dict[str, float]:
    """The weighted shortest-path length from ``source`` to every node, the
    weights read as lengths (``inf``: not connected)."""
    nodes, s, lengths = _graph(edges, source, min)
    return _rounded(nodes, dijkstra(lengths.tocsr(), directed=False, indices=s))


def resistance_distances(edges: Iterable[Edge], source: str) -> dict[str, float]:
    """The effective resistance between ``source`` and every node, the weights
    read as conductances (``inf``: not connected).

    ``L+`` is ``numpy.linalg.pinv`` of the Laplacian of the source's connected
    component (a dense matrix: a component of ``n`` nodes takes ``O(n^3)``
    time, about 5 s for 2,000 nodes). Raises ``ValueError`` when the weights
    are so far apart that the pseudo-inverse cannot be computed reliably in
    double precision.
    """
    nodes, s, conductances = _graph(edges, source, operator.add)
    csr = conductances.tocsr()
    _, labels = connected_components(csr, directed=False)
    members = np.flatnonzero(labels == labels[s])
    k = int(np.searchsorted(members, s))
    upper = csr[members][:, members].toarray()
    adjacency = upper + upper.T
    laplacian = np.diag(adjacency.sum(axis=1)) - adjacency
    pseudo = np.linalg.pinv(laplacian, hermitian=True)
    # L+ L is the projection onto the vectors summing to 0, of trace n - 1;
    # a smaller trace means a positive eigenvalue of L fell below pinv's
    # cut-off, and L+ lost a direction
    if abs(float(np.sum(pseudo * laplacian)) - (len(members) - 1)) > 0.5:
        raise ValueError(
            "the weights are too far apart for the effective resistance to be computed reliably: "
            "bring the smallest and the largest weight closer together"
        )
    diagonal = np.diag(pseudo)
    resistance = np.maximum(diagonal[k] + diagonal - 2 * pseudo[k], 0.0)
    resistance[k] = 0.0
    found = np.full(len(nodes), math.inf)
    found[members] = resistance
    return _rounded(nodes, found)


def _decimal(value, name: str) -> Decimal:
    """``value`` (a Decimal, int or float) as an exact Decimal, or ValueError."""
    if value is None or isinstance(value, bool):
        raise ValueError(f"{name} is required")
    number = Decimal(value) if isinstance(value, (Decimal, int, float)) else None
    if number is None:
        raise ValueError(f"{name} must be a number, not {value!r}")
    if not number.is_finite():
        raise ValueError(f"{name} must be finite, not {value!r}")
    return number


def cap_for(ceiling: Decimal, distance: float | Decimal | None, kind: str, lam: Decimal | float) -> Decimal:
    """The cap of a buyer at ``distance`` (>= 0, finite) on a listing with
    ``ceiling``: ``ceiling * exp(-lam * distance)`` (``kind="exp"``, ``lam > 0``)
    or ``ceiling / (1 + distance)`` (``kind="inverse"``, ``lam`` unused),
    rounded down to 4 decimal places.

    The map is evaluated to 34 significant digits (the division rounded
    towards zero, the exponential correctly rounded), far beyond the 4 places
    kept, then rounded down: the cap never exceeds the map's value. ``None``
    or an infinite distance (a buyer outside the network) raises
    ``ValueError``: the caller chooses the distance to use.
    """
    ceiling = _decimal(ceiling, "the ceiling")
    if ceiling <= 0:
        raise ValueError(f"the ceiling must be greater than 0, not {ceiling}")
    if distance is None or (isinstance(distance, float) and math.isinf(distance)):
        raise ValueError("the distance is unknown: choose the distance of an unknown buyer first")
    d = _decimal(distance, "the distance")
    if d < 0:
        raise ValueError(f"the distance must be at least 0, not {distance!r}")
    if kind not in MAP_KINDS:
        raise ValueError(f"the map must be one of {', '.join(MAP_KINDS)}, not {kind!r}")
    with localcontext() as context:
        context.prec = 34
        if kind == "exp":
            lam = _decimal(lam, "lambda")
            if lam <= 0:
                raise ValueError(f"lambda must be greater than 0, not {lam}")
            value = ceiling * (-lam * d).exp()
        else:
            context.rounding = ROUND_DOWN
            value = ceiling / (1 + d)
        return value.quantize(_CAP_QUANTUM, rounding=ROUND_DOWN)


def plain(value) -> str:
    """A number for people: at most 4 decimal places, no trailing zeros, no
    exponent (``5.0000`` -> ``5``, ``0.666666`` -> ``0.6667``, ``10`` -> ``10``)."""
    number = Decimal(value).quantize(_CAP_QUANTUM)
    return f"{number.normalize():f}" if number else "0"


def cap_formula(ceiling: Decimal, distance: float | Decimal, kind: str, lam: Decimal | float) -> str:
    """:func:`cap_for` as a line of arithmetic: ``"5 × e^(−0.5·1) = 3.0326"``
    or ``"5 / (1 + 2) = 1.6666"`` (the distance shown to 4 decimal places)."""
    cap = plain(cap_for(ceiling, distance, kind, lam))
    if kind == "exp":
        return f"{plain(ceiling)} × e^(−{plain(lam)}·{plain(distance)}) = {cap}"
    return f"{plain(ceiling)} / (1 + {plain(distance)}) = {cap}"
