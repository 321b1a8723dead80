"""Who may see what: every queryset a user reaches starts here, in one place.

Selectors and views never call ``Model.objects`` for user-facing reads; they
ask this module for the rows the asking user may see, then filter further.
A row outside these sets does not exist for that user (the API answers 404).
The few reads that answer no user (the key a request presents before anyone is
signed in, the ledger's own checks, a dataset's budget sums under its lock) say
so by name: :func:`dangerously_unscoped`. ``tests/test_scoping.py`` fails on any
other ``Model.objects`` in a selector or an API view.
"""

from __future__ import annotations

import functools

from django.db.models import QuerySet


def _authenticated(user) -> bool:
    return bool(user and user.is_authenticated)


def listings(user) -> QuerySet:
    """Open listings, for everyone; an owner also sees their own closed ones, and
    a buyer the closed ones they hold (with the reason they were closed)."""
    from django.db.models import Exists, OuterRef, Q

    from market.catalog.models import Listing
    from market.trading.models import Holding

    # never load the raw table (up to the upload limit) or the true answer to show a listing
    qs = Listing.objects.select_related("dataset__owner").defer("answer")
    if _authenticated(user):
        held = Holding.objects.filter(listing=OuterRef("pk"), buyer=user)
        return qs.filter(Q(is_open=True) | Q(dataset__owner=user) | Exists(held))
    return qs.filter(is_open=True)


def open_listings() -> QuerySet:
    """Open listings, which everyone may see: part of :func:`listings` for every user, read without
    asking who the user is (the test of ownership and holdings is most of a listing read's SQL)."""
    from market.catalog.models import Listing

    return Listing.objects.select_related("dataset__owner").defer("answer").filter(is_open=True)


def owned_listings(user) -> QuerySet:
    from market.catalog.models import Listing

    if not _authenticated(user):
        return Listing.objects.none()
    return Listing.objects.select_related("dataset").filter(dataset__owner=user)


def owned_datasets(user, *, removed: bool = False) -> QuerySet:
    """The user's datasets; those they removed (``Dataset.removed_at``) only with ``removed``."""
    from market.catalog.models import Dataset

    if not _authenticated(user):
        return Dataset.objects.none()
    qs = Dataset.objects.filter(owner=user)
    return qs if removed else qs.filter(removed_at__isnull=True)


def owned_uploads(user) -> QuerySet:
    """An owner's resumable upload sessions (``market.catalog.chunks``) not yet made into a dataset."""
    from market.catalog.models import UploadSession

    if not _authenticated(user):
        return UploadSession.objects.none()
    return UploadSession.objects.filter(owner=user, dataset__isnull=True)


def purchases(user) -> QuerySet:
    from market.trading.models import Purchase

    if not _authenticated(user):
        return Purchase.objects.none()
    return Purchase.objects.select_related("listing", "release").filter(buyer=user)


def releases(user) -> QuerySet:
    from releases.models import Release

    if not _authenticated(user):
        return Release.objects.none()
    return Release.objects.select_related("listing", "purchase").filter(buyer=user)


def holdings(user) -> QuerySet:
    from market.trading.models import Holding

    if not _authenticated(user):
        return Holding.objects.none()
    return Holding.objects.select_related("listing").filter(buyer=user)


def wallet_legs(user) -> QuerySet:
    from market.ledger.models import Account, Leg

    if not _authenticated(user):
        return Leg.objects.none()
    return Leg.objects.select_related("transfer").filter(
        account__user=user, account__kind=Account.Kind.WALLET
    )


def earnings_legs(user) -> QuerySet:
    """The legs of the user's earnings accounts (an owner's: one per listing, and an older one per owner)."""
    from market.ledger.models import Account, Leg

    if not _authenticated(user):
        return Leg.objects.none()
    return Leg.objects.select_related("transfer").filter(account__user=user, account__kind=Account.Kind.EARNINGS)


def payouts(user) -> QuerySet:
    from market.ledger.models import Payout

    if not _authenticated(user):
        return Payout.objects.none()
    return Payout.objects.select_related("transfer").filter(user=user)


# --- trust networks (market.trust): an owner edits only their own; a buyer's
# caps are read through the networks of the listings they see


def trust_networks(user) -> QuerySet:
    """The user's own trust network (an owner has at most one)."""
    from market.trust.models import TrustNetwork

    if not _authenticated(user):
        return TrustNetwork.objects.none()
    return TrustNetwork.objects.filter(owner=user)


def trust_tiers(user) -> QuerySet:
    from market.trust.models import Tier

    if not _authenticated(user):
        return Tier.objects.none()
    return Tier.objects.filter(network__owner=user)


def trust_edges(user) -> QuerySet:
    from market.trust.models import Edge

    if not _authenticated(user):
        return Edge.objects.none()
    return Edge.objects.filter(network__owner=user)


def trust_tier_members(user) -> QuerySet:
    """The buyers the user (an owner) placed in tiers."""
    from market.trust.models import TierMember

    if not _authenticated(user):
        return TierMember.objects.none()
    return TierMember.objects.select_related("buyer", "tier").filter(network__owner=user)


