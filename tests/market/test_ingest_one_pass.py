"""The one pass over an upload (``read_upload`` with ``typed_path``) reads cells the Arrow way where it
can (numbers as written, YYYY-MM-DD dates) and the DuckDB way otherwise; both must say exactly what the
SQL of ``market.catalog.ingest.sql`` says of every cell, and the typed file written during the pass must
be the one ``write_typed`` (DuckDB, from the raw file) writes. The reference here is that SQL run over
the whole raw file, as the inference ran before the one pass."""

from collections import Counter

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from market.catalog import ingest
from market.catalog.ingest import scan, sql

#: Rows past the first typed-file choice (the types are chosen on the first PROBE_ROWS rows).
ROWS = ingest.PROBE_ROWS + 3000


def _cells(k: int) -> dict[str, str]:
    """Row ``k`` of the test file: each column exercises a way of reading, and a cell the fast ways must not
    take for what they read (hexadecimal, infinity, an impossible date, underscores, spaces, markers)."""
    late = k >= ingest.PROBE_ROWS
    return {
        "whole": str(k * 7 - 5000),
        "hexish": "0x1F" if k == ROWS - 5 else str(k),  # Arrow reads 0x1F as 31; DuckDB does not
        "spaced": f" {k % 50} " if k % 3 else ("NA" if k % 9 == 0 else str(k % 50)),
        "decimal": "" if k % 17 == 0 else f"{k / 8:.3f}",
        "infinite": "inf" if k == 40_000 else f"{k}.5",  # not a number to DuckDB (it starts with a letter)
        "signed_inf": "-inf" if k == 50_000 else str(k),  # a number to both, but not a finite one
        "underscored": "1_000" if k % 1000 == 1 else str(k % 300),  # a number to DuckDB only
        "day": "2024-02-30" if k == 60_000 else f"20{10 + k % 10}-0{1 + k % 9}-1{k % 10}",  # no 30 February
        "moment": f"2024-01-0{1 + k % 9} 1{k % 10}:30:00" if k % 11 else "N/A",
        "flag": ["yes", "No", "TRUE", "false", "null"][k % 5],
        "becomes_decimal": f"{k}.25" if late and k % 2 else str(k),  # integer in the first rows only
        "city": ["Oslo", "Bergen", " Tromsø ", "Bodø", ""][k % 5],
        "note": "'=quoted" if k == 7 else f"n{k}",
    }


@pytest.fixture(scope="module")
def upload(tmp_path_factory):
    folder = tmp_path_factory.mktemp("one_pass")
    rows = [_cells(k) for k in range(ROWS)]
    header = list(rows[0])
    text = ",".join(header) + "\n" + "".join(",".join(r[h] for h in header) + "\n" for r in rows)
    path = folder / "upload.csv"
    path.write_text(text)
    raw, typed = str(folder / "raw.parquet"), str(folder / "typed.parquet")
    found = ingest.read_upload(str(path), raw, max_rows=10**7, max_columns=100, typed_path=typed, tmpdir=str(folder))
    reference = str(folder / "reference.parquet")
    ingest.write_typed(raw, reference, found.columns, tmpdir=str(folder))
    return found, raw, typed, reference


def _flags_by_sql(raw: str) -> dict[str, dict]:
    """Per column, by the SQL alone over the whole raw file: the count of cells having each flag, the
    first row having it, and the markers found (the inference before the one pass)."""
    names = pq.read_schema(raw).names
    everything = {i: "nt" for i in range(len(names))}
    aggregates = []
    for i in range(len(names)):
        for j in range(sql._FLAGS):
            aggregates += [f"sum((f{i} >> {j}) & 1)", f"min(CASE WHEN (f{i} >> {j}) & 1 = 1 THEN r END)"]
        aggregates.append(f"bit_or(k{i})")
    query = (f"SELECT {', '.join(aggregates)} FROM (SELECT *, {', '.join(sql._flags_sql(i) for i in everything)} "
             f"FROM ({sql._layers(raw, names, everything)}))")
    row = duckdb.connect().execute(query).fetchone()
    width = 2 * sql._FLAGS + 1
    found = {}
    for i, name in enumerate(names):
        cells = row[i * width:(i + 1) * width]
        found[name] = {"counts": [int(c or 0) for c in cells[0:-1:2]], "firsts": list(cells[1:-1:2]),
                       "markers": int(cells[-1] or 0)}
    return found


