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

The map bounds a tier as a whole, not an account (accounts are free): on each
dataset, everyone at distance ``d`` or further together holds, per
trust-capped listing, the highest level any of them holds there (they all
read its one noise path), and these summed over the dataset's capped listings
stay within the map at ``d`` on the largest capped ceiling. A buyer's cap is
the smaller of their own map and the room their tiers have left
(:func:`_tier_room`); ``docs/mathematics.md`` §13 has the argument.

Every query starts in ``market.core.visibility``.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field, replace
from decimal import ROUND_DOWN, Decimal

from market.core import visibility
from market.core.errors import NotFound
from market.core.fields import LEVEL_QUANTUM

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
    #: on a trust-capped listing, what is bounded for the buyer's whole tier on its dataset, in a
    #: sentence (:func:`_together`); "" when no trust cap applies
    together: str = ""

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


def _distance(network: TrustNetwork, place: _Place) -> tuple[Decimal, str]:
    """The distance ``place`` counts at (the unknown distance if unknown), exactly, and the words for it."""
    if place.distance is None:
        distance = network.unknown_distance
        return Decimal(distance), f"{place.words}, so counted at the unknown distance {plain(distance)}"
    return Decimal(place.distance), place.words


def _cap(network: TrustNetwork, ceiling: Decimal, place: _Place) -> Cap:
    """The map of ``network`` at ``place`` (the unknown distance if unknown) on ``ceiling``."""
    distance, where = _distance(network, place)
    formula = cap_formula(ceiling, distance, network.map_kind, network.lam)
    return Cap(
        level=cap_for(ceiling, distance, network.map_kind, network.lam),
        distance=float(distance),
        reason=f"{where}: cap = {formula}",
    )


def _listing_cap(network: TrustNetwork, listing, place: _Place) -> Cap:
    """A buyer's own cap on ``listing``: the map at their distance on its total ceiling, less its
    size release (which everyone has): the size release and the level bought add up."""
    cap = _cap(network, listing.total_level, place)
    if not listing.size_level:
        return cap
    level = max(cap.level - listing.size_level, Decimal(0))
    return replace(cap, level=level, reason=f"{cap.reason}, less the size release ε {plain(listing.size_level)} "
                                            f"everyone sees: {plain(level)}")


@dataclass
class _Held:
    """What is held on one dataset's trust-capped listings, by distance from its owner.

    ``listings``: the capped listings (``capped_siblings`` rows); ``levels``: per listing, the
    ``(distance, level)`` of every place where someone holds a level (the highest held there);
    ``mine``: per listing, the asking buyer's own level."""

    listings: list[dict]
    levels: dict[int, list[tuple[Decimal, Decimal]]] = field(default_factory=dict)
    mine: dict[int, Decimal] = field(default_factory=dict)

    @property
    def top(self) -> Decimal:
        """The largest total ceiling among the capped listings (the highest level sold plus the
        size release): every tier's cap is the map on it."""
        return max(row["ceiling"] + row["size_level"] for row in self.listings)

    def size(self, listing_id: int) -> Decimal:
        """The level of the listing's size release (0: none): public, so every tier holds it."""
        return next((row["size_level"] for row in self.listings if row["id"] == listing_id), Decimal(0))

    def term(self, listing_id: int, distance: Decimal) -> Decimal:
        """What everyone at ``distance`` or further together learns from the listing: its size
        release (published to all), plus the highest level any of them holds (they all read its
        one noise path)."""
        held = max((level for at, level in self.levels.get(listing_id, ()) if at >= distance), default=Decimal(0))
        return self.size(listing_id) + held

    def together(self, distance: Decimal) -> Decimal:
        """What everyone at ``distance`` or further holds on the dataset together: the sum over its
        capped listings of each one's :meth:`term` (independent releases add up)."""
        return sum((self.term(row["id"], distance) for row in self.listings), Decimal(0))

    def distances(self) -> set[Decimal]:
        """Every distance at which someone holds a level."""
        return {at for places in self.levels.values() for at, _ in places}


def _holder_distance(network: TrustNetwork, row: dict) -> Decimal:
    """The distance of a ``capped_levels`` row's holders in ``network``'s mode."""
    if network.mode == TrustNetwork.Mode.TIERS:
        found = row["tier_distance"]
    else:
        found = network.distances.get(row["node"]) if row["node"] is not None else None
    return Decimal(network.unknown_distance if found is None else found)


