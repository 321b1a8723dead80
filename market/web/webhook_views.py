"""The Webhooks section of the account page: add an endpoint (its secret shown once), list
endpoints and recent deliveries, send one again, roll a secret, delete an endpoint. Every action
is a POST that redirects back to the page (no JavaScript needed)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from market.core.errors import DomainError
from market.webhooks.services import delivery_replay, endpoint_create, endpoint_delete, endpoint_roll_secret

from .account_forms import WebhookForm
from .account_page import WEBHOOK_SECRET as NEW_SECRET
from .account_page import account_page as _page


def _show_once(request, endpoint, secret: str) -> None:
    request.session[NEW_SECRET] = {"url": endpoint.url, "secret": secret}


@never_cache
@require_POST
@login_required
def webhook_create(request):
    form = WebhookForm(request.POST, user=request.user)
    if not form.is_valid():
        return _page(request, webhook_form=form, status=400)
    try:
        endpoint, secret = endpoint_create(
            user=request.user, url=form.cleaned_data["url"], events=form.cleaned_data["events"],
            description=form.cleaned_data["description"],
        )
    except DomainError as error:
        for name, problems in error.fields.items():
            if name in form.fields:
                for problem in problems:
                    form.add_error(name, problem)
        if not error.fields:
            form.add_error(None, error.message)
        return _page(request, webhook_form=form, status=400)
    _show_once(request, endpoint, secret)
    return redirect("web:account")


@never_cache
@require_POST
@login_required
def webhook_roll(request, endpoint_id: str):
    endpoint, secret = endpoint_roll_secret(user=request.user, endpoint_id=endpoint_id)  # another's: 404
    _show_once(request, endpoint, secret)
    return redirect("web:account")


@require_POST
@login_required
def webhook_delete(request, endpoint_id: str):
    endpoint_delete(user=request.user, endpoint_id=endpoint_id)  # another's: 404
    messages.success(request, "Deleted the webhook address: nothing more is sent to it.")
    return redirect("web:account")


@require_POST
@login_required
def webhook_replay(request, delivery_id: str):
    delivery_replay(user=request.user, delivery_id=delivery_id)  # another's: 404
    messages.success(request, "Sending it again now; its status below changes once it is sent.")
    return redirect("web:account")
