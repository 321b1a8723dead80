"""Row locks on accounts and their API keys, in the product's lock order (``market.core.locks``)."""

from __future__ import annotations

from market.core.locks import Rank, taken

from .models import ApiKey, User


def user_lock(*, user: User) -> None:
    """The user's row, so that their key writes take turns (the per-user cap is counted under it).
    ``FOR NO KEY UPDATE``: foreign-key checks on the user (``FOR KEY SHARE``) never wait for it."""
    taken(Rank.USER, f"user {user.pk}")
    User.objects.select_for_update(no_key=True).filter(pk=user.pk).values_list("pk", flat=True).first()


def api_key_lock(*, user: User, key_id: str) -> ApiKey | None:
    """One of ``user``'s keys, locked for update; None if they have no such key."""
    taken(Rank.API_KEY, f"API key {key_id}")
    return ApiKey.objects.select_for_update().filter(user=user, pk=key_id).first()
