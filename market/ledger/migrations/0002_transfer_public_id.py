"""Opaque public ids for existing and new transfers (market.core.ids): added nullable,
filled for the rows there are (the append-only trigger lifted for the fill), then made unique and required."""

from django.db import migrations

from market.core import ids
from market.core.migration_helpers import public_id_operations


class Migration(migrations.Migration):
    dependencies = [
        ("ledger", "0001_initial"),
    ]
    operations = public_id_operations("ledger", "transfer", ids.new_transfer_id, append_only_trigger="ledger_transfer_append_only")
