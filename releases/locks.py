"""Row locks on noise paths, in the product's lock order (``market.core.locks``)."""

from __future__ import annotations

from market.core.locks import Rank, taken

from .models import NoisePath


def path_lock(*, listing_id) -> NoisePath:
    """The listing's noise path, locked for update, with its listing and the listing's dataset read
    in the same statement (their rows are not locked): a path is extended only under this lock."""
    taken(Rank.PATH, f"path of listing {listing_id}")
    return (NoisePath.objects.select_for_update(of=("self",)).select_related("listing__dataset")
            .get(listing_id=listing_id))


def path_lock_by_id(*, path_id) -> NoisePath | None:
    """The noise path ``path_id``, locked for update (re-encrypting its noise); None if there is none."""
    taken(Rank.PATH, f"path {path_id}")
    return NoisePath.objects.select_for_update().filter(pk=path_id).first()
