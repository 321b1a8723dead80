"""Validating an owner's uploaded CSV file (market/catalog/csvdata.py)."""

import numpy as np
import pytest

from market.catalog.csvdata import MAX_REPORTED, CellError, CsvError, ParsedCsv, parse_csv


def problems(data, **limits):
    """The problems reported for ``data``, as (line, column, message) triples."""
    with pytest.raises(CsvError) as caught:
        parse_csv(data, **limits)
    return [(e.row, e.column, e.message) for e in caught.value.errors]


def file_with_cell(cell: str) -> bytes:
    """A small file whose only odd cell is ``cell``, at line 3, column 'b' (quoted)."""
    quoted = '"' + cell.replace('"', '""') + '"'
    return f"a,b\n1,2\n3,{quoted}\n4,5\n".encode()


# --- a good file -------------------------------------------------------------


def test_a_good_file_with_bom_crlf_quotes_and_trailing_blank_lines():
    data = (
        b"\xef\xbb\xbf"
        b'age, "income, net","score"\r\n'
        b'34,"1e3",-3.5\r\n'
        b' 7 , +4 ,".5"\r\n'
        b"-0,2.5E-2,12.\r\n"
        b"\r\n"
        b"  \r\n"
        b",,\r\n"
    )
    parsed = parse_csv(data)
    assert isinstance(parsed, ParsedCsv)
    assert parsed.columns == ["age", "income, net", "score"]
    assert parsed.values.dtype == np.float64
    assert parsed.values.shape == (3, 3)
    assert parsed.values.tolist() == [[34.0, 1000.0, -3.5], [7.0, 4.0, 0.5], [0.0, 0.025, 12.0]]


def test_a_single_column_file_without_final_newline():
    parsed = parse_csv(b"x\n1\n2")
    assert parsed.columns == ["x"]
    assert parsed.values.shape == (2, 1)
    assert parsed.values[:, 0].tolist() == [1.0, 2.0]


def test_bytearray_is_accepted_and_a_str_is_not():
    assert parse_csv(bytearray(b"a\n1\n")).values.tolist() == [[1.0]]
    assert problems("a\n1\n") == [(None, None, "expected the bytes of the file, got str")]


@pytest.mark.parametrize(
    "cell, value",
    [("12", 12.0), ("-3.5", -3.5), ("+4", 4.0), ("1e3", 1000.0), ("1E-3", 0.001), (".5", 0.5),
     ("-.5", -0.5), ("5.", 5.0), ("  7  ", 7.0), ("0", 0.0), ("1e15", 1e15), ("-1e15", -1e15)],
)
def test_accepted_numbers(cell, value):
    assert parse_csv(file_with_cell(cell)).values[1, 1] == value


def test_a_quoted_cell_spanning_two_lines_keeps_line_numbers_right():
    data = b'a,b\n1,"2\n"\nx,3\n'  # the record of lines 2-3 is fine; line 4 is not
    assert problems(data) == [(4, "a", "not a number: 'x'")]


# --- cells ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "cell, message",
    [
        ("", "empty cell"),
        ("   ", "empty cell"),
        ("1_000", "not a number: '1_000'"),
        ("nan", "NaN is not allowed"),
        ("NaN", "NaN is not allowed"),
        ("-nan", "NaN is not allowed"),
        ("inf", "infinity is not allowed"),
        ("Infinity", "infinity is not allowed"),
        ("-inf", "infinity is not allowed"),
        ("+INF", "infinity is not allowed"),
        ("=1+2", "looks like a spreadsheet formula: '=1+2'"),
        ("@SUM(A1:A3)", "looks like a spreadsheet formula: '@SUM(A1:A3)'"),
        ("+A1", "looks like a spreadsheet formula: '+A1'"),
        ("-cmd|' /C calc'!A0", "looks like a spreadsheet formula: \"-cmd|' /C calc'!A0\""),
        ("--5", "looks like a spreadsheet formula: '--5'"),
        ("-", "not a number: '-'"),
        ("abc", "not a number: 'abc'"),
        ("1,5", "not a number: '1,5'"),
        ("0x10", "not a number: '0x10'"),
        ("1.5.2", "not a number: '1.5.2'"),
        ("12 kg", "not a number: '12 kg'"),
        ("\u0661\u0662", "not a number: '\u0661\u0662'"),  # Arabic-Indic digits, which float() accepts
        ("1e999", "too large (limit 1e15)"),
        ("-2e15", "too large (limit 1e15)"),
        ("1000000000000001", "too large (limit 1e15)"),
    ],
)
def test_rejected_cells_name_line_column_and_reason(cell, message):
    assert problems(file_with_cell(cell)) == [(3, "b", message)]


