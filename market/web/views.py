"""The buyer's pages and sign-up. Views are thin: services write, selectors read."""

import csv
import io
import json
import uuid
from decimal import Decimal

from django import forms
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from market.catalog import selectors as catalog
from market.catalog import sizes
from market.catalog import accuracy
from market.catalog.accuracy import default_records, statistic_curves
from market.catalog.pricing import curve_of, price_increment
from market.catalog.selectors import listing_plan
from market.catalog.spec import describe
from market.core.errors import DomainError, InsufficientFunds, PriceChanged, ServiceUnavailable
from market.ledger import selectors as ledger
from market.ledger.payments import provider
from market.trading import selectors as trading
from market.core.levels import level_text
from market.trading.records import records_response, rows_response
from market.trading.services import QUEUE_DOWN_NOTE, purchase_create, purchase_quote
from market.trust.selectors import buyer_cap

from .charts import bounds_at, listing_charts, point_plot
from .forms import BuyForm, CatalogueFilterForm, SignupForm, TargetForm, TopUpForm, assume_records


def signup(request):
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        messages.success(request, f"Welcome, {user.username}.")
        return redirect("web:owner" if user.is_owner and not user.is_buyer else "web:catalogue")
    return render(request, "registration/signup.html", {"form": form}, status=400 if form.errors else 200)


def catalogue(request):
    form = CatalogueFilterForm(request.GET or None)
    filters = form.cleaned_data if form.is_valid() else {}
    listings = catalog.listing_search(
        user=request.user,
        text=filters.get("q") or "",
        kind=filters.get("kind") or "",
        max_price=filters.get("max_price"),
        min_ceiling=filters.get("min_ceiling"),
        sort=filters.get("sort") or "newest",
    )
    page = Paginator(listings, 10).get_page(request.GET.get("page"))
    held = catalog.levels_held(user=request.user, listing_ids=[l.pk for l in page]) if request.user.is_authenticated else {}
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "web/catalogue.html",
        {"form": form, "page": page, "held": held, "query": query.urlencode()},
    )


def _held(request, listing) -> Decimal:
    if not request.user.is_authenticated:
        return Decimal(0)
    return catalog.levels_held(user=request.user, listing_ids=[listing.pk]).get(listing.pk, Decimal(0))


def _next_step(listing, held: Decimal, cap: Decimal) -> dict | None:
    """For a buyer holding a level: what doubling it (up to their cap, at most the ceiling) costs and gains."""
    if held <= 0 or held >= cap:
        return None
    mechanism = listing.release_mechanism
    target = mechanism.next_level(held, cap, ladder=lambda: listing.microdata().levels)  # a ladder's: within the cap
    if target is None:
        return None
    now, then = bounds_at(listing, held), bounds_at(listing, target)
    return {
        "epsilon": target,
        "price": price_increment(listing, held, target),
        "factor": mechanism.gain(held, target, now[0]["bound"], then[0]["bound"]),
        "now": now,
        "then": then,
    }


def _quote(request, listing, form, field: str, **level):
    """The quote for a valid GET form (by level or by accuracy), or None with the reason on the form:
    on its records field, or on its ``field`` (the level's or the bound's) for any other."""
    try:
        return purchase_quote(buyer=request.user, listing=listing, records=form.cleaned_data.get("records"), **level)
    except DomainError as exc:
        service = next((f for f in ("epsilon", "target", "records") if f in exc.fields), None)
        into = "records" if service == "records" else field
        form.add_error(into, exc.fields[service][0] if service else exc.message)
        return None


def _wallet_short(request, quote) -> Decimal | None:
    """How many credits a signed-in buyer's wallet lacks for ``quote`` (None when it holds enough)."""
    if quote is None or not request.user.is_authenticated or not request.user.is_buyer:
        return None
    short = quote.price - ledger.wallet_balance(user=request.user)
    return short if short > 0 else None