def test_every_cell_is_read_as_the_sql_reads_it(upload):
    found, raw, _, _ = upload
    truth = _flags_by_sql(raw)
    for column in found.columns:
        expected = truth[column["name"]]
        for j, kind in enumerate(sql._CHECKED):
            bad = column["fits"][kind]
            assert (bad["bad"] if bad else 0) == expected["counts"][j], (column["name"], kind)
            if bad:
                assert bad["line"] == expected["firsts"][j] + 2, (column["name"], kind)
        missing = expected["counts"][len(sql._CHECKED) + 1]
        assert column["missing_count"] == missing, column["name"]
        if missing:
            assert column["missing_line"] == expected["firsts"][len(sql._CHECKED) + 1] + 2
        used = expected["markers"]
        markers = ["null"] * (used & 1) + [m for j, m in enumerate(sql._MARKERS) if used >> (j + 1) & 1]
        assert column["markers"] == sorted("(empty)" if m == "" else m for m in markers), column["name"]
    kinds = {c["name"]: c["type"] for c in found.columns}
    assert kinds == {
        "whole": "integer", "hexish": "categorical", "spaced": "integer", "decimal": "decimal",
        "infinite": "categorical", "signed_inf": "categorical", "underscored": "integer", "day": "categorical",
        "moment": "datetime", "flag": "boolean", "becomes_decimal": "decimal", "city": "categorical",
        "note": "categorical",
    }
    assert found.columns[1]["fits"]["integer"] == {"bad": 1, "line": ROWS - 5 + 2, "example": "0x1F"}


def test_the_typed_file_of_the_pass_is_the_one_written_from_the_raw_file(upload):
    _, _, typed, reference = upload
    ours, theirs = pq.read_table(typed), pq.read_table(reference)
    assert ours.schema == theirs.schema
    for name in ours.column_names:
        assert ours.column(name).equals(theirs.column(name)), name


def test_the_raw_file_holds_every_cell_as_written_with_dictionaries_for_repeating_columns(upload):
    """The raw file is LZ4-compressed (internal, quicker to write than zstd); the columns whose first rows
    repeat (flags, cities, dates) have dictionaries, the others plain pages; either way each cell is its text."""
    _, raw, _, _ = upload
    meta = pq.ParquetFile(raw).metadata
    chunks = {meta.schema.column(j).name: meta.row_group(0).column(j) for j in range(meta.num_columns)}
    assert {c.compression for c in chunks.values()} == {"LZ4"}
    dictionary = {name for name, c in chunks.items() if "RLE_DICTIONARY" in c.encodings}
    assert dictionary == {"spaced", "day", "moment", "flag", "city"}  # ("underscored": 301 texts in 4,096 rows)
    table = pq.read_table(raw)
    for name in ("whole", "spaced", "city", "note"):
        assert table.column(name).to_pylist() == [_cells(k)[name] for k in range(ROWS)], name


def test_summaries_and_the_steps_agree(upload, tmp_path):
    found, raw, typed, _ = upload
    again = ingest.infer(raw, tmpdir=str(tmp_path))
    assert again == found.columns
    by_name = {c["name"]: c for c in found.columns}
    counted = Counter(_cells(k)["flag"] for k in range(ROWS) if _cells(k)["flag"] != "null")
    assert by_name["flag"]["categories"] == [  # the most frequent first, then by text
        {"value": text, "count": n} for text, n in sorted(counted.items(), key=lambda item: (-item[1], item[0]))
    ]
    table = pq.read_table(typed)
    assert by_name["whole"]["min"] == -5000 == pa.compute.min(table.column("whole")).as_py()
    assert by_name["day"]["fits"]["date"] == {"bad": 1, "line": 60_002, "example": "2024-02-30"}
    assert by_name["city"]["distinct"] == 4 and by_name["city"]["missing_count"] == ROWS // 5 + (ROWS % 5 > 4)


def test_parquet_nulls_and_a_type_that_changes_late(tmp_path):
    values = list(range(ingest.PROBE_ROWS + 10))
    table = pa.table({
        "n": pa.array([None if v % 4 == 0 else v for v in values]),
        "late": pa.array([float(v) + (0.5 if v > ingest.PROBE_ROWS else 0) for v in values]),
        "s": pa.array([None if v % 3 == 0 else ("NA" if v % 3 == 1 else f"s{v % 7}") for v in values]),
    })
    path = tmp_path / "upload.parquet"
    pq.write_table(table, path)
    raw, typed, reference = (str(tmp_path / n) for n in ("raw.parquet", "typed.parquet", "reference.parquet"))
    found = ingest.read_upload(str(path), raw, max_rows=10**7, max_columns=10, typed_path=typed)
    columns = {c["name"]: c for c in found.columns}
    assert [columns[n]["type"] for n in ("n", "late", "s")] == ["integer", "decimal", "categorical"]
    assert columns["n"]["markers"] == ["null"] and columns["s"]["markers"] == ["NA", "null"]
    assert columns["late"]["fits"]["integer"]["line"] == ingest.PROBE_ROWS + 2  # a Parquet row is line 1
    ingest.write_typed(raw, reference, found.columns)
    assert pq.read_table(typed).equals(pq.read_table(reference))


