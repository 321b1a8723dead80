"""The owner's trust page: how far buyers stand, and their caps.

One page (``/owner/trust/``) shows the network and a table of each placed
buyer's distance and cap on a chosen listing (``?listing=<id>``: 404 if it is
not the owner's; default the newest). Each of its forms posts to its own
route; on success it redirects back to the page, on error the page is shown
again with the errors at the inputs that caused them and nothing stored.

Thin views: writes go through ``market.trust.services``, reads through
``market.trust.selectors``. Each owner has one network, the signed-in
owner's: no other owner's network can be named here. A signed-in user who is
not an owner gets the page on becoming one (403).
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from market.core.errors import DomainError, NotFound
from market.trust.edgelist import MAX_BYTES
from market.trust.selectors import trust_overview
from market.trust.services import (
    trust_edges_upload,
    trust_listings_set,
    trust_network_update,
    trust_node_members_set,
    trust_tier_members_set,
    trust_tiers_set,
)

from .owner_forms import add_domain_errors
from .owner_views import owner_required
from .trust_forms import (
    CappedListingsForm,
    EdgeListForm,
    TrustSettingsForm,
    add_tier_errors,
    node_members_form,
    tier_formset,
    tier_members_form,
)


def _listing_id(request) -> int | None:
    """``?listing=<id>``, or None for the default; 404 for anything but an id."""
    chosen = request.GET.get("listing")
    if chosen is None:
        return None
    try:
        return int(chosen)
    except ValueError:
        raise Http404("no such listing among yours") from None


def _page(request, **bound):
    """The page, with the forms in ``bound`` (as posted, with their errors) in
    place of the unbound ones filled from what is stored."""
    try:
        overview = trust_overview(owner=request.user, listing_id=_listing_id(request))
    except NotFound:
        raise Http404("no such listing among yours") from None
    network = overview["network"]
    forms = {
        "settings_form": TrustSettingsForm(
            initial={
                "mode": network.mode,
                "metric": network.metric,
                "home": network.home,
                "map_kind": network.map_kind,
                "lam": overview["display"]["lam"],
                "unknown_distance": overview["display"]["unknown_distance"],
            }
        ),
        "listings_form": CappedListingsForm(
            user=request.user, initial={"listings": [row["id"] for row in overview["listings"] if row["trust_capped"]]}
        ),
        "tier_forms": tier_formset(initial=overview["tiers"]),
        "tier_members_form": tier_members_form(initial=overview["tier_members"]),
        "edge_form": EdgeListForm(),
        "node_members_form": node_members_form(initial=overview["node_members"]),
    }
    forms.update(bound)
    return render(request, "owner/trust.html", {**overview, **forms})


def _saved(request, text: str, anchor: str):
    messages.success(request, text)
    return redirect(f"{reverse('web:owner-trust')}#{anchor}")


@login_required
@owner_required
def trust(request):
    return _page(request)


@login_required
@owner_required
@require_POST
def trust_settings(request):
    form = TrustSettingsForm(request.POST)
    if form.is_valid():
        try:
            trust_network_update(owner=request.user, **form.cleaned_data)
        except DomainError as exc:
            add_domain_errors(form, exc)
        else:
            return _saved(request, "Trust settings saved: caps follow them from now on.", "settings")
    return _page(request, settings_form=form)


@login_required
@owner_required
@require_POST
def trust_listings(request):
    form = CappedListingsForm(request.POST, user=request.user)
    if form.is_valid():
        try:
            chosen = [listing.pk for listing in form.cleaned_data["listings"]]
            count = trust_listings_set(owner=request.user, listing_ids=chosen)
        except DomainError as exc:
            add_domain_errors(form, exc)
        else:
            return _saved(request, f"{count} listing{'s' if count != 1 else ''} capped by trust.", "listings")
    return _page(request, listings_form=form)


@login_required
@owner_required
@require_POST
def trust_tiers(request):
    formset = tier_formset(data=request.POST)
    if formset.is_valid():
        tiers, rows = formset.tiers()
        try:
            trust_tiers_set(owner=request.user, tiers=tiers)
        except DomainError as exc:
            add_tier_errors(formset, rows, exc.fields.get("tiers", [exc.message]))
        else:
            return _saved(request, "Tiers saved.", "tiers")
    return _page(request, tier_forms=formset)


@login_required
@owner_required
@require_POST
def trust_tier_members(request):
    form = tier_members_form(request.POST)
    if form.is_valid():
        try:
            count = trust_tier_members_set(owner=request.user, text=form.cleaned_data["members"])
        except DomainError as exc:
            add_domain_errors(form, exc)
        else:
            return _saved(request, f"{count} buyer{'s' if count != 1 else ''} placed in tiers.", "tiers")
    return _page(request, tier_members_form=form)


@login_required
@owner_required
@require_POST
def trust_edges(request):
    form = EdgeListForm(request.POST, request.FILES)
    if form.is_valid():
        # read one byte past the limit at most: the parser then names the limit
        data = form.cleaned_data["file"].read(MAX_BYTES + 1)
        try:
            network = trust_edges_upload(owner=request.user, data=data)
        except DomainError as exc:
            add_domain_errors(form, exc)
        else:
            count = network.edges.count()
            return _saved(request, f"Edge list uploaded: {count} edge{'s' if count != 1 else ''}.", "graph")
    return _page(request, edge_form=form)


@login_required
@owner_required
@require_POST
def trust_node_members(request):
    form = node_members_form(request.POST)
    if form.is_valid():
        try:
            count = trust_node_members_set(owner=request.user, text=form.cleaned_data["members"])
        except DomainError as exc:
            add_domain_errors(form, exc)
        else:
            return _saved(request, f"{count} buyer{'s' if count != 1 else ''} placed at organisations.", "graph")
    return _page(request, node_members_form=form)
