"""Owners' writes to their trust network: settings, tiers, the edge list,
where buyers stand, and which listings are capped by trust.

Every service checks its whole input before writing anything and raises
``InvalidInput`` whose ``fields`` name the input at fault; a message about
one line of a text or a file starts with its number ("line 3: no user named
'zed'"). Each runs in one transaction with the owner's network row locked, so
two edits by the same owner apply one after the other.

The distances of the graph's nodes from the owner's ``home`` are derived data
(``TrustNetwork.distances``): recomputed in the same transaction whenever the
edges, the home node or the metric change.
"""

from __future__ import annotations

import csv
import math
from decimal import Decimal, InvalidOperation

from django.contrib.auth import get_user_model
from django.db import transaction

from market.accounts.roles import require_role
from market.core import visibility
from market.core.errors import InvalidInput
from market.core.fields import LEVEL_PLACES, LEVEL_QUANTUM

from .edgelist import MAX_NAME_LENGTH, MAX_REPORTED, EdgeListError, parse_edge_list
from .graph import resistance_distances, shortest_distances
from market.catalog.locks import owned_listings_lock

from .locks import network_lock
from .models import Edge, NodeMember, Tier, TierMember, TrustNetwork

#: The most tiers a network may have.
MAX_TIERS = 20
#: The most buyers one text may place.
MAX_MEMBERS = 5000
#: The largest distance or λ accepted.
MAX_DISTANCE = Decimal("10000")
#: The longest tier name, in characters.
MAX_TIER_NAME = Tier._meta.get_field("name").max_length


def _require_owner(user) -> None:
    require_role(user, "owner")


