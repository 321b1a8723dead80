"""Each listing stores its statistics' plan, so that reads no longer lay it out again.

``Listing.plan`` holds what the listing's other fields do not (the relation, the norm, the
coordinates each statistic reads, the worst cases: ``market.catalog.spec.plan_layout``).
Existing listings are laid out once here, as every read laid them out until now (their dataset's
columns and relation, which are fixed once a dataset has listings). A listing that cannot be laid
out, or whose layout no longer has its stored number of values, keeps a null plan and is laid out
on each read, as before.
"""

from django.conf import settings
from django.db import migrations, models


def fill(apps, schema_editor):
    from market.catalog.spec.columns import columns_from
    from market.catalog.spec import Neighbours, build_plan, plan_layout

    Listing = apps.get_model("catalog", "Listing")
    for listing in Listing.objects.filter(plan__isnull=True).select_related("dataset").iterator(chunk_size=200):
        dataset = listing.dataset
        public = dataset.relation == "public_size"
        try:
            plan = build_plan(
                listing.statistics, columns_from(dataset.columns), offer=False, mechanism=listing.engine,
                neighbours=Neighbours(dataset.relation, size=dataset.row_count if public else None,
                                      max_rows=settings.UPLOAD_MAX_ROWS),
            )
        except ValueError:  # SpecError included: read as before, which says what is wrong
            continue
        if len(plan.labels) != len(listing.labels):
            continue
        Listing.objects.filter(pk=listing.pk).update(plan=plan_layout(plan))


class Migration(migrations.Migration):

    dependencies = [
        ("catalog", "0010_lattice_engine"),
    ]

    operations = [
        migrations.AddField(
            model_name="listing",
            name="plan",
            field=models.JSONField(
                blank=True, null=True,
                help_text="the rest of the statistics' plan as laid out at creation (market.catalog.spec.plan_layout): "
                "read back with the fields above, never laid out again (null: laid out on each read, as before)",
            ),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
