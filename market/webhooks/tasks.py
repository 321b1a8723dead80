"""Celery tasks of webhooks, all on their own ``webhooks`` queue (``CELERY_TASK_ROUTES``) so a slow
or failing receiver never holds up the release worker: thin, by id, idempotent."""

from celery import shared_task

from .services import deliveries_sweep, delivery_attempt, events_record, outbox_sweep


@shared_task(name="webhooks.events_record", acks_late=True)
def events_record_task(items: list) -> None:
    events_record(items=[tuple(item) for item in items])


@shared_task(name="webhooks.delivery_attempt", acks_late=True)
def delivery_attempt_task(delivery_id: str) -> None:
    delivery_attempt(delivery_id=delivery_id)


@shared_task(name="webhooks.sweep")
def sweep_task() -> int:
    return outbox_sweep() + deliveries_sweep()