def _number(value, *, positive: bool) -> tuple[Decimal | None, str | None]:
    """A distance (>= 0) or a rate (> 0) with at most 4 decimal places, or the reason it is not one."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None, "This field is required."
    try:
        number = Decimal(value.strip() if isinstance(value, str) else str(value))
    except (InvalidOperation, ValueError, TypeError):
        return None, f"{str(value)[:30]!r} is not a number."
    if not number.is_finite():
        return None, "Must be a finite number."
    if positive and number <= 0:
        return None, "Must be greater than 0."
    if number < 0:
        return None, "Must be at least 0."
    if number > MAX_DISTANCE:
        return None, f"Must be at most {MAX_DISTANCE}."
    if number != number.quantize(LEVEL_QUANTUM):
        return None, f"Use at most {LEVEL_PLACES} decimal places."
    return number.quantize(LEVEL_QUANTUM), None


def _choice(value, choices, field: str, errors: dict) -> str | None:
    if value not in choices.values:
        errors[field] = [f"Choose one of: {', '.join(choices.values)}."]
        return None
    return value


def _refresh_distances(network: TrustNetwork, *, field: str) -> None:
    """Recompute ``network.distances`` from its stored edges, home and metric
    (not saved); a graph the metric cannot handle is an error at ``field``."""
    if not network.home:
        network.distances = {}
        return
    edges = [(edge.a, edge.b, edge.weight) for edge in network.edges.all()]
    measure = resistance_distances if network.metric == TrustNetwork.Metric.RESISTANCE else shortest_distances
    try:
        found = measure(edges, network.home)
    except ValueError as exc:
        raise InvalidInput(str(exc), fields={field: [str(exc)]}) from None
    network.distances = {node: d if math.isfinite(d) else None for node, d in found.items()}


@transaction.atomic
def trust_network_update(*, owner, mode, metric, map_kind, lam, unknown_distance, home="") -> TrustNetwork:
    """Set how distances are measured and mapped to caps.

    ``mode`` "tiers" or "graph"; ``metric`` "shortest" or "resistance";
    ``map_kind`` "exp" (``ceiling × e^(−lam·d)``, ``lam > 0``) or "inverse"
    (``ceiling / (1 + d)``); ``unknown_distance`` (>= 0) is the distance of a
    buyer outside the network; ``home`` the owner's own node in the graph
    (required in graph mode).
    """
    _require_owner(owner)
    errors: dict[str, list[str]] = {}
    mode = _choice(mode, TrustNetwork.Mode, "mode", errors)
    metric = _choice(metric, TrustNetwork.Metric, "metric", errors)
    map_kind = _choice(map_kind, TrustNetwork.MapKind, "map_kind", errors)
    lam, problem = _number(lam, positive=True)
    if problem:
        errors["lam"] = [problem]
    unknown_distance, problem = _number(unknown_distance, positive=False)
    if problem:
        errors["unknown_distance"] = [problem]
    home = (home or "").strip()
    if len(home) > MAX_NAME_LENGTH:
        errors["home"] = [f"At most {MAX_NAME_LENGTH} characters."]
    elif mode == TrustNetwork.Mode.GRAPH and not home:
        errors["home"] = ["Name your organisation's node in the edge list: distances are measured from it."]
    if errors:
        first, messages = next(iter(errors.items()))
        raise InvalidInput(f"{first}: {messages[0]}", fields=errors)
    network = network_lock(owner=owner)
    remeasure = (network.home, network.metric) != (home, metric)
    network.mode, network.metric, network.map_kind = mode, metric, map_kind
    network.lam, network.unknown_distance, network.home = lam, unknown_distance, home
    if remeasure:
        _refresh_distances(network, field="metric")
    network.save()
    return network


def _line_errors(errors: list[str], what: str) -> InvalidInput:
    return InvalidInput(
        f"{what}: {errors[0]}" + (f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""),
        fields={what: errors},
    )


@transaction.atomic
def trust_tiers_set(*, owner, tiers) -> list[Tier]:
    """Make the owner's tiers exactly ``tiers``, a sequence of ``(name, distance)``.

    A tier keeps its buyers when its name stays; a tier left out is deleted,
    which is refused while buyers are in it. Errors about one tier start with
    its position in ``tiers`` ("tier 2: ..."), at the field ``tiers``.
    """
    _require_owner(owner)
    tiers = list(tiers)
    errors, wanted, first_at = [], {}, {}
    if len(tiers) > MAX_TIERS:
        errors.append(f"at most {MAX_TIERS} tiers")
    for number, (name, distance) in enumerate(tiers, start=1):
        name = (name or "").strip()
        value, problem = _number(distance, positive=False)
        if not name:
            errors.append(f"tier {number}: give it a name")
        elif len(name) > MAX_TIER_NAME:
            errors.append(f"tier {number}: the name is longer than {MAX_TIER_NAME} characters")
        elif name in first_at:
            errors.append(f"tier {number}: {name!r} is already the name of tier {first_at[name]}")
        else:
            first_at[name] = number
        if problem:
            errors.append(f"tier {number}: distance: {problem[0].lower()}{problem[1:]}")
        elif name:
            wanted[name] = value
    if errors:
        raise _line_errors(errors, "tiers")
    network = network_lock(owner=owner)
    existing = {tier.name: tier for tier in network.tiers.all()}
    dropped = [tier for name, tier in existing.items() if name not in wanted]
    for tier in dropped:
        members = sorted(tier.members.values_list("buyer__username", flat=True))
        if members:
            errors.append(
                f"tier {tier.name!r} still has {len(members)} buyer{'s' if len(members) > 1 else ''} "
                f"({', '.join(members[:5])}{', …' if len(members) > 5 else ''}): place them in another tier first"
            )
    if errors:
        raise _line_errors(errors, "tiers")
    Tier.objects.filter(pk__in=[tier.pk for tier in dropped]).delete()
    kept = []
    for name, distance in wanted.items():
        tier = existing.get(name) or Tier(network=network, name=name)
        tier.distance = distance
        tier.save()
        kept.append(tier)
    network.save(update_fields=["updated_at"])
    return kept


@transaction.atomic
def trust_edges_upload(*, owner, data: bytes) -> TrustNetwork:
    """Replace the owner's graph by the uploaded edge list (see
    ``market.trust.edgelist``); nothing is stored unless the whole file is
    valid. The file's problems, by line, are the messages of the field ``file``."""
    _require_owner(owner)
    try:
        edges = parse_edge_list(data)
    except EdgeListError as exc:
        raise _line_errors(exc.errors, "file") from None
    network = network_lock(owner=owner)
    network.edges.all().delete()
    Edge.objects.bulk_create(
        [Edge(network=network, line=edge.line, a=edge.a, b=edge.b, weight=edge.weight) for edge in edges]
    )
    _refresh_distances(network, field="file")
    network.save()
    return network


