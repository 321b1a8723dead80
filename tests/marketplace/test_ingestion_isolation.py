"""Ingestion is isolated from releases: its own Celery queue (served by its own worker), and at most
INGEST_MAX_PROCESSING_PER_OWNER datasets of one owner being read at once."""

from __future__ import annotations

import uuid

import pytest


@pytest.fixture
def sent(monkeypatch):
    """The (task name, queue) of each message the app sends (none is published)."""
    from market.celery import app

    messages = []

    def send_task_message(producer, name, message, **options):
        messages.append((name, options["queue"].name))

    monkeypatch.setattr(app.conf, "task_always_eager", False)
    monkeypatch.setattr(app.amqp, "send_task_message", send_task_message)
    return messages


def test_a_dataset_is_read_on_the_ingest_queue_and_a_release_on_the_default_one(sent):
    from market.catalog.services import dataset_queue
    from market.trading.services import purchase_queue

    assert dataset_queue(dataset_pk=123) is True
    assert purchase_queue(purchase_id=uuid.uuid4()) is True
    assert sent == [("catalog.dataset_process", "ingest"), ("trading.release_purchase", "celery")]