def test_a_long_cell_is_quoted_cut_to_30_characters():
    assert problems(file_with_cell("y" * 100)) == [(3, "b", "not a number: '" + "y" * 30 + "'...")]


def test_max_abs_can_be_lowered():
    assert parse_csv(file_with_cell("-1000"), max_abs=1000).values[1, 1] == -1000.0
    assert problems(file_with_cell("1000.5"), max_abs=1000) == [(3, "b", "too large (limit 1000)")]


def test_every_bad_cell_of_a_row_is_reported_in_column_order_and_reading_goes_on():
    data = b"a,b,c\n1,x,\n2,3,4\n5,6,nan\n"
    assert problems(data) == [
        (2, "b", "not a number: 'x'"),
        (2, "c", "empty cell"),
        (4, "c", "NaN is not allowed"),
    ]


def test_at_most_20_problems_are_collected_and_the_summary_says_so():
    data = b"a,b\n" + b"x,1\n" * 30
    with pytest.raises(CsvError) as caught:
        parse_csv(data)
    exc = caught.value
    assert MAX_REPORTED == 20
    assert len(exc.errors) == 20 and exc.truncated
    assert [e.row for e in exc.errors] == list(range(2, 22))
    text = str(exc)
    assert text.startswith("line 2, column 'a': not a number: 'x'; line 3, column 'a': not a number: 'x'")
    assert text.endswith("; and 15 more (checking stopped after 20 problems)")


def test_exactly_20_problems_are_all_listed_without_truncation():
    with pytest.raises(CsvError) as caught:
        parse_csv(b"a,b\n" + b"x,1\n" * 20)
    assert len(caught.value.errors) == 20 and not caught.value.truncated
    assert str(caught.value).endswith("; and 15 more")


def test_summary_of_one_problem_and_a_cell_error_is_a_value_error():
    with pytest.raises(ValueError, match=r"^line 5, column 'age': not a number: 'abc'$"):
        parse_csv(b"age\n1\n2\n3\nabc\n")
    assert CellError(7, None, "has 3 cells but the header has 4").describe() == (
        "line 7: has 3 cells but the header has 4"
    )
    assert CellError(None, None, "the file is empty").describe() == "the file is empty"


# --- rows and blank lines -------------------------------------------------------


def test_rows_must_have_as_many_cells_as_the_header():
    data = b"a,b,c,d\n1,2,3,4\n1,2,3,4\n1,2,3,4\n1,2,3,4\n1,2,3,4\n1,2,3\n5,6,7,8,9\n0\n"
    assert problems(data) == [
        (7, None, "has 3 cells but the header has 4"),
        (8, None, "has 5 cells but the header has 4"),
        (9, None, "has 1 cell but the header has 4"),
    ]


def test_a_blank_line_in_the_middle_is_an_error_at_the_end_it_is_ignored():
    assert problems(b"a,b\n1,2\n\n3,4\n \n,\n5,6\n\n\n") == [
        (3, None, "blank line (blank lines are allowed only at the end)"),
        (5, None, "blank line (blank lines are allowed only at the end)"),
        (6, None, "blank line (blank lines are allowed only at the end)"),
    ]
    assert parse_csv(b"a,b\n1,2\n3,4\n\n \n,\n").values.shape == (2, 2)


def test_a_header_without_data_rows_is_rejected():
    assert problems(b"a,b\n") == [(None, None, "the file has a header but no data rows")]
    assert problems(b"a,b\n\n\n") == [(None, None, "the file has a header but no data rows")]


def test_row_limit_is_enforced_and_reading_stops_there():
    assert parse_csv(b"a\n1\n2\n3\n\n\n", max_rows=3).values.shape == (3, 1)
    # the bad cell on line 6 lies beyond the limit: it is never read
    assert problems(b"a\n1\n2\n3\n4\nx\n", max_rows=3) == [
        (None, None, "the file has more than 3 data rows (the limit)")
    ]