def _held(siblings: dict[int, list[dict]], networks: dict, buyer) -> dict[int, _Held]:
    """``{dataset id: _Held}`` for the capped listings ``siblings`` (``{dataset id: capped_siblings
    rows}``), in one query; ``networks``: ``{owner id: TrustNetwork}`` (an owner without one has
    the defaults); ``buyer``: whose own levels are ``mine`` (None: a visitor)."""
    held = {dataset_id: _Held(rows) for dataset_id, rows in siblings.items()}
    where = {row["id"]: held[dataset_id] for dataset_id, rows in siblings.items() for row in rows}
    if not where:
        return held
    owners = {row["id"]: row["owner_id"] for rows in siblings.values() for row in rows}
    for row in visibility.capped_levels(where, buyer):
        listing_id = row["listing_id"]
        owner_id = owners[listing_id]
        network = networks.get(owner_id) or TrustNetwork(owner_id=owner_id)
        dataset = where[listing_id]
        dataset.levels.setdefault(listing_id, []).append((_holder_distance(network, row), row["top"]))
        if row["mine"] is not None:
            dataset.mine[listing_id] = max(dataset.mine.get(listing_id, Decimal(0)), row["mine"])
    return held


def _tier_room(listing, own: Cap, network: TrustNetwork, place: _Place, held: _Held | None) -> Cap:
    """``own`` (the map at the buyer's distance on ``listing``'s ceiling) narrowed by the room
    left to the buyer's trust tiers on the listing's dataset.

    Listings on one dataset are independent releases about the same people, so levels on them
    add up (``docs/mathematics.md``, composition across listings); within a listing everyone
    reads one noise path, so what a group learns from it is the highest level any of them holds.
    For every distance ``t`` up to the buyer's, everyone at ``t`` or further together holds
    :meth:`_Held.together`; that stays within the map at ``t`` on the largest capped ceiling.
    A level ``e`` on this listing is sold only if, for each such ``t``, the listing's term raised
    to ``max(term, e)`` keeps the sum within it: ``e`` is at most the map at ``t`` less what
    the tier holds on the dataset's other capped listings. It suffices to look at the distances
    where someone holds a level, and at the buyer's own: between two of them the terms stay the
    same while the map falls, so the farther end binds. A tier already holding more than its
    cap (the owner moved buyers or changed the map since they bought, or they bought before caps
    bound tiers) keeps what it holds and is sold nothing more.
    """
    if held is None or own.distance is None or listing.pk not in {row["id"] for row in held.listings}:
        return own
    distance, where = _distance(network, place)
    top, mine = held.top, held.mine.get(listing.pk, Decimal(0))
    own = replace(own, together=_together(network, place, held))
    binding = None  # (room, t, bound, others): the tightest room below the buyer's own map
    for t in sorted({d for d in held.distances() if d <= distance} | {distance}, reverse=True):
        bound = cap_for(top, t, network.map_kind, network.lam)
        here = held.term(listing.pk, t)
        others = held.together(t) - here
        formula = cap_formula(top, t, network.map_kind, network.lam)
        if others + here > bound:
            reason = (
                f"{where}; buyers at distance ≥ {plain(t)} together already hold {plain(others + here)} of this "
                f"dataset's cap {plain(bound)} for them ({formula}), more than the cap: what was bought stays held, "
                f"and nothing more is sold to them on its trust-capped listings"
            )
            return replace(own, level=min(own.level, mine), reason=reason)
        room = bound - others - held.size(listing.pk)  # the listing's own size release is in every tier's term
        if room < own.level and (binding is None or room < binding[0]):
            binding = (room, t, bound, others, formula)
    if binding is None:
        return own
    room, t, bound, others, formula = binding
    room = room.quantize(LEVEL_QUANTUM, rounding=ROUND_DOWN)
    reason = (
        f"{where}; buyers at distance ≥ {plain(t)} together already hold {plain(others)} of this dataset's cap "
        f"{plain(bound)} for them ({formula}) on its other trust-capped listings, so at most {plain(room)} here"
    )
    return replace(own, level=room, reason=reason)


def _together(network: TrustNetwork, place: _Place, held: _Held) -> str:
    """What is bounded for the buyer's tier on the dataset, in a sentence: everyone at the buyer's
    distance or further, with the accounts the owner has not placed where they count there."""
    distance, _ = _distance(network, place)
    unknown = Decimal(network.unknown_distance)
    if place.distance is None:
        who = "you, and every account the owner has not placed (new accounts and visitors too)"
    elif unknown >= distance:
        who = f"you among them, and every account the owner has not placed (counted at {plain(unknown)})"
    else:
        who = "you among them"
    bound = cap_for(held.top, distance, network.map_kind, network.lam)
    formula = cap_formula(held.top, distance, network.map_kind, network.lam).rsplit(" = ", 1)[0] + ", rounded down"
    count = len(held.listings)
    listings = f"its {count} trust-capped listings" if count > 1 else "its one trust-capped listing"
    holds = held.together(distance)
    if holds > bound:
        return (
            f"Everyone at distance ≥ {plain(distance)} from the owner ({who}) together holds ε {plain(holds)} "
            f"on this dataset's trust-capped listings, above their cap ε {plain(bound)} ({formula}): what was "
            f"bought stays held, and nothing more is sold to them there."
        )
    return (
        f"Everyone at distance ≥ {plain(distance)} from the owner ({who}) together learns at most "
        f"ε {plain(bound)} ({formula}) about any one person in this dataset from {listings}: on each, the highest "
        f"level any of them holds counts (all its buyers read one noise path), and the listings add up. "
        f"They hold ε {plain(holds)} of it now."
    )


