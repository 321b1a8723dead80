"""An owner's trust network: how far each buyer stands from the owner.

Each owner has at most one :class:`TrustNetwork`. In mode ``tiers`` the owner
names :class:`Tier` s, each at a distance, and puts buyers in them
(:class:`TierMember`); in mode ``graph`` the owner uploads an edge list of
organisations (:class:`Edge`), names their own organisation's node
(``home``) and places buyers at nodes (:class:`NodeMember`); the distance is
then measured in the graph with the chosen ``metric``. Both sets are kept when
the mode changes; only the mode's one counts.

A listing with ``trust_capped`` sells a buyer at distance ``d`` at most
``cap = ceiling * exp(-lam * d)`` (map ``exp``) or ``ceiling / (1 + d)`` (map
``inverse``); a buyer outside the network, or at a node not connected to the
owner's, counts at ``unknown_distance``; and everyone at distance ``d`` or
further together stays within the map at ``d`` on each dataset's capped
listings. See ``market.trust.graph`` and ``market.trust.selectors.buyer_cap``.
"""

from decimal import Decimal

from django.conf import settings
from django.db import models
from django.db.models import F, Q


def DistanceField(**kwargs):
    """A distance or a rate of the map: NUMERIC(9, 4)."""
    return models.DecimalField(max_digits=9, decimal_places=4, **kwargs)


class TrustNetwork(models.Model):
    class Mode(models.TextChoices):
        TIERS = "tiers", "named tiers, each at a distance"
        GRAPH = "graph", "a graph of organisations"

    class Metric(models.TextChoices):
        SHORTEST = "shortest", "shortest path (weights are lengths)"
        RESISTANCE = "resistance", "effective resistance (weights are conductances)"

    class MapKind(models.TextChoices):
        EXP = "exp", "ceiling × e^(−λ·d)"
        INVERSE = "inverse", "ceiling / (1 + d)"

    owner = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="trust_network")
    mode = models.CharField(max_length=10, choices=Mode.choices, default=Mode.TIERS)
    metric = models.CharField(max_length=10, choices=Metric.choices, default=Metric.SHORTEST)
    map_kind = models.CharField(max_length=10, choices=MapKind.choices, default=MapKind.EXP)
    lam = DistanceField(default=Decimal("0.5"), help_text="λ of the map ceiling × e^(−λ·d)")
    unknown_distance = DistanceField(
        default=Decimal(3), help_text="the distance of a buyer outside the network (or not connected to home)"
    )
    home = models.CharField(max_length=100, blank=True, help_text="the owner's own organisation: a node of the graph")
    distances = models.JSONField(
        default=dict,
        help_text="derived: {node: distance from home under the metric, or null if not connected}; "
        "recomputed whenever the edges, home or metric change",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(lam__gt=0), name="trust_lambda_positive"),
            models.CheckConstraint(condition=Q(unknown_distance__gte=0), name="trust_unknown_distance_nonnegative"),
            models.CheckConstraint(condition=Q(mode__in=["tiers", "graph"]), name="trust_mode_known"),
            models.CheckConstraint(condition=Q(metric__in=["shortest", "resistance"]), name="trust_metric_known"),
            models.CheckConstraint(condition=Q(map_kind__in=["exp", "inverse"]), name="trust_map_known"),
        ]

    def __str__(self):
        return f"trust network of {self.owner}"


class Tier(models.Model):
    network = models.ForeignKey(TrustNetwork, on_delete=models.CASCADE, related_name="tiers")
    name = models.CharField(max_length=50)
    distance = DistanceField()

    class Meta:
        ordering = ["distance", "name"]
        constraints = [
            models.UniqueConstraint(fields=["network", "name"], name="trust_tier_name_unique"),
            models.CheckConstraint(condition=Q(distance__gte=0), name="trust_tier_distance_nonnegative"),
        ]

    def __str__(self):
        return self.name


class TierMember(models.Model):
    network = models.ForeignKey(TrustNetwork, on_delete=models.CASCADE, related_name="tier_members")
    buyer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="trust_tiers")
    # a tier with members is never deleted by the services: its members are moved first
    tier = models.ForeignKey(Tier, on_delete=models.PROTECT, related_name="members")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["network", "buyer"], name="trust_tier_member_unique")]


class Edge(models.Model):
    """An undirected edge of the owner's graph, as uploaded (``line`` of the file)."""

    network = models.ForeignKey(TrustNetwork, on_delete=models.CASCADE, related_name="edges")
    line = models.PositiveIntegerField()
    a = models.CharField(max_length=100)
    b = models.CharField(max_length=100)
    weight = models.FloatField(default=1.0)

    class Meta:
        ordering = ["line"]
        constraints = [
            models.UniqueConstraint(fields=["network", "line"], name="trust_edge_line_unique"),
            models.CheckConstraint(condition=Q(weight__gt=0), name="trust_edge_weight_positive"),
            models.CheckConstraint(condition=~Q(a=F("b")), name="trust_edge_not_a_loop"),
        ]


class NodeMember(models.Model):
    network = models.ForeignKey(TrustNetwork, on_delete=models.CASCADE, related_name="node_members")
    buyer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="trust_nodes")
    node = models.CharField(max_length=100)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["network", "buyer"], name="trust_node_member_unique")]
