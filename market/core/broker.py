"""A worker keeps running when Redis, its broker, goes away while it holds unacknowledged tasks.

Kombu's Redis transport (5.7) closes the consumer's channel when the broker
connection is lost, and closing the channel tries to put the tasks it holds
(acknowledged late) back on their queue. By then the connection has been
released: the attempt raises ``AttributeError`` (the transport has no client
any more), which Celery treats as an unrecoverable error, and the worker
process exits. A broker outage of a few seconds would stop every release
until someone restarted the worker (seen in ``tests/faults/test_under_load.py``).

Nothing needs restoring at that moment: Redis still holds those tasks in its
``unacked`` index, and any worker puts them back on their queue after the
visibility timeout (``CELERY_BROKER_TRANSPORT_OPTIONS``); the release tasks are
idempotent. So when the channel has lost its connection, the restore is
skipped (and logged) instead of raising; so is the acknowledgement of a task
that finished just after the connection was lost (the same ``AttributeError``,
raised from the worker's event loop): its message stays in the ``unacked``
index and is delivered again after the visibility timeout, which an idempotent
task answers by doing nothing. In production run the workers under a
supervisor that restarts them (systemd ``Restart=always``) all the same.
"""

from __future__ import annotations

import logging

from kombu.transport import redis as kombu_redis
from kombu.transport import virtual

log = logging.getLogger(__name__)


class QoS(kombu_redis.QoS):
    def _connection_gone(self) -> bool:
        transport = getattr(self.channel, "connection", None)
        return transport is None or getattr(transport, "client", None) is None

    def restore_unacked(self, client=None):
        if client is None and self._connection_gone():
            held = len(self._delivered)
            self._delivered.clear()
            if held:
                log.warning(
                    "broker connection lost with %s task(s) unacknowledged; Redis redelivers them after the "
                    "visibility timeout", held,
                )
            return None
        return super().restore_unacked(client)

    def ack(self, delivery_tag):
        # a task that finished after the connection was lost: its message stays in Redis's unacked
        # index and is delivered again after the visibility timeout (the tasks are idempotent)
        if self._connection_gone():
            log.warning("broker connection lost: task %s acknowledged locally only", delivery_tag)
            return virtual.QoS.ack(self, delivery_tag)
        return super().ack(delivery_tag)

    def reject(self, delivery_tag, requeue=False):
        if self._connection_gone():
            log.warning("broker connection lost: task %s rejected locally only", delivery_tag)
            return virtual.QoS.ack(self, delivery_tag)
        return super().reject(delivery_tag, requeue=requeue)


def install() -> None:
    """Use :class:`QoS` for every Redis channel of this process (called by ``market.celery``)."""
    kombu_redis.Channel.QoS = QoS
