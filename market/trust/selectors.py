"""Reading trust networks: a buyer's cap on a listing, and the owner's page.

A listing with ``trust_capped`` sells each buyer at most their *cap*: the
owner's map (``market.trust.graph.cap_for``) at the buyer's distance from the
owner. In mode ``tiers`` that distance is the buyer's tier's; in mode
``graph`` it is the distance of the buyer's node from the owner's ``home``
under the network's metric (stored in ``TrustNetwork.distances``). A buyer
the owner did not place, placed at a node not in the graph or not connected
to home, or not signed in, counts at the network's unknown distance. An owner
who never set up a network has the defaults (map exp with λ 0.5, unknown
distance 3): every buyer is unknown. The owner's own cap, and anyone's on a
listing without ``trust_capped``, is the ceiling.

Every query starts in ``market.core.visibility``.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from decimal import Decimal

from market.core import visibility
from market.core.errors import NotFound

from .graph import cap_formula, cap_for, plain
from .models import TrustNetwork


@dataclass(frozen=True)
class Cap:
    """The highest level a buyer may buy on a listing, and why, in plain words.

    ``distance`` is the distance the cap was computed at (the unknown
    distance for a buyer outside the network); None when no trust cap
    applies (the listing is not capped, or the buyer owns it).
    """

    level: Decimal
    distance: float | None
    reason: str

    @property
    def shown(self) -> str:
        """The level for people: ``3.0326``, ``5``."""
        return plain(self.level)


@dataclass(frozen=True)
class _Place:
    """Where a buyer stands: the distance (None: unknown) and the words for it."""

    distance: float | Decimal | None
    words: str


def _place(network: TrustNetwork, *, tier=None, node: str | None = None) -> _Place:
    """A buyer's place in ``network`` in its mode, from their tier (tiers mode)
    or their node (graph mode); None for each when the owner did not place them."""
    if network.mode == TrustNetwork.Mode.TIERS:
        if tier is None:
            return _Place(None, "not in the owner's trust tiers")
        return _Place(tier.distance, f"tier {tier.name!r} at distance {plain(tier.distance)}")
    if node is None:
        return _Place(None, "not in the owner's trust network")
    if node not in network.distances:
        return _Place(None, f"organisation {node!r} is not in the owner's trust network")
    distance = network.distances[node]
    if distance is None:
        return _Place(None, f"organisation {node!r} is not connected to the owner's organisation")
    measure = "shortest-path distance" if network.metric == TrustNetwork.Metric.SHORTEST else "effective resistance"
    return _Place(distance, f"organisation {node!r} at {measure} {plain(distance)} from the owner's organisation")


def _cap(network: TrustNetwork, ceiling: Decimal, place: _Place) -> Cap:
    """The map of ``network`` at ``place`` (the unknown distance if unknown) on ``ceiling``."""
    if place.distance is None:
        distance = network.unknown_distance
        where = f"{place.words}, so counted at the unknown distance {plain(distance)}"
    else:
        distance, where = place.distance, place.words
    formula = cap_formula(ceiling, distance, network.map_kind, network.lam)
    return Cap(
        level=cap_for(ceiling, distance, network.map_kind, network.lam),
        distance=float(distance),
        reason=f"{where}: cap = {formula}",
    )


def _dataset_room(listing, cap: Cap, network: TrustNetwork, siblings: list[dict], held: dict[int, Decimal]) -> Cap:
    """``cap`` (the map on ``listing``'s own ceiling) narrowed by the buyer's cap on its dataset.

    Listings on one dataset are independent releases about the same people, so
    a buyer's levels on them add up (``docs/mathematics.md``, composition
    across listings). The cap on the dataset is the map at the buyer's
    distance on the largest ceiling among its trust-capped listings; what the
    buyer holds on the dataset's other capped listings is taken from it, and
    the rest is all this listing may reach (its own cap permitting).
    """
    if not siblings or cap.distance is None:
        return cap
    top = max(row["ceiling"] for row in siblings)
    dataset_cap = cap_for(top, cap.distance, network.map_kind, network.lam)
    elsewhere = [(row, held[row["id"]]) for row in siblings if row["id"] != listing.pk and held.get(row["id"], 0) > 0]
    if not elsewhere:
        if dataset_cap >= cap.level:
            return cap
        return Cap(dataset_cap, cap.distance, f"{cap.reason}; your cap on this dataset is {plain(dataset_cap)}")
    total = sum((level for _, level in elsewhere), Decimal(0))
    room = max(dataset_cap - total, Decimal(0))
    if room >= cap.level:
        return cap
    holds = ", ".join(f"{plain(level)} on {row['title']!r}" for row, level in elsewhere)
    reason = (
        f"you hold {holds} of the same dataset; your cap on this dataset is {plain(dataset_cap)} "
        f"({cap.reason.split(': cap = ')[0]}: cap = {cap_formula(top, cap.distance, network.map_kind, network.lam)}), "
        f"so at most {plain(room)} here"
    )
    return Cap(room, cap.distance, reason)


def buyer_caps(*, listings, buyer) -> dict[int, Cap]:
    """``{listing id: Cap}`` of ``buyer`` (signed in or not) on each of ``listings``,
    in five queries whatever their number.

    On a trust-capped listing the cap is the smaller of the map on its ceiling
    and the room the buyer has left on its dataset (:func:`_dataset_room`):
    the remaining room is what is shown and what a purchase may reach."""
    listings = list(listings)
    capped = [listing for listing in listings if listing.trust_capped]
    signed_in = bool(buyer and buyer.is_authenticated)
    networks, tiers, nodes, siblings, held = {}, {}, {}, {}, {}
    if capped:
        for row in visibility.capped_siblings(listing.dataset_id for listing in capped):
            siblings.setdefault(row["dataset_id"], []).append(row)
        if signed_in:
            ids = [row["id"] for rows in siblings.values() for row in rows]
            held = dict(visibility.holdings(buyer).filter(listing_id__in=ids).values_list("listing_id", "purchased"))
        networks = {network.owner_id: network for network in visibility.capping_networks(capped)}
        if signed_in:
            tier_places, node_places = visibility.trust_places(buyer)
            ids = [network.pk for network in networks.values()]
            tiers = {member.network_id: member.tier for member in tier_places.filter(network_id__in=ids)}
            nodes = dict(node_places.filter(network_id__in=ids).values_list("network_id", "node"))
    caps = {}
    for listing in listings:
        ceiling = listing.ceiling
        if not listing.trust_capped:
            reason = f"this listing is not capped by trust: its ceiling is ε {plain(ceiling)}"
            if listing.size_level:  # the size release was carved out of the ceiling: not for sale
                reason = (f"this listing is not capped by trust: the highest level sold is ε {plain(ceiling)} "
                          f"(its ceiling ε {plain(listing.total_level)} less its size release)")
            caps[listing.pk] = Cap(ceiling, None, reason)
        elif signed_in and listing.dataset.owner_id == buyer.pk:
            caps[listing.pk] = Cap(ceiling, None, "you own this listing: its ceiling")
        else:
            # an owner who never set up a network has its defaults: everyone is unknown
            network = networks.get(listing.dataset.owner_id) or TrustNetwork(owner_id=listing.dataset.owner_id)
            if signed_in:
                place = _place(network, tier=tiers.get(network.pk), node=nodes.get(network.pk))
            else:
                place = _Place(None, "not signed in")
            own = _cap(network, ceiling, place)
            caps[listing.pk] = _dataset_room(listing, own, network, siblings.get(listing.dataset_id, []), held)
    return caps


def buyer_cap(*, listing, buyer) -> Cap:
    """The highest level ``buyer`` may buy on ``listing``, and why.

    The ceiling itself when the listing is not capped by trust or the buyer
    owns it; otherwise the owner's map at the buyer's distance, e.g. "tier
    'partner' at distance 1: cap = 5 × e^(−0.5·1) = 3.0326".
    """
    return buyer_caps(listings=[listing], buyer=buyer)[listing.pk]


def _network(owner) -> TrustNetwork:
    """The owner's network, or an unsaved one with the defaults."""
    return visibility.trust_networks(owner).first() or TrustNetwork(owner=owner)


