"""A noise path's one ``mechanism`` (``releases.engine.mechanisms``) in place of ``engine`` and ``norm``.

Every stored value stays (``MECHANISM_OF``); going back writes both columns again. A float
listing on an l2 path becomes ``laplace_l2`` here (``catalog.0018`` made it ``laplace``), read
from its path's norm before the column goes; going back makes it ``laplace`` again. SQLite
rebuilds ``releases_noisepath``: the triggers naming it are dropped first and installed again at
the end, both ways (as in 0007).
"""

from django.db import migrations, models

from market.core.migration_helpers import drop_sqlite_triggers_naming, reinstall_sqlite_triggers_if_installed

#: (engine, norm) -> mechanism, as the mechanisms' registry has it
MECHANISM_OF = {("laplace", "l1"): "laplace", ("laplace", "l2"): "laplace_l2", ("lattice", "l1"): "lattice",
                ("bits", "l1"): "bits"}


def mechanism_from_columns(apps, schema_editor):
    NoisePath = apps.get_model("releases", "NoisePath")
    for (engine, norm), mechanism in MECHANISM_OF.items():
        NoisePath.objects.filter(engine=engine, norm=norm).update(mechanism=mechanism)


def vector_listings(apps, schema_editor):
    Listing = apps.get_model("catalog", "Listing")
    Listing.objects.filter(mechanism="laplace", noise_path__engine="laplace", noise_path__norm="l2").update(
        mechanism="laplace_l2")


def vector_listings_back(apps, schema_editor):
    Listing = apps.get_model("catalog", "Listing")
    Listing.objects.filter(mechanism="laplace_l2").update(mechanism="laplace")


def columns_from_mechanism(apps, schema_editor):
    NoisePath = apps.get_model("releases", "NoisePath")
    for (engine, norm), mechanism in MECHANISM_OF.items():
        NoisePath.objects.filter(mechanism=mechanism).update(engine=engine, norm=norm)


class Migration(migrations.Migration):

    dependencies = [
        ('catalog', '0018_listing_mechanism'),
        ('releases', '0007_bit_reports'),
    ]

    operations = [
        migrations.RunPython(drop_sqlite_triggers_naming("releases_noisepath"), reinstall_sqlite_triggers_if_installed),
        migrations.RemoveConstraint(model_name='noisepath', name='path_lattice_is_l1'),
        migrations.RemoveConstraint(model_name='noisepath', name='path_engine_known'),
        migrations.AddField(
            model_name='noisepath',
            name='mechanism',
            field=models.CharField(default='lattice', help_text="the listing's mechanism (releases.engine.mechanisms): lattice, the exact integer path (releases.engine.lattice); laplace and laplace_l2, the retired float paths (releases.engine.path; l2: one vector path kept as a jump list); bits, one exact lattice path per record and bit of a microdata listing (releases.engine.bitreport), sampled from the ladder's top down. Fixed when the path is made", max_length=12),
        ),
        migrations.RunPython(mechanism_from_columns, columns_from_mechanism),
        migrations.RunPython(vector_listings, vector_listings_back),
        migrations.RemoveField(model_name='noisepath', name='engine'),
        migrations.RemoveField(model_name='noisepath', name='norm'),
        migrations.AddConstraint(
            model_name='noisepath',
            constraint=models.CheckConstraint(condition=models.Q(('mechanism__in', ['laplace', 'laplace_l2', 'lattice', 'bits'])), name='path_mechanism_known'),
        ),
        migrations.RunPython(reinstall_sqlite_triggers_if_installed, drop_sqlite_triggers_naming("releases_noisepath")),
    ]
