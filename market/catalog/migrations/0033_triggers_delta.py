"""The catalog's triggers as datasets with a delta need them (``market.catalog.triggers``): on such a
dataset each listing stays within the budget, and the sum rule gives way to the services' composition
by privacy-loss distributions. Reversible: going back installs them as 0030 did."""

from django.db import migrations

from market.catalog.triggers import TRIGGERS, TRIGGERS_BEFORE_DELTA
from market.core.triggers import ReplaceTriggers


class Migration(migrations.Migration):
    dependencies = [("catalog", "0032_skellam")]
    operations = [ReplaceTriggers(TRIGGERS, replaces=TRIGGERS_BEFORE_DELTA)]
