# Listings prepared by a task: status (preparing, ready, failed), why one failed, and what the sweeper reads.

from django.db import migrations, models

from market.core.migration_helpers import drop_sqlite_triggers_naming, reinstall_sqlite_triggers


class Migration(migrations.Migration):

    dependencies = [
        ('catalog', '0033_triggers_delta'),
    ]

    operations = [
        # SQLite rebuilds catalog_listing: the triggers naming it go first and come back at the end
        migrations.RunPython(drop_sqlite_triggers_naming("catalog_listing"), reinstall_sqlite_triggers),
        migrations.RemoveConstraint(
            model_name='listing',
            name='listing_size_release_has_level',
        ),
        migrations.AddField(
            model_name='listing',
            name='failure',
            field=models.TextField(blank=True, help_text="why the listing's answer could not be computed (status failed)"),
        ),
        migrations.AddField(
            model_name='listing',
            name='prepare_at',
            field=models.DateTimeField(blank=True, help_text='when the listing was last handed to a worker: one preparing past LISTING_PREPARE_SWEEP_AFTER is handed out again', null=True),
        ),
        migrations.AddField(
            model_name='listing',
            name='prepare_attempts',
            field=models.PositiveSmallIntegerField(default=0, help_text="how many times the listing's preparation was handed to a worker (the sweeper's count)"),
        ),
        migrations.AddField(
            model_name='listing',
            name='prepared_from',
            field=models.PositiveBigIntegerField(blank=True, editable=False, help_text="the dataset's version the listing was judged on (Dataset.version), while it is prepared: its answer is stored only if the dataset is still at that version", null=True),
        ),
        migrations.AddField(
            model_name='listing',
            name='status',
            field=models.CharField(choices=[('preparing', 'Preparing'), ('ready', 'Ready'), ('failed', 'Failed')], default='ready', help_text='preparing (the answer being computed by a task: the budget reserved, closed to buyers), ready, or failed (never sold; it holds no budget: counted_in_budget is false); market.catalog.services.listing_prepare', max_length=12),
        ),
        migrations.AlterField(
            model_name='listing',
            name='counted_in_budget',
            field=models.BooleanField(default=True, help_text="whether the listing counts in its dataset's eps budget: every kind it offers is eps-DP for a record (market.catalog.budget.counts; the withdrawn point kind is not). Set when the listing is made; cleared when its preparation fails (it released nothing)"),
        ),
        migrations.AddIndex(
            model_name='listing',
            index=models.Index(condition=models.Q(('status', 'preparing')), fields=['prepare_at'], name='listing_preparing_since'),
        ),
        migrations.AddConstraint(
            model_name='listing',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('size_level', 0), ('size_release__isnull', True)), models.Q(('size_level__gt', 0), ('size_release__isnull', False)), models.Q(('size_level__gt', 0), ('size_release__isnull', True), ('status__in', ['preparing', 'failed'])), _connector='OR'), name='listing_size_release_has_level'),
        ),
        migrations.AddConstraint(
            model_name='listing',
            constraint=models.CheckConstraint(condition=models.Q(('status__in', ['preparing', 'ready', 'failed'])), name='listing_status_known'),
        ),
        migrations.AddConstraint(
            model_name='listing',
            constraint=models.CheckConstraint(condition=models.Q(('status', 'ready'), ('is_open', False), _connector='OR'), name='listing_open_only_when_ready'),
        ),
        migrations.AddConstraint(
            model_name='listing',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('status', 'failed'), _negated=True), ('counted_in_budget', False), _connector='OR'), name='listing_failed_not_counted'),
        ),
        migrations.RunPython(reinstall_sqlite_triggers, drop_sqlite_triggers_naming("catalog_listing")),
    ]