def buyer_caps(*, listings, buyer) -> dict[int, Cap]:
    """``{listing id: Cap}`` of ``buyer`` (signed in or not) on each of ``listings``,
    in five queries whatever their number.

    On a trust-capped listing the cap is the smaller of the map on its ceiling
    and the room left to the buyer's trust tiers on its dataset
    (:func:`_tier_room`): the remaining room is what is shown and what a
    purchase may reach."""
    listings = list(listings)
    capped = [listing for listing in listings if listing.trust_capped]
    signed_in = bool(buyer and buyer.is_authenticated)
    networks, tiers, nodes, held = {}, {}, {}, {}
    if capped:
        siblings = {}
        for row in visibility.capped_siblings(listing.dataset_id for listing in capped):
            siblings.setdefault(row["dataset_id"], []).append(row)
        networks = {network.owner_id: network for network in visibility.capping_networks(capped)}
        held = _held(siblings, networks, buyer if signed_in else None)
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
            own = _listing_cap(network, listing, place)
            caps[listing.pk] = _tier_room(listing, own, network, place, held.get(listing.dataset_id))
    return caps


def buyer_cap(*, listing, buyer) -> Cap:
    """The highest level ``buyer`` may buy on ``listing``, and why.

    The ceiling itself when the listing is not capped by trust or the buyer
    owns it; otherwise the owner's map at the buyer's distance, e.g. "tier
    'partner' at distance 1: cap = 5 × e^(−0.5·1) = 3.0326", or less where
    the buyer's tier already holds part of its cap on the dataset.
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
    "distance_shown", "cap"}], "unknown": Cap or None, "bounds": what each tier may learn together on
    the chosen listing's dataset (:func:`_bounds`)}``.

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
                "cap": _listing_cap(network, chosen, place) if chosen else None,
            }
        )
    rows.sort(key=lambda row: (not row["known"], row["distance"], row["username"]))

    edges = list(visibility.trust_edges(owner).values_list("a", "b"))
    tiers = list(visibility.trust_tiers(owner))
    graph_nodes = {name for edge in edges for name in edge}
    return {
        "network": network,
        "display": {
            "lam": plain(network.lam),
            "unknown_distance": plain(network.unknown_distance),
            "ceiling": plain(chosen.total_level) if chosen else None,
        },
        "tiers": [{"name": tier.name, "distance": plain(tier.distance)} for tier in tiers],
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
                "ceiling": plain(listing.total_level),
                "trust_capped": listing.trust_capped,
            }
            for listing in listings
        ],
        "listing": chosen,
        "rows": rows,
        "unknown": _listing_cap(network, chosen, _Place(None, "anyone else")) if chosen else None,
        "bounds": _bounds(network, chosen, _labels(network, tiers, node_members)) if chosen else None,
    }


def _labels(network: TrustNetwork, tiers, node_members) -> list[tuple[Decimal, str]]:
    """``(distance, who)`` of each place that counts in the network's mode: its tiers, or the
    organisations where buyers are placed (connected to home)."""
    if network.mode == TrustNetwork.Mode.TIERS:
        return [(Decimal(tier.distance), f"tier {tier.name!r}") for tier in tiers]
    found = ((member.node, network.distances.get(member.node)) for member in node_members)
    return [(Decimal(distance), f"organisation {node!r}") for node, distance in found if distance is not None]


def _bounds(network: TrustNetwork, listing, labels: list[tuple[Decimal, str]]) -> dict | None:
    """What each trust tier may learn together on ``listing``'s dataset, for its owner's page:
    ``{"listings": [titles of its trust-capped listings], "top": the largest of their ceilings, "rows":
    [{"distance", "who", "cap", "formula", "holds", "over"}]}``, a row per distance that occurs
    (``labels``, and the unknown distance), nearest first: everyone at that distance or further
    together holds ``holds`` and learns at most ``cap`` (``over``: they hold more, bought before
    a change of the settings; nothing more is sold to them). None when the dataset has no trust-capped listing."""
    siblings = list(visibility.capped_siblings([listing.dataset_id]))
    if not siblings:
        return None
    held = _held({listing.dataset_id: siblings}, {network.owner_id: network}, None)[listing.dataset_id]
    who: dict[Decimal, list[str]] = {}
    for distance, label in labels:
        who.setdefault(distance, []).append(label)
    who.setdefault(Decimal(network.unknown_distance), []).append("everyone you have not placed")
    rows = []
    for distance in sorted(who):
        bound = cap_for(held.top, distance, network.map_kind, network.lam)
        holds = held.together(distance)
        rows.append({
            "distance": plain(distance),
            "who": ", ".join(dict.fromkeys(who[distance])),
            "cap": plain(bound),
            "formula": cap_formula(held.top, distance, network.map_kind, network.lam),
            "holds": plain(holds),
            "over": holds > bound,
        })
    return {"listings": [row["title"] for row in siblings], "top": plain(held.top), "rows": rows}