def microdata_ladder(listing, held: Decimal, cap: Decimal) -> dict | None:
    """What a microdata listing's page shows (None for other listings): per ladder level, the price
    from the level held, each bit's chance of being reported correctly (p) and wrongly (q) and the
    95% bound of each decoded count; the columns' bits in words and the public Bloom salt, if any."""
    if not listing.release_mechanism.sells_records:
        return None
    md = listing.microdata()
    curves = accuracy.microdata_curves(md)
    rows = []
    for eps in md.levels:
        p, q = md.rates(eps)
        rows.append({"level": eps, "held": eps <= held, "above_cap": eps > cap,
                     "price": price_increment(listing, held, eps) if eps > held else None,
                     "p": p, "q": q, "bound": md.bound(eps), "mostly_noise": bool(accuracy.wide_bounds(accuracy.bounds_at(curves, eps)))})
    return {"rows": rows, "records": md.records, "bits": md.bits, "weight": md.weight, "columns": md.describe(),
            "labels": md.labels, "bloom": any(f.encoding == "bloom" for f in md.fields), "salt": md.salt,
            "buyable": [row["level"] for row in rows if not row["held"] and not row["above_cap"]]}


def _ladder_select(form, ladder: dict) -> None:
    """A microdata listing sells its ladder's levels only: the level input is a choice among those
    above the level held (a level typed into the address is still judged, and refused, by the service)."""
    choices = [(level_text(eps), f"ε {level_text(eps)}") for eps in ladder["buyable"]]
    form.fields["epsilon"].widget = forms.Select(choices=choices)


def listing_detail(request, listing_id, buy_form=None, status=200):
    """The listing, with a quote when an ε is asked for; after a refused purchase (``buy_form``
    carries the reason) the quote of the ε that was to be bought stays on the page beside it."""
    listing = catalog.listing_get(user=request.user, listing_id=listing_id)
    held = _held(request, listing)
    quote = None
    plan = listing_plan(listing)
    curves = statistic_curves(plan, size=sizes.release_of(listing))
    by_accuracy = buy_form is None and "within" in request.GET
    form = buy_form or BuyForm(request.GET if "epsilon" in request.GET and not by_accuracy else None)
    target_form = TargetForm(request.GET if by_accuracy else None, names=[c["name"] for c in curves])
    for either in (form, target_form):
        assume_records(either, default_records(plan))
    if by_accuracy:
        if target_form.is_valid():
            quote = _quote(request, listing, target_form, "within", target=target_form.target())
        status = 200 if quote else 400
    elif buy_form is None and form.is_bound:
        if form.is_valid():
            quote = _quote(request, listing, form, "epsilon", epsilon=form.cleaned_data["epsilon"])
        status = 200 if quote else 400
    if quote is not None:  # the other form starts from this quote: its assumption, and the level found
        assumed = {s["assumes_records"] for s in quote.statistics} - {None, default_records(plan)}
        for other in (form, target_form):
            if not other.is_bound:
                other.initial.update({"records": min(assumed)} if assumed else {})
        if by_accuracy:
            form.initial["epsilon"] = f"{quote.epsilon.normalize():f}"
    if buy_form is not None and getattr(buy_form, "cleaned_data", {}).get("epsilon") is not None:
        # a refused purchase: its reason is on the form, and the quote of the level it was for stays beside it
        try:
            quote = purchase_quote(buyer=request.user, listing=listing, epsilon=buy_form.cleaned_data["epsilon"],
                                   records=buy_form.cleaned_data.get("records"))
        except DomainError:
            quote = None
    is_owner = request.user.is_authenticated and listing.dataset.owner_id == request.user.pk
    cap = buyer_cap(listing=listing, buyer=request.user)
    ladder = microdata_ladder(listing, held, cap.level)
    if ladder:
        _ladder_select(form, ladder)
    levels_sold = listing.release_mechanism.ladder()  # a calibrated listing's levels (the Skellam path)
    if levels_sold:
        _ladder_select(form, {"buyable": [eps for eps in levels_sold if (held or 0) < eps <= cap.level]})
    return render(
        request,
        "web/listing.html",
        {
            "listing": listing,
            "describe": describe(plan),
            "engine": listing.release_mechanism.words(),
            "guarantee": listing.release_mechanism.guarantee(len(listing.labels)),
            "held": held,
            "form": form,
            "quote": quote,
            "target_form": target_form,
            "assumes_records": any(c["assumes_records"] is not None for c in curves),
            "size_release": sizes.shown(listing),
            "wallet_short": _wallet_short(request, quote),
            "idempotency_key": uuid.uuid4().hex,
            "cap": cap,
            "next_step": _next_step(listing, held, cap.level),
            "charts": None if ladder else listing_charts(listing, held),
            "ladder": ladder,
            "levels_sold": [level_text(eps) for eps in levels_sold or ()],
            "states_delta": listing.release_mechanism.states_delta,
            "price_formula": curve_of(listing).formula(),
            "is_owner": is_owner,
        },
        status=status,
    )