def trust_node_members(user) -> QuerySet:
    """The buyers the user (an owner) placed at nodes of their graph."""
    from market.trust.models import NodeMember

    if not _authenticated(user):
        return NodeMember.objects.none()
    return NodeMember.objects.select_related("buyer").filter(network__owner=user)


def capping_networks(listings) -> QuerySet:
    """The trust networks of the owners of ``listings`` (listings the caller got
    from :func:`listings`). Read only to tell a buyer their own cap: the map,
    the unknown distance and the distances from home; a network's tiers,
    edges and other buyers' places are never reached through this."""
    from market.trust.models import TrustNetwork

    return TrustNetwork.objects.filter(owner_id__in={listing.dataset.owner_id for listing in listings})


def capped_siblings(dataset_ids) -> QuerySet:
    """The trust-capped listings (open or closed; eps-DP ones only) on these datasets, as
    ``values("id", "dataset_id", "owner_id", "title", "ceiling", "size_level")`` (``ceiling``: the
    highest level sold; ``size_level``: the size release everyone sees). Read only to tell a buyer their cap on a
    dataset (each trust tier's: the map at its distance on the largest of these ceilings, shared by
    everyone at that distance or further) and how much of it their tier holds."""
    from django.db.models import F

    from market.catalog.budget import counted
    from market.catalog.models import Listing

    return (
        Listing.objects.filter(counted(), dataset_id__in=set(dataset_ids), trust_capped=True)
        .order_by("dataset_id", "id")
        .values("id", "dataset_id", "title", "ceiling", "size_level", owner_id=F("dataset__owner_id"))
    )


def capped_levels(listing_ids, user=None) -> QuerySet:
    """The levels held on these trust-capped listings, grouped by where their holders stand in
    each listing's owner's network, as ``values("listing_id", "tier_distance", "node", "top",
    "mine")``: per listing and place (the holder's tier's distance and their node, each None where
    the owner did not place them) the highest level held there, and ``mine`` the highest of
    ``user``'s own (None where ``user`` holds nothing there, and for a visitor). One query.

    Read only to tell how much of each trust tier's cap on a dataset its members together hold
    (``market.trust.selectors``); it never says who holds what. The owner's own rows are left out
    (owners do not buy their own data)."""
    from django.db.models import F, Max, OuterRef, Q, Subquery

    from market.trading.models import Holding
    from market.trust.models import NodeMember, TierMember

    owner, holder = OuterRef("listing__dataset__owner_id"), OuterRef("buyer_id")
    tier = TierMember.objects.filter(network__owner_id=owner, buyer_id=holder).values("tier__distance")[:1]
    node = NodeMember.objects.filter(network__owner_id=owner, buyer_id=holder).values("node")[:1]
    mine = Max("purchased", filter=Q(buyer_id=user.pk if _authenticated(user) else None))
    return (
        Holding.objects.filter(listing_id__in=list(listing_ids), purchased__gt=0)
        .exclude(buyer_id=F("listing__dataset__owner_id"))
        .annotate(tier_distance=Subquery(tier), node=Subquery(node))
        .values("listing_id", "tier_distance", "node")
        .annotate(top=Max("purchased"), mine=mine)
        .order_by()
    )


def trust_places(user) -> tuple[QuerySet, QuerySet]:
    """Where owners placed the user: their tier memberships and their node
    memberships, in every network (what the user's caps depend on)."""
    from market.trust.models import NodeMember, TierMember

    if not _authenticated(user):
        return TierMember.objects.none(), NodeMember.objects.none()
    return TierMember.objects.select_related("tier").filter(buyer=user), NodeMember.objects.filter(buyer=user)


def api_keys(user) -> QuerySet:
    """A user's own API keys (market.accounts); anyone else's do not exist for them."""
    from market.accounts.models import ApiKey

    if not _authenticated(user):
        return ApiKey.objects.none()
    return ApiKey.objects.filter(user=user)


def webhook_endpoints(user) -> QuerySet:
    from market.webhooks.models import Endpoint

    if not _authenticated(user):
        return Endpoint.objects.none()
    return Endpoint.objects.filter(owner=user)


def webhook_deliveries(user) -> QuerySet:
    """Deliveries to the user's own endpoints (of the user's own events)."""
    from market.webhooks.models import Delivery

    if not _authenticated(user):
        return Delivery.objects.none()
    return Delivery.objects.select_related("event", "endpoint").filter(endpoint__owner=user, event__user=user)


def sales(user) -> QuerySet:
    """Purchases of the user's listings, as their owner sees them (never who bought)."""
    from market.trading.models import Purchase

    if not _authenticated(user):
        return Purchase.objects.none()
    return Purchase.objects.select_related("listing").filter(listing__dataset__owner=user)


def dataset_budget_changes(user) -> QuerySet:
    """The recorded budget changes of the user's own datasets."""
    from market.catalog.models import DatasetBudgetChange

    if not _authenticated(user):
        return DatasetBudgetChange.objects.none()
    return DatasetBudgetChange.objects.filter(dataset__owner=user)