def test_quoting_errors_name_the_line():
    assert problems(b'a,b\n1,2\n3,"4\n') == [
        (3, None, "the file is not valid CSV (unexpected end of data); check the quotes on this line")
    ]
    [(row, column, message)] = problems(b'a,b\n1,2\n3,"4"x\n')
    assert (row, column) == (3, None) and message.startswith("the file is not valid CSV")


# --- the header ---------------------------------------------------------------------


def test_header_names_are_stripped_and_case_sensitive():
    assert parse_csv(b" a , A ,\"b \"\n1,2,3\n").columns == ["a", "A", "b"]


@pytest.mark.parametrize("header", [b"1,2,3", b"1.5, -2 ,3e4", b"7"])
def test_a_numeric_first_line_is_not_a_header(header):
    assert problems(header + b"\n4,5,6\n") == [(1, None, "the first line must be a header of column names")]


def test_a_header_with_some_numeric_names_is_fine():
    assert parse_csv(b"2019,name\n1,2\n").columns == ["2019", "name"]


def test_bad_header_names_are_each_reported():
    long_name = "n" * 65
    header = f'a,,{long_name},"x\ty",a,b,b\n1,2,3,4,5,6,7\n'.encode()
    assert problems(header) == [
        (1, None, "column 2 has no name"),
        (1, None, f"the name of column 3 is longer than 64 characters: '{'n' * 30}'..."),
        (1, None, "the name of column 4 contains a character that cannot be printed: 'x\\ty'"),
        (1, "a", "column 5 has the same name as column 1"),
        (1, "b", "column 7 has the same name as column 6"),
    ]
    assert parse_csv(("m" * 64 + "\n1\n").encode()).columns == ["m" * 64]


def test_a_blank_first_line_is_rejected():
    assert problems(b"\na,b\n1,2\n") == [(1, None, "the first line is blank; it must be a header of column names")]


def test_column_limit():
    assert parse_csv(b"a,b,c\n1,2,3\n", max_columns=3).columns == ["a", "b", "c"]
    assert problems(b"a,b,c,d\n1,2,3,4\n", max_columns=3) == [(1, None, "the file has 4 columns; the limit is 3")]


# --- the file as a whole ------------------------------------------------------------


@pytest.mark.parametrize("data", [b"", b"   ", b"\n\n\r\n", b"\xef\xbb\xbf", b"\xef\xbb\xbf \n"])
def test_an_empty_file(data):
    assert problems(data) == [(None, None, "the file is empty")]


def test_size_limit_in_megabytes():
    data = b"a\n" + b"1\n" * 49  # 100 bytes
    assert len(data) == 100
    assert parse_csv(data, max_bytes=100).values.shape == (49, 1)
    [(row, column, message)] = problems(data + b"2\n", max_bytes=100)
    assert (row, column) == (None, None)
    assert "MB" in message and "102 bytes, the limit is 100" in message
    default = b"a\n" + b"1\n" * (5 * 1024 * 1024 // 2)
    [(_, _, message)] = problems(default)
    assert message.startswith("the file is larger than the limit of 5 MB")


@pytest.mark.parametrize(
    "data, line",
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", 3),
        (b"a,b\n1,2\n3,\x004\n", 3),
        ("a,b\n1,2\n".encode("utf-16"), 1),
    ],
)
def test_binary_files_are_rejected(data, line):
    [(row, column, message)] = problems(data)
    assert (row, column) == (line, None)
    assert message.startswith("this is a binary file, not CSV text")


@pytest.mark.parametrize(
    "text, line, byte",
    [("\u00e2ge,b\n1,2\n", 1, "0xE2"), ("a,b\n1,2\n3,caf\u00e9\n", 3, "0xE9")],
)
def test_latin_1_files_are_rejected_at_the_first_bad_line(text, line, byte):
    assert problems(text.encode("latin-1")) == [
        (line, None, f"the file is not UTF-8 text (byte {byte} cannot be read); save it as 'CSV UTF-8'")
    ]


def test_utf8_names_are_fine():
    assert parse_csv("\u00e2ge,\u5e74\u9f62\n1,2\n".encode()).columns == ["\u00e2ge", "\u5e74\u9f62"]