@login_required
@require_POST
def listing_buy(request, listing_id):
    form = BuyForm(request.POST)
    if not form.is_valid():
        return listing_detail(request, listing_id, buy_form=form, status=400)
    try:
        result = purchase_create(
            buyer=request.user,
            listing_id=listing_id,
            epsilon=form.cleaned_data["epsilon"],
            idempotency_key=request.POST.get("idempotency_key") or None,
            max_price=form.cleaned_data.get("max_price"),
        )
    except DomainError as exc:
        if exc.status == 404:
            raise Http404(exc.message) from None
        if isinstance(exc, ServiceUnavailable):  # nothing was charged: the 503 page (market.web.middleware)
            raise
        if isinstance(exc, PriceChanged):  # the page shows the new quote with its own Confirm
            form.add_error(None, f"The price changed: going up to ε {level_text(exc.quote.epsilon)} now costs "
                                 f"{exc.quote.price} credits, not the {form.cleaned_data['max_price']} credits shown. "
                                 "Nothing was charged: check the new price and confirm again.")
        elif isinstance(exc, InsufficientFunds):
            balance = ledger.wallet_balance(user=request.user)
            form.add_error(None, f"Not enough credits: nothing was bought. Your wallet holds {balance:.2f} credits.")
        else:
            # beside the Confirm button the buyer pressed (the level itself was a hidden field of that form)
            form.add_error(None, exc.fields.get("epsilon", [exc.message])[0])
        return listing_detail(request, listing_id, buy_form=form, status=exc.status)
    purchase = result.purchase
    if result.created:
        messages.success(request, f"Bought up to ε = {purchase.level_to.normalize()} for {purchase.price} credits.")
    if result.queued is False:
        messages.warning(request, QUEUE_DOWN_NOTE)
    return redirect("web:purchase", purchase_id=purchase.pk)


#: the longest the purchase page's status request waits for the release before answering
#: "still in flight" (the page then asks again): a long-poll, one request per release
STATUS_WAIT = 25


def _purchase_context(purchase, *, again: bool = False):
    release = getattr(purchase, "release", None) if purchase.status == "released" else None
    readings = trading.release_readings(release) if release else None
    return {
        "purchase": purchase,
        "release": release,
        "readings": readings,
        "microdata": trading.release_microdata(release) if release else None,
        "synthetic": trading.release_synthetic(release) if release else None,
        "plot": point_plot(readings, purchase.listing) if readings else None,
        "again": again,
    }


@login_required
def purchase_detail(request, purchase_id):
    purchase = trading.purchase_get(user=request.user, purchase_id=purchase_id)
    return render(request, "web/purchase.html", _purchase_context(purchase))


@login_required
def purchase_status(request, purchase_id):
    """The live part of the purchase page, answered as soon as the release is made or has failed, or
    unchanged after ``STATUS_WAIT`` seconds (the page then asks again, at most once a second)."""
    purchase = trading.purchase_wait(user=request.user, purchase_id=purchase_id, seconds=STATUS_WAIT)
    return render(request, "web/_purchase_status.html", _purchase_context(purchase, again=True))


