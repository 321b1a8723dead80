"""Celery tasks: thin, loaded by id, idempotent, acknowledged late."""

from celery import shared_task


@shared_task(name="releases.compute", bind=True, max_retries=5, acks_late=True)
def release_compute_task(self, purchase_id: str) -> None:
    from market.trading.services import purchase_fail

    from .services import release_compute

    try:
        release_compute(purchase_id=purchase_id)
    except Exception as exc:
        if self.request.retries >= self.max_retries:
            purchase_fail(purchase_id=purchase_id, reason="the release could not be computed; the price was refunded")
            return
        raise self.retry(exc=exc, countdown=min(2**self.request.retries, 30))


@shared_task(name="releases.sweep_pending")
def sweep_pending() -> int:
    from .services import releases_sweep

    return releases_sweep()
