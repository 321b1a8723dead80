"""The catalog's triggers again (``market.catalog.triggers``): a dataset with a delta keeps each listing
within its budget, and its sum rule gives way to the services' composition by privacy-loss distributions.

Installing drops each trigger and function first, so this replaces 0030's; reversing installs them again
as they stand (the column the new ones read is removed by reversing 0032 after this)."""

from django.db import migrations

from market.catalog.triggers import TRIGGERS
from market.core.triggers import InstallTriggers


class Migration(migrations.Migration):
    dependencies = [("catalog", "0032_skellam")]
    operations = [InstallTriggers(TRIGGERS)]