@login_required
def library(request):
    statement = Paginator(ledger.wallet_statement(user=request.user), 15).get_page(request.GET.get("page"))
    items = [{"release": r, "readings": trading.release_readings(r), "microdata": trading.release_microdata(r),
              "synthetic": trading.release_synthetic(r)}
             for r in trading.release_list(user=request.user)]
    return render(
        request,
        "web/library.html",
        {
            "holdings": catalog.holdings_list(user=request.user),
            "items": items,
            "purchases": trading.purchase_list(user=request.user).exclude(status="released")[:20],
            "statement": statement,
            "statement_lines": statement_lines(statement),
            "top_up_form": TopUpForm(),
        },
    )


def statement_lines(legs) -> list[dict]:
    """A statement's legs for the page: ``[{"leg", "what"}]`` (what each line was, in words)."""
    return [{"leg": leg, "what": ledger.leg_description(leg)} for leg in legs]


def _text_cell(text: str) -> str:
    """A text cell a spreadsheet will not run as a formula (OWASP's CSV-injection advice)."""
    from market.catalog.csvdata import FORMULA_STARTS

    return "'" + text if text[:1] in FORMULA_STARTS else text


@login_required
def release_download(request, release_id, fmt):
    if fmt not in ("csv", "json"):
        raise Http404("unknown format")
    release = trading.release_get(user=request.user, release_id=release_id)
    readings = trading.release_readings(release)
    name = f"{release.public_id}-listing-{release.listing_id}-eps-{release.level.normalize()}"
    if fmt == "json":
        body = json.dumps(
            {
                "listing": release.listing_id,
                "title": release.listing.title,
                "epsilon": str(release.level),
                "released_at": release.created_at.isoformat(),
                "confidence": 0.95,
                "values": readings,
            },
            indent=2,
        )
        response = HttpResponse(body, content_type="application/json")
    else:
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(["label", "kind", "value", "noise_scale", "error_bound_95"])
        for r in readings:
            # a data file keeps the figures as released and computed (the pages show them rounded)
            writer.writerow([_text_cell(r["label"]), r["kind"], repr(r["value_exact"]), repr(r["noise_scale"]),
                             repr(r["error_bound_exact"])])
        response = HttpResponse(out.getvalue(), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="{name}.{fmt}"'
    return response


@login_required
def release_records(request, release_id, fmt):
    """A microdata release's records as a file (CSV or Parquet): the signed-in buyer's own release
    only; anyone else's, a release of statistics or another format is 404."""
    try:
        return records_response(trading.release_get(user=request.user, release_id=release_id), fmt)
    except DomainError as exc:
        raise Http404(exc.message) from None


@login_required
def release_rows(request, release_id, fmt):
    """A synthetic-data release's rows as a file (CSV or Parquet): the signed-in buyer's own release
    only; anyone else's, a release of anything else or another format is 404."""
    try:
        return rows_response(trading.release_get(user=request.user, release_id=release_id), fmt)
    except DomainError as exc:
        raise Http404(exc.message) from None


@login_required
@require_POST
def top_up(request):
    from django.conf import settings

    form = TopUpForm(request.POST)
    if not settings.DEMO_MODE:
        messages.error(request, "Top-ups are made by staff on this marketplace.")
    elif form.is_valid():
        try:
            provider().fund(user=request.user, amount=form.cleaned_data["amount"], memo="demo top-up")
            messages.success(request, f"Added {form.cleaned_data['amount']:.2f} credits.")
        except DomainError as exc:
            messages.error(request, exc.message)
    else:
        messages.error(request, "Enter an amount between 0.01 and 100000 credits.")
    back = request.POST.get("next", "")
    if back and url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return redirect(back)  # the quote it was topped up for
    return redirect("web:library")
