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
skipped (and logged) instead of raising.
"""

from __future__ import annotations

import logging

from kombu.transport import redis as kombu_redis

log = logging.getLogger(__name__)


class QoS(kombu_redis.QoS):
    def restore_unacked(self, client=None):
        if client is None and getattr(self.channel.connection, "client", None) is None:
            held = len(self._delivered)
            self._delivered.clear()
            if held:
                log.warning(
                    "broker connection lost with %s task(s) unacknowledged; Redis redelivers them after the "
                    "visibility timeout", held,
                )
            return None
        return super().restore_unacked(client)


def install() -> None:
    """Use :class:`QoS` for every Redis channel of this process (called by ``market.celery``)."""
    kombu_redis.Channel.QoS = QoS
