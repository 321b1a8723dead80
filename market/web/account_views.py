"""The account settings page: roles, API keys, a link to change the password.

Every action is a POST that redirects back to the page. A new key's secret is kept in the
session only until the page shows it once (the next GET takes it out)."""

from __future__ import annotations

from datetime import timedelta

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from django.shortcuts import redirect
from market.accounts import selectors
from market.accounts.services import api_key_create, api_key_revoke, api_key_rotate, user_role_add, user_role_drop
from market.core.errors import DomainError

from .account_forms import ApiKeyForm, RoleForm, RotateForm
from .account_page import KEY_SECRET as NEW_SECRET
from .account_page import account_page as _page


def _show_once(request, key, secret):
    request.session[NEW_SECRET] = {"name": key.name, "secret": secret}


def _posted_role(request) -> str | None:
    """The role a form posted, or None with "Choose buyer or owner." to show."""
    form = RoleForm(request.POST)
    if form.is_valid():
        return form.cleaned_data["role"]
    messages.error(request, "Choose buyer or owner.")
    return None


@never_cache
@login_required
def account(request):
    return _page(request)


@require_POST
@login_required
def role_add(request):
    role = _posted_role(request)
    if role is None:
        return redirect("web:account")
    user_role_add(user=request.user, role=role)
    messages.success(request, f"You are now also a{'n' if role == 'owner' else ''} {role}.")
    return redirect("web:owner" if role == "owner" else "web:account")  # a new owner starts on the dashboard


@require_POST
@login_required
def role_drop(request):
    """Stop being a buyer or an owner; refused with the reason (an only role, an owner's open listings)."""
    role = _posted_role(request)
    if role is None:
        return redirect("web:account")
    try:
        user_role_drop(user=request.user, role=role)
    except DomainError as error:
        messages.error(request, f"You are still a{'n' if role == 'owner' else ''} {role}: {error.message}.")
        return redirect("web:account")
    kept = "your datasets, closed listings and earnings stay as they are" if role == "owner" else (
        "your releases stay in your library and your wallet keeps its credits")
    messages.success(request, f"You are no longer a{'n' if role == 'owner' else ''} {role}; {kept}. "
                              "You can take the role back here at any time.")
    return redirect("web:account")


@never_cache
@require_POST
@login_required
def key_create(request):
    form = ApiKeyForm(request.POST)
    if not form.is_valid():
        return _page(request, key_form=form, status=400)
    days = form.cleaned_data["expires_in_days"]
    try:
        key, secret = api_key_create(
            user=request.user,
            name=form.cleaned_data["name"],
            expires_at=timezone.now() + timedelta(days=days) if days else None,
        )
    except DomainError as error:
        messages.error(request, error.message)
        return redirect("web:account")
    _show_once(request, key, secret)
    return redirect("web:account")


@require_POST
@login_required
def key_revoke(request, key_id: str):
    key = api_key_revoke(user=request.user, key_id=key_id)  # NotFound -> 404 (middleware)
    messages.success(request, f"Revoked “{key.name}”.")
    return redirect("web:account")


@never_cache
@require_POST
@login_required
def key_rotate(request, key_id: str):
    form = RotateForm(request.POST)
    hours = (form.cleaned_data.get("grace_hours") or 0) if form.is_valid() else None
    if hours is None:
        messages.error(request, "The old key may keep working for 0 to 24 hours.")
        return redirect("web:account")
    selectors.api_key_get(user=request.user, key_id=key_id)  # another user's key: 404
    try:
        key, secret = api_key_rotate(user=request.user, key_id=key_id, grace=timedelta(hours=hours))
    except DomainError as error:
        messages.error(request, error.message)
        return redirect("web:account")
    _show_once(request, key, secret)
    return redirect("web:account")
