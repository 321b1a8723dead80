"""The ``gradual`` command line's accounts, buyer, download, owner and completion commands, run in a subprocess
against a live server (with a real Celery worker where a release is made): ``login``/``configure`` and profiles,
``purchases``/``purchase``/``wait``, ``releases`` filters and ``release``, ``download``, ``datasets``, ``listings
create/close/reopen``, ``earnings``, ``--output``, and ``completion``."""

import csv
import io
import json
import os
import stat
import subprocess
import sys
import tomllib
from decimal import Decimal

import numpy as np
import pytest
from gradual_client import Client
from gradual_client.cli import decimal_out

from market.catalog.models import Listing
from market.catalog.services import listing_create_microdata
from market.ledger import selectors as ledger
from tests.clients.conftest import SOURCE
from tests.datasets import ready_dataset
from tests.fixtures.market import STATISTICS, make_csv
from tests.marketplace.test_microdata import SPEC, penguins_csv

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "a-long-password-1"  # tests.fixtures.market.users's


def gradual(*args, home, env=None, stdin=None, code=0):
    """``python -m gradual_client ARGS`` with no GRADUAL_* settings but ``env``, ``HOME`` a fresh folder (its
    config file ``home/.config/gradual/config.toml``), ``stdin`` piped in; asserts the exit code and that no
    traceback was printed."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("GRADUAL_")}
    environ.update({"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "PYTHONPATH": str(SOURCE)})
    environ.update(env or {})
    done = subprocess.run([sys.executable, "-m", "gradual_client", *args], env=environ, capture_output=True, text=True,
                          input=stdin if stdin is not None else "", timeout=180)
    assert done.returncode == code, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def rows_of(text):
    return list(csv.DictReader(io.StringIO(text)))


def test_numbers_are_printed_normalized_and_money_with_two_places():
    assert decimal_out(Decimal("2.0000")) == "2" and decimal_out(Decimal("1.5000"), "level") == "1.5"
    assert decimal_out(Decimal("100.0000")) == "100" and decimal_out(Decimal("0.0000")) == "0"  # never 1E+2
    assert decimal_out(Decimal("0.0100")) == "0.01"
    assert decimal_out(Decimal("15"), "price") == "15.00" and decimal_out(Decimal("-5.00"), "amount") == "-5.00"


# -- login, configure, profiles ----------------------------------------------------------------------


def test_login_and_configure_save_keys_in_profiles_and_the_environment_still_wins(live_server, users, fund, key_for,
                                                                                  tmp_path):
    fund(users("bea"), 12)
    config = tmp_path / ".config" / "gradual" / "config.toml"
    url = live_server.url

    wrong = gradual("--url", url, "login", "--username", "bea", "--password-stdin", home=tmp_path,
                    stdin="not-the-password\n", code=1)
    assert "credentials" in wrong.stderr and not config.exists()
    no_terminal = gradual("--url", url, "login", "--username", "bea", home=tmp_path, code=2)
    assert "--password-stdin" in no_terminal.stderr  # never read from a pipe unless told to

    done = gradual("--url", url, "login", "--username", "bea", "--password-stdin", home=tmp_path, stdin=PASSWORD + "\n")
    assert "profile default" in done.stdout and PASSWORD not in done.stdout + done.stderr
    assert stat.S_IMODE(config.stat().st_mode) == 0o600 and PASSWORD not in config.read_text()
    saved = tomllib.loads(config.read_text())["profiles"]["default"]
    assert saved["url"] == url and saved["api_key"].startswith("gradual_")
    assert json.loads(gradual("wallet", "--output", "json", home=tmp_path).stdout)["balance"] == "12.00"

    # a second profile, from a key pasted in; a key the marketplace refuses is not saved
    cal = users("cal")
    fund(cal, 7)
    refused = gradual("--url", url, "--profile", "work", "configure", "--key-stdin", home=tmp_path,
                      stdin="gradual_not-a-key\n", code=1)
    assert "401 invalid_key" in refused.stderr and "work" not in tomllib.loads(config.read_text())["profiles"]
    cal_key = key_for(cal)
    gradual("--url", url, "--profile", "work", "configure", "--key-stdin", home=tmp_path, stdin=cal_key + "\n")
    profiles = tomllib.loads(config.read_text())["profiles"]
    assert profiles["work"] == {"url": url, "api_key": cal_key} and profiles["default"] == saved
    assert stat.S_IMODE(config.stat().st_mode) == 0o600

    def balance(*args, **kwargs):
        return json.loads(gradual(*args, "wallet", "--output", "json", home=tmp_path, **kwargs).stdout)["balance"]

    assert balance("--profile", "work") == "7.00"
    assert balance(env={"GRADUAL_PROFILE": "work"}) == "7.00"
    assert balance() == "12.00"  # the default profile is untouched
    # GRADUAL_API_KEY and GRADUAL_URL still win over any profile
    assert balance("--profile", "work", env={"GRADUAL_API_KEY": saved["api_key"]}) == "12.00"
    overridden = gradual("wallet", env={"GRADUAL_URL": "http://127.0.0.1:9"}, home=tmp_path, code=3)
    assert "could not reach" in overridden.stderr
    missing = gradual("--profile", "nobody", "wallet", home=tmp_path, code=2)
    assert "no profile 'nobody'" in missing.stderr and "default, work" in missing.stderr

    # logging in again replaces the profile's key, keeping the address saved with it
    gradual("--profile", "work", "login", "--username", "cal", "--password-stdin", home=tmp_path, stdin=PASSWORD + "\n")
    again = tomllib.loads(config.read_text())["profiles"]
    assert again["work"]["url"] == url and again["work"]["api_key"] not in (cal_key, saved["api_key"])
    assert balance("--profile", "work") == "7.00"


def test_an_older_config_file_is_the_default_profile_and_login_keeps_it_readable(live_server, users, fund, tmp_path):
    fund(users("bea"), 3)
    config = tmp_path / ".config" / "gradual" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'url = "{live_server.url}"\napi_key = "gradual_old"\n\n[profiles.other]\nurl = "http://x"\n')
    assert "401 invalid_key" in gradual("wallet", home=tmp_path, code=1).stderr  # the top-level key is the default
    gradual("login", "--username", "bea", "--password-stdin", home=tmp_path, stdin=PASSWORD + "\n")
    data = tomllib.loads(config.read_text())
    assert "api_key" not in data and data["profiles"]["other"] == {"url": "http://x"}
    assert data["profiles"]["default"]["url"] == live_server.url
    assert "3.00" in gradual("wallet", home=tmp_path).stdout


# -- buyers: purchases, wait, releases, release ----------------------------------------------------------


def test_purchases_one_purchase_waiting_and_releases_filtered(worker, live_server, buyer_key, make_listing, tmp_path):
    first, second = make_listing(), make_listing()
    env = {"GRADUAL_URL": live_server.url, "GRADUAL_API_KEY": buyer_key}
    with Client(live_server.url, buyer_key) as client:
        queued = client.buy(first.pk, "0.5", wait=False)
        client.buy(second.pk, 2)

    waited = gradual("wait", queued.id, "--output", "json", env=env, home=tmp_path)
    answer = json.loads(waited.stdout)
    assert answer["id"] == queued.id and answer["status"] == "released" and answer["release"]["level"] == "0.5000"
    table = gradual("purchase", queued.id, env=env, home=tmp_path).stdout
    assert "released" in table and "count" in table
    assert [line.split()[:2] for line in table.splitlines()[:6] if line.startswith(("epsilon", "price"))] == [
        ["epsilon", "0.5"], ["price", "5.00"]]  # a level normalized, money with two places

    bought = rows_of(gradual("purchases", "--output", "csv", env=env, home=tmp_path).stdout)
    assert {(int(r["listing"]), r["epsilon"], r["price"], r["status"]) for r in bought} == {
        (first.pk, "0.5", "5.00", "released"), (second.pk, "2", "20.00", "released")}
    release_id = next(r["release"] for r in bought if int(r["listing"]) == first.pk)

    only_first = rows_of(gradual("releases", "--listing", str(first.pk), "--output", "csv", env=env, home=tmp_path).stdout)
    assert {r["release"] for r in only_first} == {release_id} and {r["level"] for r in only_first} == {"0.5"}
    assert only_first[0]["label"] == "count" and {"value", "error_bound", "noise_scale"} <= set(only_first[0])
    everything = rows_of(gradual("releases", "--since", "2000-01-01", "--output", "csv", env=env, home=tmp_path).stdout)
    assert {r["level"] for r in everything} == {"0.5", "2"}
    assert json.loads(gradual("releases", "--since", "2999-01-01", "--output", "json", env=env, home=tmp_path).stdout) == []
    assert "not a date" in gradual("releases", "--since", "yesterday", env=env, home=tmp_path, code=2).stderr

    shown = gradual("release", release_id, env=env, home=tmp_path).stdout
    fields = [line.split() for line in shown.splitlines()]
    assert fields[0] == ["id", release_id] and ["level", "0.5"] in fields
    with Client(live_server.url, buyer_key) as client:
        raw = client.release(release_id).raw
    assert json.loads(gradual("release", release_id, "--output", "json", env=env, home=tmp_path).stdout) == [raw]

    missing = gradual("wait", "00000000-0000-0000-0000-000000000000", env=env, home=tmp_path, code=1)
    assert "404" in missing.stderr and missing.stdout == ""


def test_wait_ends_non_zero_while_in_flight_then_returns_the_release(late_worker, live_server, buyer_key, listing,
                                                                     tmp_path):
    env = {"GRADUAL_URL": live_server.url, "GRADUAL_API_KEY": buyer_key}
    with Client(live_server.url, buyer_key) as client:
        queued = client.buy(listing.pk, "0.5", wait=False)
    slow = gradual("wait", queued.id, "--timeout", "1", env=env, home=tmp_path, code=4)
    assert f"purchase {queued.id} was still queued" in slow.stderr and slow.stdout == ""
    late_worker()
    done = gradual("wait", queued.id, "--timeout", "60", "--output", "csv", env=env, home=tmp_path)
    assert [r["label"] for r in rows_of(done.stdout)][0] == "count"


# -- downloads ----------------------------------------------------------------------------------------


def _microdata_listing(owner, records: int, title: str):
    """A microdata listing of ``records`` penguins (public size), as the microdata tests make one."""
    data, _ = penguins_csv(records)
    dataset = ready_dataset(owner=owner, name=title, data=data, total_budget="20", relation="public_size")
    return listing_create_microdata(owner=owner, dataset_id=dataset.public_id, title=title,
                                    microdata_spec=SPEC, price_per_epsilon="2.00", shuffle=np.random.default_rng(7))


def test_download_writes_a_microdata_releases_records_and_any_releases_values(worker, live_server, owner, make_listing,
                                                                              funded_buyer, key_for, tmp_path):
    micro = _microdata_listing(owner, 300, "Penguins by record")
    plain = make_listing()
    key = key_for(funded_buyer("bea", 100))
    env = {"GRADUAL_URL": live_server.url, "GRADUAL_API_KEY": key}
    with Client(live_server.url, key) as client:
        records = client.buy(micro.pk, 1).release
        values = client.buy(plain.pk, 1).release
        served = client._request("GET", f"releases/{records.id}/records.csv").content
    assert set(records.files) == {"records"} and values.files == {}

    target = tmp_path / "records.csv"
    done = gradual("download", records.id, "-o", str(target), env=env, home=tmp_path)
    assert target.read_bytes() == served and f"to {target}" in done.stderr
    lines = list(csv.reader(io.StringIO(target.read_text())))
    assert lines[0] == ["record", *micro.labels] and len(lines) == 301
    parquet = tmp_path / "records.parquet"
    gradual("download", records.id, "-o", str(parquet), env=env, home=tmp_path)  # the format from the suffix
    import pyarrow.parquet as pq
    assert pq.read_table(parquet).num_rows == 300
    assert "not printed" in gradual("download", records.id, "--as", "parquet", env=env, home=tmp_path, code=2).stderr

    # any release's values: CSV by default, JSON as the API sends them
    printed = rows_of(gradual("download", values.id, env=env, home=tmp_path).stdout)
    assert [r["label"] for r in printed] == [v.label for v in values.values]
    assert {r["level"] for r in printed} == {"1"} and [r["value"] for r in printed] == [str(v.value) for v in values.values]
    as_json = tmp_path / "values.json"
    gradual("download", values.id, "-o", str(as_json), env=env, home=tmp_path)
    assert json.loads(as_json.read_text()) == values.raw["values"]
    micro_values = rows_of(gradual("download", records.id, "--what", "values", env=env, home=tmp_path).stdout)
    assert [r["label"] for r in micro_values] == [v.label for v in records.values]
    nothing = gradual("download", values.id, "--what", "records", env=env, home=tmp_path, code=2)
    assert f"release {values.id} has no records to download (it has: values)" in nothing.stderr
    unknown = gradual("download", "rel_0000000000000000000000", env=env, home=tmp_path, code=1)
    assert "404" in unknown.stderr


def test_download_writes_a_synthetic_releases_rows(worker, live_server, owner, funded_buyer, key_for, tmp_path):
    """``gradual download`` of a synthetic-data release: its one file, the rows, as CSV or Parquet, the
    same bytes every time."""
    from market.catalog.services import listing_create
    from tests.marketplace.test_synthetic_listing import CSV, SPEC

    dataset = ready_dataset(owner=owner, name="birds", data=CSV, total_budget="20", relation="public_size")
    spec = [{**SPEC[0], "columns": SPEC[0]["columns"][:3]}]  # species, island, mass: every record counted
    listing = listing_create(owner=owner, dataset_id=dataset.public_id, title="Birds, synthetic", statistics=spec,
                             ceiling="2", price_per_epsilon="1")
    key = key_for(funded_buyer("bea", 100))
    env = {"GRADUAL_URL": live_server.url, "GRADUAL_API_KEY": key}
    with Client(live_server.url, key) as client:
        release = client.buy(listing.pk, 1).release
    assert set(release.files) == {"rows"}
    target = tmp_path / "rows.csv"
    gradual("download", release.id, "-o", str(target), env=env, home=tmp_path)
    lines = list(csv.reader(io.StringIO(target.read_text())))
    assert lines[0] == ["species", "island", "mass"] and len(lines) == 301
    again = rows_of(gradual("download", release.id, "--what", "rows", env=env, home=tmp_path).stdout)
    assert [list(r.values()) for r in again] == lines[1:]
    parquet = tmp_path / "rows.parquet"
    gradual("download", release.id, "-o", str(parquet), env=env, home=tmp_path)
    import pyarrow.parquet as pq
    assert pq.read_table(parquet).num_rows == 300
    # the owner's delivered quality, per level released
    mine = {"GRADUAL_URL": live_server.url, "GRADUAL_API_KEY": key_for(owner)}
    [level] = rows_of(gradual("listings", "quality", str(listing.pk), "--output", "csv", env=mine, home=tmp_path).stdout)
    assert level["level"] == "1.0000" and level["rows"] == "300" and 0 < float(level["tvd"]) < 1
    refused = gradual("listings", "quality", str(listing.pk), env=env, home=tmp_path, code=1)
    assert "404" in refused.stderr


# -- owners ------------------------------------------------------------------------------------------


def test_a_quote_whose_answers_are_mostly_noise_says_so(live_server, owner, make_listing, funded_buyer, key_for,
                                                         tmp_path):
    micro = _microdata_listing(owner, 30, "Few penguins")  # counts of 30 records: at eps 1 wider than 0 to 30
    plain = make_listing()
    key = key_for(funded_buyer("bea", 100))
    env = {"GRADUAL_URL": live_server.url, "GRADUAL_API_KEY": key}
    with Client(live_server.url, key) as client:
        warned = client.quote(micro.pk, 1).warning
        assert warned.startswith("At ε 1 the answers are mostly noise") and "between 0 and 30" in warned
        assert client.quote(plain.pk, 1).warning == ""
    shown = gradual("quote", str(micro.pk), "--epsilon", "1", env=env, home=tmp_path).stdout
    assert ["warning", *warned.split()] in [line.split() for line in shown.splitlines()]
    assert "warning" not in gradual("quote", str(plain.pk), "--epsilon", "1", env=env, home=tmp_path).stdout
    rows = rows_of(gradual("quote", str(micro.pk), "--epsilon", "1", "--output", "csv", env=env, home=tmp_path).stdout)
    assert {row["warning"] for row in rows} == {warned}


def test_owner_commands_datasets_listings_and_earnings(worker, live_server, owner, funded_buyer, key_for, tmp_path):
    path = tmp_path / "visits.csv"
    path.write_bytes(make_csv(200))
    env = {"GRADUAL_URL": live_server.url, "GRADUAL_API_KEY": key_for(owner)}

    uploaded = json.loads(gradual("datasets", "upload", str(path), "--budget", "10", "--name", "Visits", "--wait",
                                  "--output", "json", env=env, home=tmp_path).stdout)
    assert uploaded["status"] == "ready"
    listed = rows_of(gradual("datasets", "--output", "csv", env=env, home=tmp_path).stdout)
    assert [(r["id"], r["name"], r["budget"], r["status"]) for r in listed] == [(uploaded["id"], "Visits", "10", "ready")]
    assert gradual("datasets", "list", "--output", "csv", env=env, home=tmp_path).stdout == gradual(
        "datasets", "--output", "csv", env=env, home=tmp_path).stdout
    shown = gradual("datasets", "show", uploaded["id"], env=env, home=tmp_path).stdout
    assert "budget" in shown and "10" in shown and all(name in shown for name in ("age", "income", "visits"))

    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"dataset": uploaded["id"], "title": "Visits by age", "statistics": STATISTICS[:2],
                                "ceiling": "4", "price_per_epsilon": "2.50"}))
    created = json.loads(gradual("listings", "create", "--spec", str(spec), "--output", "json", env=env,
                                 home=tmp_path).stdout)
    assert created["title"] == "Visits by age" and created["labels"] == ["count", "sum(age)"]
    listing_id = str(created["id"])
    closed = gradual("listings", "close", listing_id, "--reason", "new data soon", env=env, home=tmp_path).stdout
    assert ["is_open", "False"] in [line.split() for line in closed.splitlines()] and "new data soon" in closed
    seen = json.loads(gradual("listings", "--output", "json", env=env, home=tmp_path).stdout)
    assert [(item["id"], item["is_open"]) for item in seen] == [(created["id"], False)]  # its owner still sees it
    reopened = json.loads(gradual("listings", "reopen", listing_id, "--output", "json", env=env, home=tmp_path).stdout)
    assert reopened["is_open"] is True

    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert "is not valid JSON" in gradual("listings", "create", "--spec", str(bad), env=env, home=tmp_path, code=2).stderr
    spec.write_text(json.dumps({"dataset": uploaded["id"], "title": "x", "statistics": [], "ceiling": "4"}))
    refused = gradual("listings", "create", "--spec", str(spec), env=env, home=tmp_path, code=1)
    assert refused.stderr.startswith("gradual: error 400 invalid:") and "statistics:" in refused.stderr

    buyer = funded_buyer("bea", 20)
    bea_env = {**env, "GRADUAL_API_KEY": key_for(buyer)}
    with Client(live_server.url, key_for(buyer)) as client:
        client.buy(int(listing_id), 2)
    not_hers = gradual("listings", "close", listing_id, env=bea_env, home=tmp_path, code=1)
    assert not_hers.stderr.startswith("gradual: error 40") and "Traceback" not in not_hers.stderr

    earnings = json.loads(gradual("earnings", "--output", "json", env=env, home=tmp_path).stdout)
    balance = ledger.earnings_balance(user=owner)
    assert earnings == {"balance": f"{balance:.2f}", "requested": "0.00", "paid": "0.00", "currency": "credits"}
    assert balance > 0
    moves = rows_of(gradual("earnings", "--statement", "--output", "csv", env=env, home=tmp_path).stdout)
    assert moves and moves[0]["balance_after"] == f"{balance:.2f}"

    # removing the dataset closes its listing, keeps the sale on record and hides the dataset
    assert "Traceback" not in gradual("datasets", "remove", uploaded["id"], env=bea_env, home=tmp_path, code=1).stderr
    removed = gradual("datasets", "remove", uploaded["id"], env=env, home=tmp_path).stdout
    assert removed.startswith(f"removed {uploaded['id']}")
    assert rows_of(gradual("datasets", "--output", "csv", env=env, home=tmp_path).stdout) == []
    seen = json.loads(gradual("listings", "--output", "json", env=env, home=tmp_path).stdout)
    assert [(item["id"], item["is_open"]) for item in seen] == [(created["id"], False)]
    assert ledger.earnings_balance(user=owner) == balance
    gradual("datasets", "remove", uploaded["id"], env=env, home=tmp_path)  # again: nothing changes, no error


# -- shell completion --------------------------------------------------------------------------------


def complete(script, *words):
    """What bash completes after ``words`` (the last is the word being typed) with ``script`` loaded."""
    line = " ".join(f"'{w}'" for w in words)
    program = (f"{script}\nCOMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; _gradual_complete; "
               'printf "%s\\n" "${COMPREPLY[@]}"')
    done = subprocess.run(["bash", "--norc", "--noprofile", "-c", program], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_a_dataset_with_a_delta_compares_lists_on_the_skellam_path_and_counts_what_fits(live_server, owner, key_for,
                                                                                        tmp_path):
    """``datasets budget --delta``, ``listings compare``, ``listings create`` with a Skellam spec, ``datasets fits``:
    the owner's Skellam commands against a live server."""
    dataset = ready_dataset(owner=owner, name="visits", data=make_csv(200), total_budget="4")
    env = {"GRADUAL_URL": live_server.url, "GRADUAL_API_KEY": key_for(owner)}
    refused = gradual("datasets", "budget", dataset.public_id, "--budget", "4", "--delta", "1e-5", "--reason", "r",
                      env=env, home=tmp_path, code=1)
    assert "at most 1e-6" in refused.stderr
    changed = gradual("datasets", "budget", dataset.public_id, "--budget", "4", "--delta", "1e-6", "--reason", "r",
                      "--output", "json", env=env, home=tmp_path).stdout
    assert json.loads(changed)["delta"] == "1e-6"
    wide = [{"kind": "count", "where": [{"column": "age", "op": ">=", "value": a}]} for a in range(20, 60, 2)]
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"dataset": dataset.public_id, "title": "Ages above", "statistics": wide, "ceiling": "1",
                                "price_per_epsilon": "2.00"}))
    compared = gradual("listings", "compare", "--spec", str(spec), env=env, home=tmp_path).stdout
    assert "proposed: skellam" in compared
    table = rows_of(gradual("listings", "compare", "--spec", str(spec), "--output", "csv", env=env, home=tmp_path).stdout)
    assert len(table) == 20 and all(float(row["skellam"]) < float(row["lattice"]) for row in table)
    spec.write_text(json.dumps({**json.loads(spec.read_text()), "mechanism": "skellam", "delta": "1e-8"}))
    created = json.loads(gradual("listings", "create", "--spec", str(spec), "--output", "json", env=env,
                                 home=tmp_path).stdout)
    assert created["mechanism"] == "skellam" and created["delta"] == "1e-8" and created["levels"][-1] == "1"
    fits = gradual("datasets", "fits", dataset.public_id, "--ceiling", "0.5", "--output", "json", env=env,
                   home=tmp_path).stdout
    assert json.loads(fits)["rule"] == "composition" and json.loads(fits)["fits"] >= 6
    shown = json.loads(gradual("datasets", "show", dataset.public_id, "--output", "json", env=env, home=tmp_path).stdout)
    assert shown["composed"]["epsilon"] is not None


