"""A listing's kinds become rows of a table (``ListingKind``), and whether it counts in its
dataset's budget a column of its own (``Listing.counted_in_budget``).

Before, ``Listing.kinds`` was the delimited string ``",count,mean,"``: the catalogue searched it
with ``LIKE '%,count,%'`` and the budget's triggers and queries left out a listing whose string
held ``,point,``. Now each kind a listing offers is one ``ListingKind`` row (the catalogue's search
joins those rows, indexed by kind), and ``counted_in_budget`` is false exactly for a listing offering the
point kind (geo-indistinguishability, not eps-DP). The triggers that read it are installed by
``0030_triggers`` (``market.catalog.triggers``).

No value a user sees changes: the same kinds, the same listings counted. Reversible: the string
comes back, built from the rows, sorted as it was written. SQLite rebuilds ``catalog_listing``:
the triggers naming it are dropped first and installed again at the end, both ways (as in 0020).
On PostgreSQL a database made before the triggers moved to the apps still has the former
functions, which read ``kinds``; ``0030_triggers`` replaces them before anything else writes.
"""

from django.db import migrations, models
import django.db.models.deletion

from market.core.migration_helpers import drop_sqlite_triggers_naming, reinstall_sqlite_triggers

#: the one kind that is not eps-DP when this migration was written (``Kind.eps_dp``)
NOT_EPS_DP = "point"


def to_rows(apps, schema_editor):
    Listing = apps.get_model("catalog", "Listing")
    ListingKind = apps.get_model("catalog", "ListingKind")
    rows, uncounted = [], []
    for pk, kinds in Listing.objects.values_list("pk", "kinds").iterator():
        names = sorted({name for name in kinds.split(",") if name})
        rows += [ListingKind(listing_id=pk, kind=name) for name in names]
        if NOT_EPS_DP in names:
            uncounted.append(pk)
    ListingKind.objects.bulk_create(rows, batch_size=1000)
    Listing.objects.filter(pk__in=uncounted).update(counted_in_budget=False)


def from_rows(apps, schema_editor):
    Listing = apps.get_model("catalog", "Listing")
    ListingKind = apps.get_model("catalog", "ListingKind")
    names: dict[int, set] = {}
    for pk, kind in ListingKind.objects.values_list("listing_id", "kind").iterator():
        names.setdefault(pk, set()).add(kind)
    for pk, kinds in names.items():
        Listing.objects.filter(pk=pk).update(kinds="," + ",".join(sorted(kinds)) + ",")


class Migration(migrations.Migration):
    dependencies = [
        ("catalog", "0020_listing_plan_document"),
    ]

    operations = [
        migrations.RunPython(drop_sqlite_triggers_naming("catalog_listing"), reinstall_sqlite_triggers),
        migrations.CreateModel(
            name="ListingKind",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("kind", models.CharField(max_length=20)),
                (
                    "listing",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="kind_rows", to="catalog.listing"
                    ),
                ),
            ],
            options={
                "indexes": [models.Index(fields=["kind", "listing"], name="listing_kind_by_kind")],
                "constraints": [models.UniqueConstraint(fields=("listing", "kind"), name="listing_kind_once")],
            },
        ),
        migrations.AddField(
            model_name="listing",
            name="counted_in_budget",
            field=models.BooleanField(
                default=True,
                help_text="whether the listing counts in its dataset's eps budget: every kind it offers is eps-DP for "
                "a record (market.catalog.budget.counts; the withdrawn point kind is not). Set when the listing is made",
            ),
        ),
        migrations.RunPython(to_rows, from_rows),
        migrations.RemoveField(model_name="listing", name="kinds"),
        migrations.RunPython(reinstall_sqlite_triggers, drop_sqlite_triggers_naming("catalog_listing")),
    ]
