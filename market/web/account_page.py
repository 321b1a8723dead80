"""The account page as a whole (API keys, roles, webhooks): what both its key and its webhook
views render, in one module so neither view module needs the other."""

from __future__ import annotations

from django.shortcuts import render
from django.utils import timezone

from market.accounts import selectors
from market.webhooks import selectors as webhook_selectors

from .account_forms import ApiKeyForm, RotateForm, WebhookForm

KEY_SECRET = "account.new_api_key"
WEBHOOK_SECRET = "account.new_webhook_secret"
RECENT = 20


def account_page(request, *, key_form=None, webhook_form=None, status=200):
    new_key = request.session.pop(KEY_SECRET, None)
    now = timezone.now()
    keys = [(key, key.status(now)) for key in selectors.api_key_list(user=request.user)]
    return render(
        request,
        "account/settings.html",
        {
            "key_form": key_form or ApiKeyForm(),
            "rotate_form": RotateForm(),
            "keys": keys,
            "new_key": new_key,
            "missing_roles": [r for r, has in (("buyer", request.user.is_buyer), ("owner", request.user.is_owner)) if not has],
            "held_roles": [r for r, has in (("buyer", request.user.is_buyer), ("owner", request.user.is_owner)) if has],
            **webhook_context(request, form=webhook_form),
        },
        status=status,
    )


def webhook_context(request, *, form=None) -> dict:
    """What the account page shows of webhooks (the new secret taken out of the session: shown once)."""
    return {
        "webhook_form": form or WebhookForm(user=request.user),
        "webhook_endpoints": list(webhook_selectors.endpoint_list(user=request.user)),
        "webhook_deliveries": list(webhook_selectors.delivery_list(user=request.user)[:RECENT]),
        "new_webhook": request.session.pop(WEBHOOK_SECRET, None),
    }
