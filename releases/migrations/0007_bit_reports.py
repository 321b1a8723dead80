"""Bit-report (microdata) paths, and the reports they release: one row per point, append-only."""

import django.db.models.deletion
from django.db import migrations, models

from market.core.migration_helpers import drop_sqlite_triggers_naming, reinstall_sqlite_triggers_if_installed

TABLE = "releases_bitreport"


# Bit reports are append-only, as noise points are: the trigger is ``releases/triggers.py``'s, installed
# by ``releases.0030_triggers`` (it was created here on databases migrated before then; going back
# past this migration drops it, whoever made it).


def append_only_dropped(apps, schema_editor):
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"DROP TRIGGER IF EXISTS {TABLE}_append_only ON {TABLE}")
        elif connection.vendor == "sqlite":
            cursor.execute(f"DROP TRIGGER IF EXISTS {TABLE}_append_only")


class Migration(migrations.Migration):

    dependencies = [
        ('catalog', '0012_bit_reports'),
        ('releases', '0006_release_privacy_at_risk'),
    ]

    operations = [
        migrations.RunPython(drop_sqlite_triggers_naming("releases_noisepath"), reinstall_sqlite_triggers_if_installed),
        migrations.CreateModel(
            name='BitReport',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('bits', models.BinaryField(help_text='the reports, packed and encrypted; read through reports()')),
                ('ones', models.JSONField(help_text='per bit, the number of records whose report says 1')),
                ('created_at', models.DateTimeField(auto_now_add=True)),
            ],
        ),
        migrations.RemoveConstraint(
            model_name='noisepath',
            name='path_engine_known',
        ),
        migrations.AlterField(
            model_name='noisepath',
            name='engine',
            field=models.CharField(default='lattice', help_text="lattice: the exact integer path (releases.engine.lattice); laplace: the float path (releases.engine.path, and every l2 path); bits: one exact lattice path per record and bit of a microdata listing (releases.engine.bitreport), sampled from the ladder's top down. Fixed when the path is made", max_length=10),
        ),
        migrations.AddConstraint(
            model_name='noisepath',
            constraint=models.CheckConstraint(condition=models.Q(('engine__in', ['laplace', 'lattice', 'bits'])), name='path_engine_known'),
        ),
        migrations.AddField(
            model_name='bitreport',
            name='point',
            field=models.OneToOneField(on_delete=django.db.models.deletion.PROTECT, related_name='report', to='releases.noisepoint'),
        ),
        migrations.RunPython(migrations.RunPython.noop, append_only_dropped),
        migrations.RunPython(reinstall_sqlite_triggers_if_installed, drop_sqlite_triggers_naming("releases_noisepath")),
    ]
