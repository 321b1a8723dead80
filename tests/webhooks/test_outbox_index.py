"""The webhook outbox's clearing query has an index (issue 27: at a backlog of 12k notes every recorded
event scanned the whole outbox, 0.3 to 0.9 s each).

``services._outbox_clear`` deletes the notes of the events just recorded, one ``(type, object_id,
user_id)`` triple each, OR-ed together. The index ``webhooks_outbox_note`` covers those three columns,
object first (the most selective); on PostgreSQL, with a backlog of a few thousand notes and the
table's statistics up to date, the planner's plan for that very statement uses it and scans nothing
sequentially (no ``enable_seqscan`` games)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from market.webhooks.models import Outbox
from market.webhooks.services import _outbox_clear
from tests.fixtures.market import needs_postgres

pytestmark = pytest.mark.django_db

BACKLOG = 4000
KINDS = ("purchase.released", "listing.sold", "purchase.failed")


def backlog(n: int = BACKLOG) -> list[tuple[str, str, int]]:
    """``n`` notes as a busy marketplace leaves them: each purchase's release to its buyer and its sale
    to the owner (a few owners, many buyers)."""
    notes = []
    for i in range(n // 2):
        purchase = f"{i:08x}-58a4-4f5e-9d7e-2a3f4c5d6e7f"
        notes += [(KINDS[0], purchase, 1000 + i % 300), (KINDS[1], purchase, 7 + i % 5)]
    Outbox.objects.bulk_create([Outbox(type=t, object_id=o, user_id=u) for t, o, u in notes], batch_size=1000)
    return notes


def test_the_outbox_has_the_index_of_its_clearing_query():
    [index] = [i for i in Outbox._meta.indexes if i.name == "webhooks_outbox_note"]
    assert list(index.fields) == ["object_id", "type", "user_id"] and index.condition is None
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, Outbox._meta.db_table)
    assert constraints["webhooks_outbox_note"]["columns"] == ["object_id", "type", "user_id"]
    assert constraints["webhooks_outbox_note"]["index"] is True


def test_clearing_deletes_exactly_the_notes_recorded():
    notes = backlog(40)
    _outbox_clear(notes[:3] + [("purchase.released", "no-such-object", 1)])
    assert set(Outbox.objects.values_list("type", "object_id", "user_id")) == set(notes[3:])


@needs_postgres
def test_the_clearing_query_uses_the_index_at_a_backlog_and_scans_nothing_sequentially():
    notes = backlog()
    with connection.cursor() as cursor:
        cursor.execute(f'ANALYZE "{Outbox._meta.db_table}"')  # what autovacuum does on a table this busy
    recorded = notes[BACKLOG // 2: BACKLOG // 2 + 6]  # one task's events: a few releases' notes
    with CaptureQueriesContext(connection) as queries:
        _outbox_clear(recorded)
    [delete] = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("DELETE")]
    assert Outbox.objects.count() == BACKLOG - len(recorded)
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + delete)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "webhooks_outbox_note" in plan, plan
    assert "Seq Scan" not in plan, plan
