"""Listing.trust_capped: a listing may cap each buyer's level by trust (market.trust).

On SQLite, Django adds a NOT NULL column by rebuilding the table, which fails
(or drops them) once the triggers (``market/*/triggers.py``) refer
to ``catalog_listing``; an ``ALTER TABLE ... ADD COLUMN`` with a constant
default keeps the table and its triggers. Other databases add the column the
usual way.
"""

from django.db import migrations, models

HELP = "Cap each buyer's level by their distance in the owner's trust network (see market.trust)."


def _field() -> models.BooleanField:
    field = models.BooleanField(default=False, help_text=HELP)
    field.set_attributes_from_name("trust_capped")
    return field


def add_column(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        schema_editor.execute('ALTER TABLE "catalog_listing" ADD COLUMN "trust_capped" bool NOT NULL DEFAULT 0')
    else:
        schema_editor.add_field(apps.get_model("catalog", "Listing"), _field())


def drop_column(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        schema_editor.execute('ALTER TABLE "catalog_listing" DROP COLUMN "trust_capped"')
    else:
        schema_editor.remove_field(apps.get_model("catalog", "Listing"), _field())


class Migration(migrations.Migration):

    dependencies = [
        ("catalog", "0003_price_curves"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(add_column, drop_column)],
            state_operations=[
                migrations.AddField(
                    model_name="listing",
                    name="trust_capped",
                    field=models.BooleanField(default=False, help_text=HELP),
                ),
            ],
        ),
    ]