def test_a_centroid_is_compared_and_listed_on_the_skellam_path(live_server, owner, key_for, tmp_path):
    """``listings compare`` on a centroid names the path that cannot sell it and shows the other's bounds;
    ``listings create`` lists it on the Skellam path."""
    from market.catalog.models import Dataset
    from tests.marketplace.test_vector import locations_csv

    dataset = ready_dataset(owner=owner, name="places", data=locations_csv(), relation="public_size", total_budget="10")
    Dataset.objects.filter(pk=dataset.pk).update(delta_budget="1e-6")
    env = {"GRADUAL_URL": live_server.url, "GRADUAL_API_KEY": key_for(owner)}
    centroid = [{"kind": "centroid", "columns": ["east", "north"], "center": [1000, -300], "radius": 3000}]
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"dataset": dataset.public_id, "title": "Centre", "statistics": centroid, "ceiling": "1",
                                "price_per_epsilon": "2.00"}))
    compared = gradual("listings", "compare", "--spec", str(spec), env=env, home=tmp_path).stdout
    assert "proposed: skellam" in compared and "lattice: not available: " in compared
    assert "a centroid is released on the Skellam path" in compared
    table = rows_of(gradual("listings", "compare", "--spec", str(spec), "--output", "csv", env=env, home=tmp_path).stdout)
    assert [row["value"] for row in table] == ["sum(east - 1000)", "sum(north + 300)"]
    assert all(row["lattice"] == "" and float(row["skellam"]) > 0 for row in table)
    spec.write_text(json.dumps({**json.loads(spec.read_text()), "mechanism": "skellam"}))
    created = json.loads(gradual("listings", "create", "--spec", str(spec), "--output", "json", env=env,
                                 home=tmp_path).stdout)
    assert created["mechanism"] == "skellam" and created["statistics"][0]["grid"] == "150"


