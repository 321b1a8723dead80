"""The baseline's endpoint (``POST debit/``) and a health check."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from django.http import HttpResponse
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import APIView

from .models import Budget
from .services import OutOfBudget, budget_debit

LEVEL = Decimal("0.0001")


class DebitView(APIView):
    def post(self, request):
        try:
            budget_id = int(request.data["budget"])
            amount = Decimal(str(request.data["amount"]))
        except (KeyError, TypeError, ValueError, InvalidOperation):
            raise exceptions.ValidationError("give budget (an id) and amount (a decimal)") from None
        if not amount.is_finite() or amount <= 0 or amount != amount.quantize(LEVEL):
            raise exceptions.ValidationError("amount must be a positive number with at most four decimals")
        try:
            release, remaining = budget_debit(buyer=request.user, budget_id=budget_id, amount=amount)
        except Budget.DoesNotExist:
            raise exceptions.NotFound("no such budget") from None
        except OutOfBudget as exc:
            return Response({"error": str(exc)}, status=409)
        return Response({"id": release.pk, "status": "released", "epsilon": str(amount), "value": release.value,
                         "remaining": str(remaining)})


def ping(request):
    return HttpResponse("ok")
