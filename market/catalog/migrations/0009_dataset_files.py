"""Datasets move out of the database into sealed Parquet files in storage (``market.catalog.files``).

Each existing dataset's float matrix is written as a raw text Parquet file and
a typed Parquet file (every column ``decimal``, missing ``none``, as they were
sold), sealed, and its columns become objects with the owner's summaries; then
``data`` goes. Going back reads the typed file into the matrix again (a
dataset that never became ready gets an empty one).
"""

import os

import numpy as np
from django.db import migrations, models

from market.core.migration_helpers import drop_sqlite_triggers_naming, reinstall_sqlite_triggers_if_installed


def to_files(apps, schema_editor):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from market.catalog import files, ingest

    Dataset = apps.get_model("catalog", "Dataset")
    for dataset in Dataset.objects.all().iterator():
        names = [c if isinstance(c, str) else c["name"] for c in dataset.columns]
        matrix = np.frombuffer(bytes(dataset.data or b""), dtype="<f8").reshape(dataset.row_count or 0, len(names))
        with files.private_dir() as tmp:
            raw = os.path.join(tmp, "raw.parquet")
            typed = os.path.join(tmp, "typed.parquet")
            text = pa.table({n: pa.array([repr(float(x)) for x in matrix[:, i]], pa.string()) for i, n in enumerate(names)})
            pq.write_table(text, raw)
            columns = ingest.infer(raw, tmpdir=tmp)
            for column in columns:
                column["type"], column["missing"] = "decimal", "none"
            ingest.write_typed(raw, typed, columns, tmpdir=tmp)
            dataset.raw_file = files.seal_path(raw, files.new_name(dataset.public_id, "raw"))
            dataset.typed_file = files.seal_path(typed, files.new_name(dataset.public_id, "typed"))
        dataset.columns = columns
        dataset.status = "ready"
        dataset.format = "csv"
        dataset.progress = {}
        dataset.save(update_fields=["raw_file", "typed_file", "columns", "status", "format", "progress"])


def to_matrix(apps, schema_editor):
    import pyarrow.parquet as pq

    from market.catalog import files

    Dataset = apps.get_model("catalog", "Dataset")
    for dataset in Dataset.objects.all().iterator():
        names = [c if isinstance(c, str) else c["name"] for c in dataset.columns]
        if dataset.status == "ready" and dataset.typed_file:
            with files.decrypted(dataset.typed_file) as path:
                table = pq.read_table(path)
            kept = [n for n in names if n in table.column_names]
            matrix = np.column_stack(
                [table.column(n).to_numpy(zero_copy_only=False).astype("<f8") for n in kept]
            ) if kept else np.zeros((0, 0))
            dataset.data = np.ascontiguousarray(matrix, dtype="<f8").tobytes()
            dataset.columns = kept
            dataset.row_count = table.num_rows
        else:
            dataset.data, dataset.columns, dataset.row_count = b"", [], 0
        dataset.save(update_fields=["data", "columns", "row_count"])


class Migration(migrations.Migration):
    dependencies = [
        ("catalog", "0008_encrypt_answers"),
    ]

    operations = [
        # SQLite rebuilds catalog_listing and catalog_dataset, which it refuses while triggers of other
        # tables name them (trading_holding's ceiling check reads the listing): they are dropped first and
        # installed again at the end, whichever way this runs
        migrations.RunPython(drop_sqlite_triggers_naming("catalog_listing", "catalog_dataset"),
                             reinstall_sqlite_triggers_if_installed),
        migrations.AddField(
            model_name="dataset", name="status",
            field=models.CharField(
                choices=[("processing", "Processing"), ("ready", "Ready"), ("failed", "Failed")],
                default="processing", max_length=12,
            ),
        ),
        migrations.AddField(
            model_name="dataset", name="progress",
            field=models.JSONField(blank=True, default=dict, help_text="{phase, rows, percent} while processing"),
        ),
        migrations.AddField(
            model_name="dataset", name="failure",
            field=models.JSONField(blank=True, default=list, help_text="why processing failed, one reason a line"),
        ),
        migrations.AddField(
            model_name="dataset", name="source",
            field=models.CharField(blank=True, help_text="where the data comes from", max_length=500),
        ),
        migrations.AddField(model_name="dataset", name="licence", field=models.CharField(blank=True, max_length=200)),
        migrations.AddField(
            model_name="dataset", name="format",
            field=models.CharField(blank=True, help_text="csv or parquet: the upload's format", max_length=10),
        ),
        migrations.AddField(
            model_name="dataset", name="upload_size",
            field=models.BigIntegerField(blank=True, help_text="bytes uploaded", null=True),
        ),
        migrations.AddField(
            model_name="dataset", name="upload_file",
            field=models.CharField(blank=True, help_text="storage name of the sealed upload", max_length=300),
        ),
        migrations.AddField(
            model_name="dataset", name="raw_file",
            field=models.CharField(blank=True, help_text="storage name of the sealed text Parquet", max_length=300),
        ),
        migrations.AddField(
            model_name="dataset", name="typed_file",
            field=models.CharField(blank=True, help_text="storage name of the sealed typed Parquet", max_length=300),
        ),
        migrations.AlterField(
            model_name="dataset", name="row_count",
            field=models.PositiveIntegerField(blank=True, help_text="known once processed", null=True),
        ),
        migrations.AlterField(
            model_name="dataset", name="columns",
            field=models.JSONField(default=list, help_text="[{name, type, missing, ...summaries}] (owner only)"),
        ),
        migrations.AlterField(
            model_name="dataset", name="content_hash",
            field=models.CharField(
                db_index=True, editable=False, help_text="sha256 of the uploaded bytes: the same people twice",
                max_length=64,
            ),
        ),
        migrations.AlterField(
            model_name="dataset", name="data",
            field=models.BinaryField(null=True, help_text="float64, little-endian, row-major (rows x columns)"),
        ),
        migrations.RunPython(to_files, to_matrix),
        migrations.RemoveField(model_name="dataset", name="data"),
        migrations.RunPython(reinstall_sqlite_triggers_if_installed,
                             drop_sqlite_triggers_naming("catalog_listing", "catalog_dataset")),
    ]
