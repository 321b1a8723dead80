"""The listing benchmark (bench/listing_scale.py) runs end to end at a small size, and
DuckDB's answers agree with the pandas baseline on its generated table."""

import json

from bench.listing_scale import main


def test_the_benchmark_runs_small_and_both_contenders_agree(tmp_path, capsys):
    out = tmp_path / "figures.json"
    assert main(["--rows", "10000", "--json", str(out)]) == 0
    figures = json.loads(out.read_text())
    assert figures["rows"] == 10_000 and figures["columns"] == 20 and figures["statistics"] == 15
    assert figures["agree"] is True
    assert figures["duckdb"]["seconds"] > 0 and figures["duckdb"]["peak_mb"] > 0
    assert figures["listing"]["seconds"] > 0  # the sealed file decrypted, then computed: the same answers
    assert "answers agree: True" in capsys.readouterr().out
