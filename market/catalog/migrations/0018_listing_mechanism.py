"""A listing's one ``mechanism`` (``releases.engine.mechanisms``) in place of its ``engine``.

Every stored value stays: ``lattice``, ``bits`` and ``laplace`` keep their names; a float
listing whose noise path is an l2 (vector) path becomes ``laplace_l2`` in ``releases.0008``,
which reads the path's ``norm`` before removing it. Going back writes the engine again
(``laplace_l2`` is ``laplace``). SQLite rebuilds ``catalog_listing``: the
triggers naming it are dropped first and installed again at the end, both ways (as in 0010).
"""

from django.db import migrations, models

from market.core.migration_helpers import drop_sqlite_triggers_naming, reinstall_sqlite_triggers_if_installed

#: mechanism -> engine (every engine is the name of its l1 mechanism)
ENGINE_OF = {"laplace": "laplace", "laplace_l2": "laplace", "lattice": "lattice", "bits": "bits"}


def mechanism_from_engine(apps, schema_editor):
    Listing = apps.get_model("catalog", "Listing")
    for engine in ("laplace", "lattice", "bits"):
        Listing.objects.filter(engine=engine).update(mechanism=engine)


def engine_from_mechanism(apps, schema_editor):
    Listing = apps.get_model("catalog", "Listing")
    for mechanism, engine in ENGINE_OF.items():
        Listing.objects.filter(mechanism=mechanism).update(engine=engine)


class Migration(migrations.Migration):

    dependencies = [
        ('catalog', '0017_listing_size_release'),
    ]

    operations = [
        migrations.RunPython(drop_sqlite_triggers_naming("catalog_listing"), reinstall_sqlite_triggers_if_installed),
        migrations.RemoveConstraint(model_name='listing', name='listing_engine_known'),
        migrations.RemoveConstraint(model_name='listing', name='listing_lattice_has_grids'),
        migrations.AddField(
            model_name='listing',
            name='mechanism',
            field=models.CharField(choices=[('laplace', 'Float path (retired: floating-point noise with no established delta; old listings only)'), ('laplace_l2', 'Float vector path (retired: floating-point noise on the whole vector with no established delta; old listings only)'), ('lattice', 'Exact lattice path (integer noise, exactly eps-DP)'), ('bits', 'Bit reports: every record, each bit on its own exact lattice path (eps-DP per record)')], default='lattice', help_text='how the values are released (releases.engine.mechanisms): the exact lattice path, bit reports, or the float paths of older listings. Fixed when the listing is made', max_length=12),
        ),
        migrations.RunPython(mechanism_from_engine, engine_from_mechanism),
        migrations.RemoveField(model_name='listing', name='engine'),
        migrations.AddConstraint(
            model_name='listing',
            constraint=models.CheckConstraint(condition=models.Q(('mechanism__in', ['laplace', 'laplace_l2', 'lattice', 'bits'])), name='listing_mechanism_known'),
        ),
        migrations.AddConstraint(
            model_name='listing',
            constraint=models.CheckConstraint(condition=models.Q(('mechanism__in', ['laplace', 'laplace_l2', 'bits']), ('grids__isnull', False), _connector='OR'), name='listing_lattice_has_grids'),
        ),
        migrations.RunPython(reinstall_sqlite_triggers_if_installed, drop_sqlite_triggers_naming("catalog_listing")),
    ]
