"""Each dataset states whom its releases protect (its neighbouring relation).

Existing datasets were sold with add/remove-one sensitivities, so they get the
private size, and what revealed their exact number of records goes:

* the noiseless rounded ``published_size`` (1050 -> 1000 but 1051 -> 1100);
* the compensation model's "people" figure: it is folded into E and E_min
  (totals for everyone in the data), so every price stays what it was;
* centroid listings, whose minimum-records gate and sensitivity depend on
  that number, close with the reason shown to their buyers.

Point listings close too: noise of a radius is geo-indistinguishability, not
eps-DP for a record. Closing is not undone by going back (the reason stays).
"""

from decimal import Decimal

from django.conf import settings
from django.db import migrations, models

from market.core.migration_helpers import reinstall_sqlite_triggers_if_installed

POINT_REASON = (
    "Closed: a single record's point with noise of a radius protects locations only up to that distance "
    "(two places d apart are told apart with loss eps x d / radius, without bound), not any one record, "
    "so it is not eps-differentially private. Your releases stay readable; nothing more is sold."
)
CENTROID_REASON = (
    "Closed: this centroid's sensitivity and its minimum-records gate depend on the exact number of records, "
    "which this dataset keeps private. Your releases stay readable; nothing more is sold."
)


def _closed_reason(*, named: bool = False) -> models.TextField:
    field = models.TextField(blank=True, help_text='why the listing was closed, shown to its buyers (empty while open)')
    if named:  # for the schema editor, which needs the column's name
        field.set_attributes_from_name("closed_reason")
    return field


def add_closed_reason(apps, schema_editor):
    # SQLite: an ALTER TABLE keeps catalog_listing and the triggers that name it (see catalog.0004)
    if schema_editor.connection.vendor == "sqlite":
        schema_editor.execute('ALTER TABLE "catalog_listing" ADD COLUMN "closed_reason" text NOT NULL DEFAULT \'\'')
    else:
        schema_editor.add_field(apps.get_model("catalog", "Listing"), _closed_reason(named=True))


def drop_closed_reason(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        schema_editor.execute('ALTER TABLE "catalog_listing" DROP COLUMN "closed_reason"')
    else:
        schema_editor.remove_field(apps.get_model("catalog", "Listing"), _closed_reason(named=True))


def _fold(value: str, people: int) -> str:
    return f"{(Decimal(value) * people).normalize():f}"


def close_and_fold(apps, schema_editor):
    Listing = apps.get_model("catalog", "Listing")
    for listing in Listing.objects.all().only("id", "statistics", "is_open", "closed_reason", "compensation"):
        kinds = {stat.get("kind") for stat in listing.statistics}
        fields = []
        reason = POINT_REASON if "point" in kinds else CENTROID_REASON if "centroid" in kinds else ""
        if reason:
            listing.is_open, listing.closed_reason = False, reason
            fields += ["is_open", "closed_reason"]
        model = listing.compensation
        if model and "people" in model:
            people = int(model.pop("people"))
            model["E"], model["E_min"] = _fold(model["E"], people), _fold(model.get("E_min", "0"), people)
            listing.compensation = model
            fields.append("compensation")
        if fields:
            listing.save(update_fields=fields)


class Migration(migrations.Migration):

    dependencies = [
        ('catalog', '0006_dataset_budget'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RemoveField(
            model_name='dataset',
            name='published_size',
        ),
        migrations.AddField(
            model_name='dataset',
            name='record_name',
            field=models.CharField(default='record', help_text="what one record is about, e.g. 'patient'", max_length=60),
        ),
        migrations.AddField(
            model_name='dataset',
            name='record_name_plural',
            field=models.CharField(default='records', help_text="e.g. 'patients'", max_length=60),
        ),
        migrations.AddField(
            model_name='dataset',
            name='relation',
            field=models.CharField(choices=[('private_size', 'Private size: protect any one record, whether or not it is in the data'), ('public_size', "Public size: protect any one record's values; the number of records is public")], default='private_size', help_text='the neighbouring relation: is the number of records private or public?', max_length=20),
        ),
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(add_closed_reason, drop_closed_reason)],
            state_operations=[
                migrations.AddField(
                    model_name='listing',
                    name='closed_reason',
                    field=_closed_reason(),
                ),
            ],
        ),
        migrations.AddConstraint(
            model_name='dataset',
            constraint=models.CheckConstraint(condition=models.Q(('relation__in', ['private_size', 'public_size'])), name='dataset_relation_known'),
        ),
        migrations.RunPython(close_and_fold, migrations.RunPython.noop),
        migrations.RunPython(reinstall_sqlite_triggers_if_installed, reinstall_sqlite_triggers_if_installed),
    ]
