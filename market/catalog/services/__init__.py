"""Owners' writes: datasets (:mod:`.datasets`), new listings (:mod:`.listings`, prepared over large tables by
:mod:`.preparation`) and changes to listings (:mod:`.managing`); what they share is in :mod:`.common`.
Everything callers use is re-exported here."""

from ..processing import dataset_process, dataset_queue, new_job
from .datasets import (
    CLOSED_DATASET_REMOVED,
    dataset_budget_set,
    dataset_columns_set,
    dataset_create,
    dataset_remove,
    same_content_notice,
)
from .listings import listing_check, listing_compare, listing_create, listing_create_microdata
from .managing import CLOSED_BY_OWNER, listing_answers_rotate, listing_close, listing_reopen, listing_update
from .preparation import listing_prepare, listing_prepare_fail, listings_prepare_sweep

__all__ = [
    "CLOSED_BY_OWNER", "CLOSED_DATASET_REMOVED", "dataset_budget_set", "dataset_columns_set", "dataset_create",
    "dataset_process", "dataset_remove",
    "dataset_queue", "listing_answers_rotate", "listing_check", "listing_close", "listing_compare", "listing_create",
    "listing_create_microdata", "listing_prepare", "listing_prepare_fail", "listing_reopen", "listing_update",
    "listings_prepare_sweep", "new_job", "same_content_notice",
]