def ledger_accounts(user) -> QuerySet:
    """The user's own ledger accounts (their wallet, their earnings)."""
    from market.ledger.models import Account

    if not _authenticated(user):
        return Account.objects.none()
    return Account.objects.filter(user=user)


def bit_reports(user) -> QuerySet:
    """The bit reports of the user's own microdata releases."""
    from releases.models import BitReport

    if not _authenticated(user):
        return BitReport.objects.none()
    return BitReport.objects.filter(point__releases__buyer=user).distinct()


def dangerously_unscoped(model) -> QuerySet:
    """Every row of ``model``, whoever asks: for reads that answer no user (a request's key before
    anyone is signed in, the ledger's own consistency checks, a dataset's budget sums under its
    lock). The name says it: a caller that shows rows to a user must use the functions above."""
    return model._default_manager.all()


def one(queryset: QuerySet):
    """The row of ``queryset`` (filtered by a unique key: a pk, a public id, a key's hash), or None.

    Unlike ``first()``, no ``ORDER BY`` is added: there is at most one row to order, and compiling
    the ordering was a fifth of the CPU of reading a purchase (``bench/load/phases.py``)."""
    return next(iter(queryset[:1]), None)


# --------------------------------------------------------------------------
# the reads every purchase makes, as SQL written once (``market.core.reads``): each states the
# filter of the queryset above it stands for, and runs that queryset where it is not PostgreSQL

#: a dataset's fields that no read of a listing through its dataset needs (its columns' summaries, texts)
DATASET_TEXTS = ("columns", "description", "failure", "source", "licence")


@functools.cache
def _open_listing_read():
    from market.catalog.models import Dataset, Listing

    from .reads import Prepared

    def fallback(pk):
        listing = one(open_listings().select_related(None).select_related("dataset")
                      .defer(*(f"dataset__{name}" for name in DATASET_TEXTS)).filter(pk=pk))
        return None if listing is None else (listing, listing.dataset)

    return Prepared(
        select=[(Listing, "l", ("answer",)), (Dataset, "d", DATASET_TEXTS)],
        sql=f'FROM "{Listing._meta.db_table}" l JOIN "{Dataset._meta.db_table}" d ON d."id" = l."dataset_id" '
            'WHERE l."id" = %s AND l."is_open"',
        fallback=fallback,
    )


def open_listing(pk):
    """The open listing ``pk`` (one of :func:`open_listings`, which everyone may see) with its dataset,
    without the dataset's columns and texts, or None."""
    found = _open_listing_read().one((pk,))
    if found is None:
        return None
    listing, dataset = found
    listing.dataset = dataset
    return listing


@functools.cache
def _purchase_read():
    from market.catalog.models import Listing
    from market.trading.models import Purchase
    from releases.models import Release

    from .reads import Prepared

    def fallback(pk, user_id):
        purchase = one(Purchase.objects.select_related("release__listing").defer("release__listing__answer")
                       .filter(pk=pk, buyer_id=user_id))
        if purchase is None:
            return None
        release = getattr(purchase, "release", None)
        return purchase, release, release.listing if release is not None else None

    return Prepared(
        select=[(Purchase, "p", ()), (Release, "r", ()), (Listing, "l", ("answer",))],
        sql=f'FROM "{Purchase._meta.db_table}" p LEFT JOIN "{Release._meta.db_table}" r ON r."purchase_id" = p."id" '
            f'LEFT JOIN "{Listing._meta.db_table}" l ON l."id" = r."listing_id" WHERE p."id" = %s AND p."buyer_id" = %s',
        fallback=fallback,
    )


def purchase_with_release(user, pk):
    """The purchase ``pk`` if it is one of ``user``'s (:func:`purchases`), with its release (None before
    it is released) and the release's listing (without its sealed true answer); None otherwise."""
    if not _authenticated(user):
        return None
    found = _purchase_read().one((pk, user.pk))
    if found is None:
        return None
    purchase, release, listing = found
    if release is not None:
        release.listing = listing
        purchase.listing = listing
    type(purchase)._meta.get_field("release").set_cached_value(purchase, release)
    if release is not None:
        type(release)._meta.get_field("purchase").set_cached_value(release, purchase)
    return purchase


@functools.cache
def _holding_read():
    from market.trading.models import Holding

    from .reads import Prepared

    return Prepared(
        select=[(Holding, "h", ())],
        sql=f'FROM "{Holding._meta.db_table}" h WHERE h."buyer_id" = %s AND h."listing_id" = %s',
        fallback=lambda user_id, listing_id: (one(Holding.objects.filter(buyer_id=user_id, listing_id=listing_id)),),
    )


def holding(user, listing_id):
    """``user``'s holding on the listing (one of :func:`holdings`), without its listing; None if
    they hold nothing there (or are not signed in)."""
    if not _authenticated(user):
        return None
    found = _holding_read().one((user.pk, listing_id))
    return None if found is None else found[0]
