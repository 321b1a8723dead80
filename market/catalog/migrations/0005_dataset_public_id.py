"""Opaque public ids for existing and new datasets (market.core.ids): added nullable,
filled for the rows there are, then made unique and required."""

from django.db import migrations

from market.core import ids
from market.core.migration_helpers import public_id_operations


class Migration(migrations.Migration):
    dependencies = [
        ("catalog", "0004_listing_trust_capped"),
    ]
    operations = public_id_operations("catalog", "dataset", ids.new_dataset_id)
