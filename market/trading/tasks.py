"""Celery tasks: thin, loaded by id, idempotent, acknowledged late. They only call services."""

from celery import shared_task

from .services import purchase_fail, purchase_release, purchases_sweep


@shared_task(name="trading.release_purchase", bind=True, max_retries=5, acks_late=True)
def purchase_release_task(self, purchase_id: str, listing_id: int | None = None) -> None:
    """Release a paid purchase (and, in the same transaction, every other one queued on its listing)."""
    try:
        purchase_release(purchase_id=purchase_id, listing_id=listing_id)
    except Exception as exc:
        if self.request.retries >= self.max_retries:
            purchase_fail(purchase_id=purchase_id, reason="the release could not be computed; the price was refunded")
            return
        raise self.retry(exc=exc, countdown=min(2**self.request.retries, 30))


@shared_task(name="trading.sweep_pending")
def sweep_pending() -> int:
    return purchases_sweep()