def _assignments(text: str, *, what: str, targets: set[str], hint: str, owner) -> list[tuple[object, str]]:
    """``[(buyer, target)]`` from ``username,target`` lines, or InvalidInput at
    the field ``members`` with one message per problem, by line."""
    lines = []
    problems: list[tuple[int, str]] = []
    for number, raw in enumerate((text or "").splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            fields = [field.strip() for field in next(csv.reader([raw]))]
        except csv.Error as exc:
            problems.append((number, f"not a CSV line ({exc})"))
            continue
        if len(fields) != 2 or not all(fields):
            problems.append((number, f"write a username and {what}, separated by a comma"))
        else:
            lines.append((number, *fields))
    if len(lines) > MAX_MEMBERS:
        problems.append((lines[MAX_MEMBERS][0], f"at most {MAX_MEMBERS} buyers"))
    users = {user.username: user for user in get_user_model().objects.filter(username__in=[u for _, u, _ in lines])}
    first_at: dict[str, int] = {}
    placed = []
    for number, username, target in lines:
        user = users.get(username)
        if user is None:
            problems.append((number, f"no user named {username!r}"))
        elif user.pk == owner.pk:
            problems.append((number, f"{username!r} is you: your own cap is always the ceiling"))
        elif username in first_at:
            problems.append((number, f"{username!r} is already placed on line {first_at[username]}"))
        if target not in targets:
            problems.append((number, f"no {what} named {target!r} ({hint})"))
        first_at.setdefault(username, number)
        placed.append((user, target))
    if problems:
        problems.sort(key=lambda problem: problem[0])  # stable: a line's problems keep their order
        errors = [f"line {number}: {message}" for number, message in problems[:MAX_REPORTED]]
        if len(problems) > MAX_REPORTED:
            errors.append(f"and {len(problems) - MAX_REPORTED} more problems")
        raise _line_errors(errors, "members")
    return placed


@transaction.atomic
def trust_tier_members_set(*, owner, text: str) -> int:
    """Place buyers in tiers: ``username,tier`` per line (blank lines skipped);
    everyone not listed leaves their tier. Returns how many are placed."""
    _require_owner(owner)
    network = network_lock(owner=owner)
    tiers = {tier.name: tier for tier in network.tiers.all()}
    hint = f"your tiers: {', '.join(tiers)}" if tiers else "define your tiers first"
    placed = _assignments(text, what="tier", targets=set(tiers), hint=hint, owner=owner)
    network.tier_members.all().delete()
    TierMember.objects.bulk_create(
        [TierMember(network=network, buyer=buyer, tier=tiers[name]) for buyer, name in placed]
    )
    network.save(update_fields=["updated_at"])
    return len(placed)


@transaction.atomic
def trust_node_members_set(*, owner, text: str) -> int:
    """Place buyers at organisations of the graph: ``username,organisation``
    per line (blank lines skipped); the organisation must be a node of the
    uploaded edge list or the owner's own. Everyone not listed leaves the
    graph. Returns how many are placed."""
    _require_owner(owner)
    network = network_lock(owner=owner)
    nodes = {name for edge in network.edges.values_list("a", "b") for name in edge}
    if network.home:
        nodes.add(network.home)
    hint = "it is not in your edge list" if nodes else "upload your edge list first"
    placed = _assignments(text, what="organisation", targets=nodes, hint=hint, owner=owner)
    network.node_members.all().delete()
    NodeMember.objects.bulk_create([NodeMember(network=network, buyer=buyer, node=node) for buyer, node in placed])
    network.save(update_fields=["updated_at"])
    return len(placed)


@transaction.atomic
def trust_listings_set(*, owner, listing_ids) -> int:
    """Cap exactly these of the owner's listings by trust (the others not).
    Buyers keep levels they already hold above their cap; they cannot buy
    further. Returns how many listings are capped."""
    _require_owner(owner)
    try:
        wanted = {int(listing_id) for listing_id in listing_ids}
    except (TypeError, ValueError):
        raise InvalidInput("listings: give listing ids", fields={"listings": ["Choose among your listings."]}) from None
    owned_listings_lock(owner=owner)  # two such edits by one owner apply one after the other
    owned = visibility.owned_listings(owner)
    if len(wanted) != owned.filter(pk__in=wanted).count():
        raise InvalidInput("listings: not all of these are yours", fields={"listings": ["Choose among your listings."]})
    owned.filter(pk__in=wanted).update(trust_capped=True)
    owned.exclude(pk__in=wanted).update(trust_capped=False)
    return len(wanted)