def _members_text(rows) -> str:
    """``username,place`` lines, quoted as CSV where needed."""
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


def trust_overview(*, owner, listing_id=None) -> dict:
    """What the owner's trust page shows.

    ``{"network": TrustNetwork (unsaved with the defaults if none yet), "display": {"lam",
    "unknown_distance", "ceiling"} (for people: ``0.5``, ``3``, ``10``), "tiers": [{"name", "distance"}],
    "tier_members": "bob,partner\\n…", "node_members": "carol,acme\\n…",
    "graph": {"edges", "nodes", "connected", "home_in_graph"}, "listings": [{"id", "title", "ceiling",
    "trust_capped"}], "listing": the chosen one or None, "rows": [{"username", "place", "known", "distance",
    "distance_shown", "cap"}], "unknown": Cap or None}``.

    ``rows`` are the buyers placed in the network's mode, nearest first, with
    their distance and their cap on the chosen listing's ceiling (None
    without a listing); ``unknown`` is the cap of everyone else. The listing
    is ``listing_id`` (NotFound if it is not the owner's), else the newest.
    """
    network = _network(owner)
    tier_members = list(
        visibility.trust_tier_members(owner).order_by("tier__distance", "tier__name", "buyer__username")
    )
    node_members = list(visibility.trust_node_members(owner).order_by("node", "buyer__username"))
    listings = list(visibility.owned_listings(owner).defer("answer").order_by("-created_at", "-id"))
    if listing_id is not None:
        chosen = next((listing for listing in listings if listing.pk == listing_id), None)
        if chosen is None:
            raise NotFound("no such listing among yours", fields={"listing": ["Choose one of your listings."]})
    else:
        chosen = listings[0] if listings else None

    if network.mode == TrustNetwork.Mode.TIERS:
        placed = [(m.buyer.username, _place(network, tier=m.tier)) for m in tier_members]
    else:
        placed = [(m.buyer.username, _place(network, node=m.node)) for m in node_members]
    rows = []
    for username, place in placed:
        distance = network.unknown_distance if place.distance is None else place.distance
        rows.append(
            {
                "username": username,
                "place": place.words,
                "known": place.distance is not None,
                "distance": distance,
                "distance_shown": plain(distance),
                "cap": _cap(network, chosen.ceiling, place) if chosen else None,
            }
        )
    rows.sort(key=lambda row: (not row["known"], row["distance"], row["username"]))

    edges = list(visibility.trust_edges(owner).values_list("a", "b"))
    graph_nodes = {name for edge in edges for name in edge}
    return {
        "network": network,
        "display": {
            "lam": plain(network.lam),
            "unknown_distance": plain(network.unknown_distance),
            "ceiling": plain(chosen.ceiling) if chosen else None,
        },
        "tiers": [{"name": tier.name, "distance": plain(tier.distance)} for tier in visibility.trust_tiers(owner)],
        "tier_members": _members_text((m.buyer.username, m.tier.name) for m in tier_members),
        "node_members": _members_text((m.buyer.username, m.node) for m in node_members),
        "graph": {
            "edges": len(edges),
            "nodes": len(graph_nodes),
            "connected": sum(1 for node, d in network.distances.items() if d is not None and node != network.home),
            "home_in_graph": network.home in graph_nodes,
        },
        "listings": [
            {
                "id": listing.pk,
                "title": listing.title,
                "ceiling": plain(listing.ceiling),
                "trust_capped": listing.trust_capped,
            }
            for listing in listings
        ],
        "listing": chosen,
        "rows": rows,
        "unknown": _cap(network, chosen.ceiling, _Place(None, "anyone else")) if chosen else None,
    }
