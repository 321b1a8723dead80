"""A listing's plan becomes one versioned document (``Listing.plan``).

Before, the plan was spread over ``labels, weights, lower, upper, grids, sensitivity`` and ``plan``
(the layout, ``market.catalog.spec.plan_layout``, or null). Now ``plan`` is ``{"version": 2,
"labels", "weights", "lower", "upper", "sensitivity", "grids" (lattice only), "layout" (when one was
stored)}`` (``Listing.plan_document``) and the separate columns go; ``Listing`` reads them back
through properties of the same names. No value changes: each column's JSON is moved as it is (floats
the same floats, grids the same decimal strings), and the sensitivity's float too.

Reversible: the columns come back with the values the document holds, ``plan`` the layout again.
``listing_lattice_has_grids`` now reads the document (a lattice listing's document has grids).
SQLite rebuilds ``catalog_listing``: the triggers naming it are dropped first and installed again
at the end, both ways (as in 0018).
"""

from django.db import migrations, models

from market.core.migration_helpers import drop_sqlite_triggers_naming, reinstall_sqlite_triggers_if_installed

VERSION = 2
COLUMNS = ("labels", "weights", "lower", "upper", "sensitivity")


def to_document(apps, schema_editor):
    Listing = apps.get_model("catalog", "Listing")
    for listing in Listing.objects.order_by("pk").iterator(chunk_size=500):
        document = {"version": VERSION, **{name: getattr(listing, name) for name in COLUMNS}}
        if listing.grids is not None:
            document["grids"] = listing.grids
        if listing.plan is not None:
            document["layout"] = listing.plan
        Listing.objects.filter(pk=listing.pk).update(plan=document)


def from_document(apps, schema_editor):
    Listing = apps.get_model("catalog", "Listing")
    for listing in Listing.objects.order_by("pk").iterator(chunk_size=500):
        document = listing.plan
        Listing.objects.filter(pk=listing.pk).update(
            **{name: document[name] for name in COLUMNS}, grids=document.get("grids"), plan=document.get("layout"))


class Migration(migrations.Migration):

    dependencies = [
        ("catalog", "0019_dataset_version"),
    ]

    operations = [
        migrations.RunPython(drop_sqlite_triggers_naming("catalog_listing"), reinstall_sqlite_triggers_if_installed),
        migrations.RemoveConstraint(model_name="listing", name="listing_lattice_has_grids"),
        migrations.AlterField(model_name="listing", name="labels", field=models.JSONField(null=True)),
        migrations.AlterField(model_name="listing", name="weights", field=models.JSONField(null=True)),
        migrations.AlterField(model_name="listing", name="lower", field=models.JSONField(null=True)),
        migrations.AlterField(model_name="listing", name="upper", field=models.JSONField(null=True)),
        migrations.AlterField(model_name="listing", name="sensitivity", field=models.FloatField(null=True)),
        migrations.RunPython(to_document, from_document),
        migrations.RemoveField(model_name="listing", name="labels"),
        migrations.RemoveField(model_name="listing", name="weights"),
        migrations.RemoveField(model_name="listing", name="lower"),
        migrations.RemoveField(model_name="listing", name="upper"),
        migrations.RemoveField(model_name="listing", name="sensitivity"),
        migrations.RemoveField(model_name="listing", name="grids"),
        migrations.AlterField(
            model_name="listing",
            name="plan",
            field=models.JSONField(
                help_text="the statistics' plan, one versioned document (Listing.plan_document): {version: 2, labels "
                "(one per released value), weights (per value: noise multiplier, scale = weight / eps), lower, upper "
                "(each value's declared range, for clamping; lattice: in grid steps), grids (lattice only: each "
                "value's grid as a decimal string), sensitivity (l1 of the whole vector), layout (the rest of the plan "
                "as laid out at creation, market.catalog.spec.plan_layout; absent: laid out on each read)}",
            ),
        ),
        migrations.AddConstraint(
            model_name="listing",
            constraint=models.CheckConstraint(
                condition=models.Q(("mechanism__in", ["laplace", "laplace_l2", "bits"]), ("plan__grids__isnull", False),
                                   _connector="OR"),
                name="listing_lattice_has_grids",
            ),
        ),
        migrations.RunPython(reinstall_sqlite_triggers_if_installed, drop_sqlite_triggers_naming("catalog_listing")),
    ]
