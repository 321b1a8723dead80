
from django.db import migrations, models

from market.core.migration_helpers import drop_sqlite_triggers_naming, reinstall_sqlite_triggers_if_installed


class Migration(migrations.Migration):

    dependencies = [
        ('catalog', '0032_skellam'),
        ('releases', '0030_triggers'),
    ]

    operations = [
        # SQLite rebuilds the tables: triggers naming them go first and come back at the end
        migrations.RunPython(drop_sqlite_triggers_naming("releases_noisepath"), reinstall_sqlite_triggers_if_installed),
        migrations.RemoveConstraint(
            model_name='noisepath',
            name='path_mechanism_known',
        ),
        migrations.AlterField(
            model_name='noisepath',
            name='mechanism',
            field=models.CharField(default='lattice', help_text="the listing's mechanism (releases.engine.mechanisms): lattice, the exact integer path (releases.engine.lattice); skellam, the exact Skellam path (a pair of counts per value, releases.engine.skellam); laplace and laplace_l2, the retired float paths (releases.engine.path; l2: one vector path kept as a jump list); bits, one exact lattice path per record and bit of a microdata listing (releases.engine.bitreport), sampled from the ladder's top down. Fixed when the path is made", max_length=12),
        ),
        migrations.AddConstraint(
            model_name='noisepath',
            constraint=models.CheckConstraint(condition=models.Q(('mechanism__in', ['laplace', 'laplace_l2', 'lattice', 'skellam', 'bits'])), name='path_mechanism_known'),
        ),
        migrations.RunPython(reinstall_sqlite_triggers_if_installed, drop_sqlite_triggers_naming("releases_noisepath")),
    ]