def test_a_late_misfit_without_a_raw_file_reads_the_upload_again(tmp_path):
    """The processing task writes no raw file (it keeps the upload): a cell past the first rows that
    misfits the type chosen has the typed file written from a raw file made then from the upload, the
    same file as with a raw file written in the pass, and nothing is left behind."""
    rows = [f"{v},{v + (0.5 if v > ingest.PROBE_ROWS else 0)},s{v % 5}" for v in range(ingest.PROBE_ROWS + 10)]
    path = tmp_path / "upload.csv"
    path.write_text("n,late,s\n" + "\n".join(rows) + "\n")
    work = tmp_path / "work"
    work.mkdir()
    typed, raw, with_raw = (str(tmp_path / n) for n in ("typed.parquet", "raw.parquet", "with_raw.parquet"))
    found = ingest.read_upload(str(path), None, max_rows=10**7, max_columns=10, typed_path=typed, tmpdir=str(work))
    columns = {c["name"]: c for c in found.columns}
    assert [columns[n]["type"] for n in ("n", "late", "s")] == ["integer", "decimal", "categorical"]
    assert columns["late"]["fits"]["integer"]["line"] == ingest.PROBE_ROWS + 3  # the header is line 1
    again = ingest.read_upload(str(path), raw, max_rows=10**7, max_columns=10, typed_path=with_raw)
    assert again.columns == found.columns
    assert pq.read_table(typed).equals(pq.read_table(with_raw))
    assert list(work.iterdir()) == []  # the raw file made for the misfit is gone with its folder


def test_formula_cells_are_refused_in_the_one_pass_as_in_the_steps(tmp_path):
    path = tmp_path / "upload.csv"
    path.write_text("name,note\n" + "".join(f"x{k},ok{k}\n" for k in range(70_000)) + "y,@SUM(A1)\n")
    with pytest.raises(ingest.IngestError) as caught:
        ingest.read_upload(str(path), str(tmp_path / "raw.parquet"), max_rows=10**7, max_columns=10,
                           typed_path=str(tmp_path / "typed.parquet"))
    assert caught.value.reasons == [
        "column 'note': 1 cell looks like a spreadsheet formula (starting with = or @), first at line 70002 "
        "('@SUM(A1)'); remove them or start them with an apostrophe"
    ]


def test_the_fast_ways_refuse_what_only_one_reader_takes():
    """The shortcuts decline, leaving the cells to DuckDB, rather than read them differently."""
    text = pa.array(["12", "0x1F"])
    assert scan._plain_numbers(text, whole=True) is None
    assert scan._plain_numbers(pa.array(["1", "inf"]), whole=False) is None
    assert scan._dates(pa.array(["2024-02-30"]), pa.array([False])) is None
    assert scan._dates(pa.array(["2024-02-29"]), pa.array([False])) is not None


def test_a_file_whose_latin1_bytes_come_late_is_read_as_latin1_throughout(tmp_path):
    """The first 64 KB decide UTF-8; Arrow checks the rest as it parses, and a file with other bytes further
    on is read again, all of it as Latin-1 (as when the whole file was decoded first)."""
    head = "city,n\n" + "".join(f"Oslo,{k}\n" for k in range(20_000))  # about 180 KB of ASCII
    path = tmp_path / "upload.csv"
    path.write_bytes(head.encode() + "Zürich,1\nGenève,2\n".encode("latin-1"))
    found = ingest.read_upload(str(path), str(tmp_path / "raw.parquet"), max_rows=10**7, max_columns=10,
                               typed_path=str(tmp_path / "typed.parquet"))
    assert found.encoding == "latin-1" and found.rows == 20_002
    assert pq.read_table(tmp_path / "typed.parquet").column("city").to_pylist()[-2:] == ["Zürich", "Genève"]
    assert {c["name"]: c["type"] for c in found.columns} == {"city": "categorical", "n": "integer"}
    nul = tmp_path / "nul.csv"
    nul.write_bytes(head.encode() + b"a\x00b,3\n")
    with pytest.raises(ingest.IngestError, match="line 20002: the file contains NUL bytes"):
        ingest.read_upload(str(nul), str(tmp_path / "raw2.parquet"), max_rows=10**7, max_columns=10)
