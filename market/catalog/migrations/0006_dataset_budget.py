"""Every dataset has a required budget, an audit trail of budget changes, and a content hash.

1. ``content_hash`` is added and filled for existing rows (the same function
   uploads use, ``market.catalog.budget.content_hash``).
2. A dataset without a budget gets one covering its listings' ceilings: the
   sum of its counted ceilings (point listings aside), or
   ``DATASET_DEFAULT_BUDGET`` if larger (a budget found below its ceilings -
   possible on SQLite, which had no budget trigger - is raised to them). Then
   the column becomes NOT NULL.
3. ``DatasetBudgetChange``: audit rows of budget changes.

The triggers that enforce the budget for every writer, and keep the audit
rows append-only, are ``market/catalog/triggers.py``'s (``catalog.0030_triggers``
installs them, after the tables have their shape). Reversible:
the hash and the audit table go, the budget becomes nullable again (filled
budgets stay); on SQLite the table rebuild drops triggers, so the
installed ones are reinstalled after the change either way (where they are installed).
"""

from decimal import Decimal

from django.conf import settings
from django.db import migrations, models
from django.db.models import Q

import market.core.fields
from market.catalog.budget import content_hash
from market.core.migration_helpers import reinstall_sqlite_triggers_if_installed


def fill(apps, schema_editor):
    Dataset = apps.get_model("catalog", "Dataset")
    Listing = apps.get_model("catalog", "Listing")
    default = Decimal(str(settings.DATASET_DEFAULT_BUDGET))
    for dataset in Dataset.objects.all().iterator(chunk_size=200):
        ceilings = sum(
            Listing.objects.filter(dataset_id=dataset.pk).exclude(kinds__contains=",point,").values_list("ceiling", flat=True),
            Decimal(0),
        )
        if dataset.total_budget is None:
            dataset.total_budget = max(ceilings, default)
        else:
            dataset.total_budget = max(dataset.total_budget, ceilings)
        dataset.content_hash = content_hash(dataset.columns, dataset.data)
        dataset.save(update_fields=["total_budget", "content_hash"])


class Migration(migrations.Migration):
    dependencies = [
        ("catalog", "0005_dataset_public_id"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunPython(migrations.RunPython.noop, reinstall_sqlite_triggers_if_installed),  # reverse: runs last
        migrations.AddField(
            model_name="dataset",
            name="content_hash",
            field=models.CharField(max_length=64, null=True, editable=False),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="dataset",
            name="content_hash",
            field=models.CharField(
                db_index=True,
                editable=False,
                help_text="sha256 of the parsed content (market.catalog.budget.content_hash): the same people twice",
                max_length=64,
            ),
        ),
        migrations.RemoveConstraint(model_name="dataset", name="dataset_budget_positive"),
        migrations.AlterField(
            model_name="dataset",
            name="total_budget",
            field=market.core.fields.LevelField(
                help_text="The dataset's privacy budget: its listings' ceilings (point listings aside) may not add up "
                "to more. Changed only through market.catalog.services.dataset_budget_set (audited)."
            ),
        ),
        migrations.AddConstraint(
            model_name="dataset",
            constraint=models.CheckConstraint(condition=Q(total_budget__gt=0), name="dataset_budget_positive"),
        ),
        migrations.CreateModel(
            name="DatasetBudgetChange",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("old", market.core.fields.LevelField()),
                ("new", market.core.fields.LevelField()),
                ("reason", models.CharField(max_length=500)),
                ("at", models.DateTimeField(auto_now_add=True)),
                (
                    "actor",
                    models.ForeignKey(
                        on_delete=models.deletion.PROTECT, related_name="+", to=settings.AUTH_USER_MODEL
                    ),
                ),
                (
                    "dataset",
                    models.ForeignKey(
                        on_delete=models.deletion.PROTECT, related_name="budget_changes", to="catalog.dataset"
                    ),
                ),
            ],
            options={
                "ordering": ["-at", "-id"],
                "constraints": [models.CheckConstraint(condition=Q(new__gt=0), name="budget_change_positive")],
            },
        ),
        migrations.RunPython(reinstall_sqlite_triggers_if_installed, migrations.RunPython.noop),
    ]