def test_completion_scripts_are_made_from_the_parser(tmp_path):
    bash = gradual("completion", "bash", home=tmp_path).stdout
    assert complete(bash, "gradual", "")[:3] == ["login", "configure", "listings"]
    assert complete(bash, "gradual", "pur") == ["purchases", "purchase"]
    assert complete(bash, "gradual", "listings", "c") == ["create", "compare", "close"]
    assert complete(bash, "gradual", "--url", "http://x", "datasets", "")[:6] == ["list", "show", "budget", "fits",
                                                                                   "remove", "upload"]
    assert "--password-stdin" in complete(bash, "gradual", "login", "--pa")
    assert complete(bash, "gradual", "releases", "--output", "") == ["table", "csv", "json"]
    assert complete(bash, "gradual", "completion", "")[:3] == ["bash", "zsh", "fish"]
    assert "--spec" in complete(bash, "gradual", "listings", "create", "--")

    zsh = gradual("completion", "zsh", home=tmp_path).stdout
    assert "bashcompinit" in zsh and "complete -o default -F _gradual_complete gradual" in zsh
    fish = gradual("completion", "fish", home=tmp_path).stdout.splitlines()
    assert "complete -c gradual -n '__fish_use_subcommand' -a wait -d 'wait until a purchase is released (exit code 4 " \
           "if it failed or is still in flight)'" in fish
    assert any(line.startswith("complete -c gradual -n '__fish_seen_subcommand_from listings ; and not "
                               "__fish_seen_subcommand_from create compare quality close reopen' -a create") for line in fish)
    assert any("__fish_seen_subcommand_from download' -s o -l output-file" in line for line in fish)
    assert gradual("completion", "tcsh", home=tmp_path, code=2).stdout == ""


def test_a_listing_on_a_large_table_is_created_preparing_and_waited_for(worker, live_server, owner, key_for, settings,
                                                                        tmp_path):
    """A listing over a large table (every table, here) is made preparing by the request and computed by
    the ingest worker; --wait returns it once it is ready."""
    settings.LISTING_PREPARE_INLINE_ROWS = 0
    dataset = ready_dataset(owner=owner, name="visits", data=make_csv(200), total_budget="10")
    env = {"GRADUAL_URL": live_server.url, "GRADUAL_API_KEY": key_for(owner)}
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"dataset": dataset.public_id, "title": "Visits", "statistics": STATISTICS[:2],
                                "ceiling": "4", "price_per_epsilon": "2.50"}))
    made = json.loads(gradual("listings", "create", "--spec", str(spec), "--wait", "--output", "json", env=env,
                              home=tmp_path).stdout)
    assert (made["status"], made["is_open"], made["failure"]) == ("ready", True, "")
    assert Listing.objects.get(pk=made["id"]).true_answer()[0] == 200  # the count, computed by the worker
    shown = gradual("listings", "create", "--spec", str(spec), env=env, home=tmp_path).stdout
    assert ["status", "preparing"] in [line.split() for line in shown.splitlines()]
