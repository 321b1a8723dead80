"""The outbox's index for clearing recorded notes (by object, type and user).

On PostgreSQL it is built ``CONCURRENTLY`` (outside a transaction), so that a deploy onto a busy
outbox does not hold up the releases that write to it while it is built; elsewhere, plainly."""

from django.db import migrations, models

INDEX = models.Index(fields=["object_id", "type", "user_id"], name="webhooks_outbox_note")


def build(apps, schema_editor):
    model = apps.get_model("webhooks", "Outbox")
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            'CREATE INDEX CONCURRENTLY IF NOT EXISTS "webhooks_outbox_note" '
            'ON "webhooks_outbox" ("object_id", "type", "user_id")'
        )
    else:
        schema_editor.add_index(model, INDEX)


def drop(apps, schema_editor):
    model = apps.get_model("webhooks", "Outbox")
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute('DROP INDEX CONCURRENTLY IF EXISTS "webhooks_outbox_note"')
    else:
        schema_editor.remove_index(model, INDEX)


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [
        ("webhooks", "0002_outbox"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.AddIndex(model_name="outbox", index=INDEX)],
            database_operations=[migrations.RunPython(build, drop)],
        ),
    ]
