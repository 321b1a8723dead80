"""The baseline's endpoints, at the product's paths: quote, purchase (``Prefer: wait``), the purchase
read back (``Prefer: wait``), a listing with the level held, and a health check."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from django.conf import settings
from django.http import HttpResponse
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import APIView

from . import trading
from .models import Holding, Listing, Purchase
from .waits import wait

LEVEL = Decimal("0.0001")
PREFER_WAIT = re.compile(r"(?:^|[,;\s])wait\s*=\s*(\d+(?:\.\d+)?)", re.I)


def level_of(raw) -> Decimal:
    try:
        level = Decimal(str(raw))
    except (InvalidOperation, TypeError, ValueError):
        raise exceptions.ValidationError("epsilon must be a decimal") from None
    if not level.is_finite() or level <= 0 or level != level.quantize(LEVEL):
        raise exceptions.ValidationError("epsilon must be a positive number with at most four decimals")
    return level


def prefer_wait(request) -> float:
    m = PREFER_WAIT.search(request.headers.get("Prefer", ""))
    return min(float(m.group(1)), settings.WAIT_MAX) if m else 0.0


def shown(p: Purchase, release=None) -> dict:
    out = {"id": p.pk, "listing": p.listing_id, "epsilon": str(p.level_to), "price": str(p.price), "status": p.status}
    if release is not None:
        out["values"] = release.values
    return out


def answer(purchase: Purchase, seconds: float, created: bool) -> Response:
    """After waiting up to ``seconds`` for the release: 201 (or 200) with it, else 202."""
    if purchase.status != "released" and seconds:
        wait(purchase.pk, seconds)
        purchase = Purchase.objects.select_related("release").get(pk=purchase.pk)
    released = purchase.status == "released"
    status = (201 if created else 200) if released or not created else 202
    headers = {"Preference-Applied": f"wait={seconds:g}"} if seconds else {}
    return Response(shown(purchase, purchase.release if released else None), status=status, headers=headers)


def refused(exc: trading.Refused) -> Response:
    return Response({"error": {"message": str(exc)}}, status=exc.status)


class QuoteView(APIView):
    def get(self, request, pk: int):
        try:
            return Response(trading.quote(request.user, pk, level_of(request.query_params.get("epsilon"))))
        except trading.Refused as exc:
            return refused(exc)


class PurchasesView(APIView):
    def post(self, request):
        try:
            listing = int(request.data["listing"])
        except (KeyError, TypeError, ValueError):
            raise exceptions.ValidationError("give listing (an id) and epsilon") from None
        key = request.headers.get("Idempotency-Key") or None
        if key and len(key) > 64:
            raise exceptions.ValidationError("Idempotency-Key: at most 64 characters")
        try:
            purchase, created = trading.purchase(request.user, listing, level_of(request.data.get("epsilon")), key)
        except trading.Refused as exc:
            return refused(exc)
        return answer(purchase, prefer_wait(request), created)


class PurchaseView(APIView):
    def get(self, request, pk: int):
        purchase = Purchase.objects.filter(pk=pk, buyer=request.user).first()
        if purchase is None:
            raise exceptions.NotFound("no such purchase")
        response = answer(purchase, prefer_wait(request), created=False)
        response.status_code = 200
        return response


class ListingView(APIView):
    def get(self, request, pk: int):
        listing = Listing.objects.filter(pk=pk).first()
        if listing is None:
            raise exceptions.NotFound("no such listing")
        held = Holding.objects.filter(buyer=request.user, listing=listing).values_list("purchased", flat=True).first()
        return Response({"id": listing.pk, "ceiling": str(listing.ceiling),
                         "your_level": None if held is None else str(held)})


def ping(request):
    return HttpResponse("ok")
