"""An owner's earnings: their balance, its statement, their payouts, and asking for one.

Thin: the balance and the statement are read through ``market.ledger.selectors``;
a payout goes through the payment interface (``market.ledger.payments``), which
records it in the ledger (paid at once in demo mode, else requested for staff).
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import redirect, render

from market.core.errors import DomainError
from market.ledger import selectors as ledger
from market.ledger.payments import payout_provider

from .owner_forms import PayoutForm, add_domain_errors
from .owner_views import owner_required
from .views import statement_lines


@login_required
@owner_required
def earnings(request):
    form = PayoutForm(request.POST) if request.method == "POST" else PayoutForm()
    status = 200
    if form.is_bound:
        if form.is_valid():
            try:
                payout, created = payout_provider().pay_out(
                    user=request.user, amount=form.cleaned_data["amount"],
                    idempotency_key=request.POST.get("idempotency_key") or None,
                )
            except DomainError as exc:
                add_domain_errors(form, exc)
                status = exc.status
            else:
                if created:
                    done = "paid out" if payout.status == payout.Status.PAID else "requested: staff will pay it"
                    messages.success(request, f"Payout of {payout.amount} credits {done}.")
                return redirect("web:owner-earnings")
        else:
            status = 400
    balance = ledger.earnings_balance(user=request.user)
    if not form.is_bound and balance > 0:
        form.initial["amount"] = balance
    statement = Paginator(ledger.earnings_statement(user=request.user), 20).get_page(request.GET.get("page"))
    return render(
        request,
        "owner/earnings.html",
        {
            "balance": balance,
            "totals": ledger.payout_totals(user=request.user),
            "payouts": ledger.payout_list(user=request.user)[:20],
            "form": form,
            "idempotency_key": uuid.uuid4().hex,
            "statement": statement,
            "statement_lines": statement_lines(statement),
            "demo_mode": settings.DEMO_MODE,
        },
        status=status,
    )
