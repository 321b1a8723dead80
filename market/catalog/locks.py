"""Row locks on the catalogue's rows, in the product's lock order (``market.core.locks``)."""

from __future__ import annotations

from django.db.models import F
from django.utils import timezone

from market.core import visibility
from market.core.locks import LockedRows, Rank, taken

from .models import Dataset, Listing, UploadSession


def dataset_lock(*, owner, dataset_id: str, removed: bool = False) -> Dataset | None:
    """The owner's dataset of public id ``dataset_id``, locked for update (listings on it are
    then created one at a time); None if the owner has no such dataset (or removed it, unless
    ``removed``)."""
    taken(Rank.DATASET, f"dataset {dataset_id}")
    return visibility.owned_datasets(owner, removed=removed).select_for_update().filter(public_id=str(dataset_id)).first()


def dataset_lock_pk(*, pk: int) -> Dataset | None:
    """The dataset of integer id ``pk``, locked for update (its processing task finishing, its
    files being re-sealed); None if there is none."""
    taken(Rank.DATASET, f"dataset #{pk}")
    return Dataset.objects.select_for_update().filter(pk=pk).first()


def dataset_sales_lock(*, pk: int) -> None:
    """The dataset of integer id ``pk``, locked ``FOR NO KEY UPDATE`` for a purchase on one of its
    trust-capped listings: such purchases take turns per dataset, whoever the buyer (each trust
    tier's cap is shared by everyone in the tier, across the dataset's capped listings, so two
    buyers' purchases must not both pass on the same room). Foreign-key checks on the dataset
    (``FOR KEY SHARE``) never wait for it. One statement."""
    taken(Rank.DATASET, f"dataset #{pk} (its trust-capped sales)")
    Dataset.objects.select_for_update(no_key=True).filter(pk=pk).values_list("pk", flat=True).first()


def dataset_lock_any(*, dataset_id: str) -> Dataset | None:
    """The dataset of public id ``dataset_id``, whoever owns it, locked for update (staff's budget
    changes; the caller checks who may change it); None if there is none."""
    taken(Rank.DATASET, f"dataset {dataset_id}")
    return Dataset.objects.select_for_update().filter(public_id=str(dataset_id)).first()


def listing_share_lock(*, listing_id: int) -> Listing | None:
    """The open listing ``listing_id`` (without the raw data or the true answer, with its
    owner's id as ``dataset_owner_id``), under a SHARE lock: any number of purchases hold it
    at once, while an owner's change to the ceiling or to ``is_open`` waits for them. None if
    there is no open listing of that id. One statement."""
    taken(Rank.LISTING, f"listing {listing_id}")
    return _OPEN_LISTING_SHARED.one((listing_id,))


def _open_listing_with_owner(listing_id):
    # SQLite: IMMEDIATE transactions already serialise every writer
    return (
        Listing.objects.defer("answer").annotate(dataset_owner_id=F("dataset__owner_id"))
        .filter(pk=listing_id, is_open=True).first()
    )


#: an open listing, share-locked (Django's select_for_update() cannot say FOR SHARE), without its
#: true answer, with its owner's id beside it; its SQL written once
_OPEN_LISTING_SHARED = LockedRows(
    Listing, where='t."id" = %s AND t."is_open"', mode="share", exclude=("answer",),
    extra=((f'(SELECT d."owner_id" FROM "{Dataset._meta.db_table}" d WHERE d."id" = t."dataset_id")', "dataset_owner_id"),),
    fallback=_open_listing_with_owner,
)


def owned_listings_lock(*, owner) -> list[int]:
    """Every listing of ``owner``, locked for update in id order (before changing them together);
    waits for the purchases that hold them. Returns their ids."""
    taken(Rank.LISTING, f"listings of owner {owner.pk}")
    return list(
        Listing.objects.select_for_update(of=("self",)).filter(dataset__owner=owner).order_by("pk").values_list("pk", flat=True)
    )


def listing_answer_lock(*, listing_id: int) -> Listing | None:
    """The listing ``listing_id`` (open or closed) with only its true answer loaded, locked for update
    (re-encrypting the answer under a new key); None if there is none."""
    taken(Rank.LISTING, f"listing {listing_id}")
    return Listing.objects.select_for_update(of=("self",)).only("pk", "answer").filter(pk=listing_id).first()


def listing_prepare_lock(*, pk: int) -> Listing | None:
    """The listing of integer id ``pk``, whoever owns it (without its true answer), locked for update:
    its preparation storing the answer it computed, or the sweeper handing it out again. Taken after
    its dataset's lock. None if there is none."""
    taken(Rank.LISTING, f"listing #{pk}")
    return Listing.objects.select_for_update(of=("self",)).defer("answer").filter(pk=pk).first()


def listing_lock(*, owner, listing_id: int) -> Listing | None:
    """One of ``owner``'s listings (open or closed; without its true answer, with its dataset),
    locked for update: an owner's change to it waits for the purchases that hold it (they take
    a share lock) and they for the change. None if the owner has no such listing."""
    taken(Rank.LISTING, f"listing {listing_id}")
    return (
        visibility.owned_listings(owner).select_for_update(of=("self",)).defer("answer")
        .filter(pk=listing_id).first()
    )


def owned_datasets_lock(*, owner) -> list[int]:
    """Every dataset of ``owner``, locked for update in id order: no listing is created or reopened
    on them meanwhile (``listing_create`` and ``listing_reopen`` lock theirs). Returns their ids."""
    taken(Rank.DATASET, f"datasets of owner {owner.pk}")
    return list(
        visibility.owned_datasets(owner).select_for_update().order_by("pk").values_list("pk", flat=True)
    )


def upload_lock(*, owner, upload_id: str) -> UploadSession | None:
    """The owner's open, unexpired resumable upload ``upload_id`` (``market.catalog.chunks``), locked
    for update; None if there is none."""
    taken(Rank.UPLOAD, f"upload {upload_id}")
    return (visibility.owned_uploads(owner).filter(expires_at__gt=timezone.now()).select_for_update()
            .filter(public_id=str(upload_id)).first())


def expired_upload_lock(*, pk: int, now) -> UploadSession | None:
    """The expired resumable upload ``pk`` never made into a dataset, locked for its deletion; None
    if there is none or another sweep holds it (skipped, not waited for)."""
    taken(Rank.UPLOAD, f"upload #{pk}")
    return (UploadSession.objects.filter(pk=pk, dataset__isnull=True, expires_at__lte=now)
            .select_for_update(skip_locked=True).first())
