"""A microdata release's records as files: one row per record, one column per bit.

The buyer's own release only (the caller reads it through
``market.trading.selectors.release_get``). The file holds the reported bits and
nothing else: never the noise, never the true bits. Rows are the listing's
records in the order fixed when it was made (a secret shuffle), so row ``i`` is
the same record at every level a buyer holds.
"""

from __future__ import annotations

import io
from collections.abc import Iterator

import numpy as np

from market.core.errors import NotFound

from .selectors import release_reports

#: Rows per CSV chunk streamed.
CHUNK = 65536


def columns(release) -> list[str]:
    """The file's columns: ``record`` (1 to n), then one per bit, named by its label."""
    return ["record", *release.listing.labels]


def filename(release, fmt: str) -> str:
    return f"{release.public_id}-listing-{release.listing_id}-eps-{release.level.normalize()}-records.{fmt}"


def _table(names: list[str], reports: np.ndarray, start: int, stop: int):
    import pyarrow as pa

    arrays = [pa.array(np.arange(start + 1, stop + 1, dtype=np.int64))]
    arrays += [pa.array(reports[start:stop, j].astype(np.uint8)) for j in range(reports.shape[1])]
    return pa.table(arrays, names=names)


def records_csv(release) -> Iterator[bytes]:
    """The records as CSV (a header, then ``record,b1,...,bk`` with bits 0 or 1), in chunks."""
    import pyarrow.csv as pcsv

    reports = release_reports(release)  # read now: a streamed answer must not fail half-way through
    names = columns(release)
    n = reports.shape[0]

    def chunks():
        for start in range(0, max(n, 1), CHUNK):
            out = io.BytesIO()
            table = _table(names, reports, start, min(n, start + CHUNK))
            pcsv.write_csv(table, out, write_options=pcsv.WriteOptions(include_header=start == 0))
            yield out.getvalue()

    return chunks()


def records_parquet(release) -> bytes:
    """The records as one Parquet file (``record`` int64, one uint8 column of 0/1 per bit)."""
    import pyarrow.parquet as pq

    reports = release_reports(release)
    out = io.BytesIO()
    pq.write_table(_table(columns(release), reports, 0, reports.shape[0]), out, compression="zstd")
    return out.getvalue()


def records_response(release, fmt: str):
    """The HTTP answer carrying a microdata release's records (``fmt``: csv or parquet); a release
    of any other listing, or another format, is 404 (``market.core.errors.NotFound``)."""
    from django.http import HttpResponse, StreamingHttpResponse

    if fmt not in ("csv", "parquet") or not release.listing.release_mechanism.sells_records:
        raise NotFound("no such file: records are downloaded from microdata releases, as csv or parquet")
    if fmt == "csv":
        response = StreamingHttpResponse(records_csv(release), content_type="text/csv")
    else:
        response = HttpResponse(records_parquet(release), content_type="application/vnd.apache.parquet")
    response["Content-Disposition"] = f'attachment; filename="{filename(release, fmt)}"'
    return response


# --------------------------------------------------------------------------
# a synthetic-data release's rows


def rows_filename(release, fmt: str) -> str:
    return f"{release.public_id}-listing-{release.listing_id}-eps-{release.level.normalize()}-rows.{fmt}"


def rows_response(release, fmt: str):
    """The HTTP answer carrying a synthetic-data release's rows (``fmt``: csv or parquet); a release of
    any other listing, or another format, is 404."""
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq
    from django.http import HttpResponse

    from market.catalog.synthetic import sells_rows

    from .selectors import release_rows

    if fmt not in ("csv", "parquet") or not sells_rows(release.listing):
        raise NotFound("no such file: rows are downloaded from synthetic-data releases, as csv or parquet")
    table = release_rows(release).table()
    out = io.BytesIO()
    if fmt == "csv":
        pcsv.write_csv(table, out)
        response = HttpResponse(out.getvalue(), content_type="text/csv")
    else:
        pq.write_table(table, out, compression="zstd")
        response = HttpResponse(out.getvalue(), content_type="application/vnd.apache.parquet")
    response["Content-Disposition"] = f'attachment; filename="{rows_filename(release, fmt)}"'
    return response
