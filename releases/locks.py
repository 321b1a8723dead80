"""Row locks on noise paths, in the product's lock order (``market.core.locks``)."""

from __future__ import annotations

import functools

from market.core.locks import LockedRows, Rank, taken

from .models import NoisePath


def _path_with_listing(listing_id):
    path = (NoisePath.objects.select_for_update(of=("self",)).select_related("listing__dataset")
            .filter(listing_id=listing_id).first())
    return None if path is None else (path, path.listing, path.listing.dataset)


@functools.cache
def _path_read() -> LockedRows:
    # the models its foreign keys name (releases import nothing of the catalogue)
    Listing = NoisePath._meta.get_field("listing").related_model
    Dataset = Listing._meta.get_field("dataset").related_model
    return LockedRows(
        NoisePath, where='t."listing_id" = %s', fallback=_path_with_listing,
        joined=((Listing, "l", (), f'JOIN "{Listing._meta.db_table}" l ON l."id" = t."listing_id"'),
                (Dataset, "d", (), f'JOIN "{Dataset._meta.db_table}" d ON d."id" = l."dataset_id"')),
    )


def path_lock(*, listing_id) -> NoisePath:
    """The listing's noise path, locked for update, with its listing and the listing's dataset read
    in the same statement (their rows are not locked): a path is extended only under this lock."""
    taken(Rank.PATH, f"path of listing {listing_id}")
    found = _path_read().one((listing_id,))
    if found is None:
        raise NoisePath.DoesNotExist(f"no noise path for listing {listing_id}")
    path, listing, dataset = found
    listing.dataset = dataset
    path.listing = listing
    return path


def path_lock_by_id(*, path_id) -> NoisePath | None:
    """The noise path ``path_id``, locked for update (re-encrypting its noise); None if there is none."""
    taken(Rank.PATH, f"path {path_id}")
    return NoisePath.objects.select_for_update().filter(pk=path_id).first()
