"""The ``gradual`` command line.

    gradual login [--username U] [--password-stdin]      gradual configure [--key-stdin] [--no-check]
    gradual listings [--search TEXT]                     gradual listings create --spec FILE [--dataset ID] [--wait]
    gradual listings close LISTING [--reason TEXT]       gradual listings reopen LISTING
    gradual quote LISTING (--epsilon E | --target T [--target T ...]) [--records N]
    gradual buy LISTING --epsilon E [--max-price P] [--no-wait] [--idempotency-key K] [--timeout S]
    gradual purchases | purchase ID | wait ID [--timeout S]
    gradual releases [--listing N] [--since DATE] | release ID | download ID [-o FILE] [--what W] [--as F]
    gradual wallet | statement | earnings [--statement]
    gradual datasets [list] | datasets show ID | datasets upload FILE --budget B (also: upload FILE ...)
    gradual completion bash|zsh|fish

Every command takes ``--output table|csv|json`` (also spelled ``--format``) and ``--url``, ``--key``,
``--profile``, ``--config`` (which win over ``GRADUAL_URL``, ``GRADUAL_API_KEY``, ``GRADUAL_PROFILE`` and the
config file's profile). Exit codes: 0 done; 1 the API refused (its code and message on stderr); 2 bad usage
or missing settings; 3 the marketplace could not be reached; 4 a purchase failed (refunded) or was still in
flight when the wait ended.
"""

from __future__ import annotations

import argparse
import csv
import getpass
import io
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import fields, is_dataclass
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, TextIO

from . import __version__
from .client import Client
from .completion import SHELLS, completion_script
from .config import (
    ENV_URL,
    ConfigError,
    config_path,
    profile_name,
    read_config,
    resolve,
    save_profile,
)
from .errors import (
    GradualError,
    NetworkError,
    PriceChangedError,
    PurchaseFailed,
    ReleaseTimeout,
)
from .models import FRAME_COLUMNS, Dataset, Listing, Purchase, Release

OK, REFUSED, USAGE, UNREACHABLE, NOT_RELEASED = 0, 1, 2, 3, 4
FORMATS = ("table", "csv", "json")
DOWNLOAD_FORMATS = ("csv", "json", "parquet")


#: fields printed as money (2 places); every other Decimal (levels, budgets) is printed normalized ("2", "1.5")
MONEY = frozenset({"price", "amount", "balance", "balance_after", "requested", "paid", "max_price", "cap_price"})


def decimal_out(value: Decimal, column: str | None = None) -> str:
    """A Decimal as printed: money with 2 places ("15.00"), anything else without trailing zeros ("2", not "2.0000")."""
    if column in MONEY:
        return format(value.quantize(Decimal("0.01")), "f")
    return format(value.normalize(), "f") if value else "0"


def _text(value: Any, column: str | None = None) -> str:
    if value is None:
        return ""
    if isinstance(value, Decimal):
        return decimal_out(value, column)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(_jsonable(value), ensure_ascii=False)
    return str(value)


def _jsonable(value: Any, column: str | None = None) -> Any:
    if isinstance(value, Decimal):
        return decimal_out(value, column)
    if isinstance(value, datetime):
        return value.isoformat()
    if is_dataclass(value) and not isinstance(value, type):
        return {k: _jsonable(getattr(value, k), k) for k in (f.name for f in fields(value)) if k != "raw"}
    if isinstance(value, dict):
        return {str(k): _jsonable(v, str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def _dump_json(out: TextIO, data: Any) -> None:
    json.dump(data, out, indent=2, ensure_ascii=False)
    out.write("\n")


def write_rows(out: TextIO, columns: Sequence[str], rows: Sequence[dict[str, Any]], fmt: str) -> None:
    """Rows as an aligned table, CSV (a header, then one line per row) or a JSON list."""
    if fmt == "json":
        _dump_json(out, [{c: _jsonable(row.get(c), c) for c in columns} for row in rows])
        return
    if fmt == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow([_text(row.get(c), c) for c in columns])
        return
    cells = [[_text(row.get(c), c) for c in columns] for row in rows]
    widths = [max([len(c), *(len(line[i]) for line in cells)]) for i, c in enumerate(columns)]
    out.write("  ".join(c.ljust(w) for c, w in zip(columns, widths)).rstrip() + "\n")
    for line in cells:
        out.write("  ".join(v.ljust(w) for v, w in zip(line, widths)).rstrip() + "\n")
    if not rows:
        out.write("(none)\n")


def write_record(out: TextIO, record: dict[str, Any], fmt: str) -> None:
    """One object: ``name  value`` lines, a CSV of one row, or a JSON object."""
    if fmt == "json":
        _dump_json(out, _jsonable(record))
    elif fmt == "csv":
        write_rows(out, list(record), [record], "csv")
    else:
        width = max(len(k) for k in record)
        for name, value in record.items():
            out.write(f"{name.ljust(width)}  {_text(value, name)}\n")


LISTING_COLUMNS = ("id", "title", "owner", "engine", "ceiling", "price", "your_level", "is_open")
LISTING_FIELDS = ("id", "title", "status", "engine", "mechanism", "delta", "ceiling", "buyable_ceiling", "levels", "price",
                  "is_open", "closed_reason", "failure", "labels")
QUOTE_FIELDS = ("listing", "epsilon", "current_level", "cap", "price")
PURCHASE_FIELDS = ("id", "listing", "level_from", "epsilon", "price", "status", "failure_reason")
PURCHASE_COLUMNS = ("id", "listing", "level_from", "epsilon", "price", "status", "created_at", "release")
RELEASE_FIELDS = ("id", "listing", "purchase", "level", "created_at", "files")
DATASET_FIELDS = ("id", "name", "status", "row_count", "failure")
DATASET_COLUMNS = ("id", "name", "status", "row_count", "budget", "ceilings_total", "spent", "created_at")
DATASET_DETAIL = (*DATASET_COLUMNS, "delta", "composed", "relation", "failure")
STATEMENT_COLUMNS = ("at", "description", "amount", "balance_after", "transfer")
EARNINGS_FIELDS = ("balance", "requested", "paid", "currency")


def _price(listing: Listing) -> Any:
    return listing.price_curve.get("formula", "")


def cmd_listings(client: Client, args: argparse.Namespace, out: TextIO) -> int:
    rows = [{**{c: getattr(listing, c, None) for c in LISTING_COLUMNS}, "price": _price(listing)}
            for listing in client.listings(search=args.search)]
    write_rows(out, LISTING_COLUMNS, rows, args.format)
    return OK


def _write_listing(listing: Listing, fmt: str, out: TextIO) -> None:
    if fmt == "json":
        _dump_json(out, listing.raw)
    else:
        write_record(out, {f: _price(listing) if f == "price" else getattr(listing, f, None) for f in LISTING_FIELDS}, fmt)


def cmd_listing_create(client: Client, args: argparse.Namespace, out: TextIO) -> int:
    spec = _spec_file(args.spec)
    if args.dataset and isinstance(spec, dict):
        spec["dataset"] = args.dataset
    listing = client.create_listing_from_spec(spec)
    if args.wait:
        listing = client.wait_listing(listing, timeout=args.timeout)
    _write_listing(listing, args.format, out)
    return REFUSED if listing.status == "failed" else OK


def _spec_file(path: str) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"cannot read the spec file {path}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"the spec file {path} is not valid JSON: {exc}") from None


def cmd_listing_compare(client: Client, args: argparse.Namespace, out: TextIO) -> int:
    spec = _spec_file(args.spec)
    if not isinstance(spec, dict):
        raise ValueError("a listing's spec is a JSON object (dataset, statistics, ceiling, ...)")
    found = client.compare_mechanisms(args.dataset or spec.get("dataset"), statistics=spec.get("statistics") or [],
                                      ceiling=spec.get("ceiling"), delta=args.delta or spec.get("delta"))
    if args.format == "json":
        _dump_json(out, found)
        return OK
    mechanisms = found["mechanisms"]
    columns = ["value", *(m["mechanism"] for m in mechanisms)]
    rows = []
    shown = next((m for m in mechanisms if m["available"]), mechanisms[0])  # a centroid: the Skellam path only
    for i, value in enumerate(shown["values"]):
        row = {"value": value["label"]}
        for m in mechanisms:
            row[m["mechanism"]] = m["values"][i]["error_bound"] if m["available"] else None
        rows.append(row)
    write_rows(out, columns, rows, args.format)
    if args.format == "table":
        out.write(f"proposed: {found['proposed']}")
        out.write(f" (mean squared ratio of the bounds {found['ratio']:.2f})\n" if found["ratio"] is not None else "\n")
        for m in mechanisms:
            if not m["available"]:
                out.write(f"{m['mechanism']}: not available: {m['reason']}\n")
    return OK


def cmd_listing_quality(client: Client, args: argparse.Namespace, out: TextIO) -> int:
    write_rows(out, ("level", "rows", "tvd"), client.quality(args.listing), args.format)
    return OK


def cmd_listing_close(client: Client, args: argparse.Namespace, out: TextIO) -> int:
    _write_listing(client.close_listing(args.listing, reason=args.reason), args.format, out)
    return OK


def cmd_listing_reopen(client: Client, args: argparse.Namespace, out: TextIO) -> int:
    _write_listing(client.reopen_listing(args.listing), args.format, out)
    return OK


def cmd_quote(client: Client, args: argparse.Namespace, out: TextIO) -> int:
    quote = client.quote(args.listing, args.epsilon, target=args.target, records=args.records)
    if args.format == "json":
        _dump_json(out, quote.raw)
        return OK
    if args.format == "csv":
        rows = [{**{f: getattr(quote, f) for f in QUOTE_FIELDS}, "statistic": s.name, "error_bound": s.error_bound,
                 "assumes_records": s.assumes_records, "note": s.note, "warning": quote.warning}
                for s in quote.statistics]
        write_rows(out, (*QUOTE_FIELDS, "statistic", "error_bound", "assumes_records", "note", "warning"), rows, "csv")
        return OK
    bound = {"cap_bound": quote.cap_bound} if quote.cap_bound else {}
    warning = {"warning": quote.warning} if quote.warning else {}
    write_record(out, {f: getattr(quote, f) for f in QUOTE_FIELDS} | {"cap_reason": quote.cap_reason} | bound | warning,
                 "table")
    out.write("\n")
    rows = [{"statistic": s.name, "error_bound (95%)": s.note if s.too_few else s.error_bound,
             "assumes_records": s.assumes_records, "note": "" if s.too_few else s.note} for s in quote.statistics]
    write_rows(out, ("statistic", "error_bound (95%)", "assumes_records", "note"), rows, "table")
    return OK


def release_table(releases: Sequence[Release]) -> tuple[list[str], list[dict[str, Any]]]:
    """One row per released value, with every field the API sends for it (``value``, ``error_bound``, and any it
    adds, such as rounded figures with their ``*_exact``): release, listing and level, then the value's fields."""
    columns = ["release", "listing", "level"]
    rows = []
    for release in releases:
        for value in release.raw.get("values") or ():
            columns += [name for name in value if name not in columns]
            rows.append({"release": release.id, "listing": release.listing, "level": release.level, **value})
    if not rows:
        columns = list(FRAME_COLUMNS)
    return columns, rows


def _write_releases(releases: Sequence[Release], fmt: str, out: TextIO) -> None:
    if fmt == "json":
        _dump_json(out, [r.raw for r in releases])
    else:
        write_rows(out, *release_table(releases), fmt)


def cmd_buy(client: Client, args: argparse.Namespace, out: TextIO) -> int:
    # the price paid is at most the price agreed to: --max-price, else the price quoted just now
    max_price = args.max_price if args.max_price is not None else client.quote(args.listing, args.epsilon).price
    purchase = client.buy(
        args.listing, args.epsilon, wait=not args.no_wait, timeout=args.timeout, idempotency_key=args.idempotency_key,
        max_price=max_price,
    )
    _write_purchase(purchase, args.format, out)
    return OK


def _write_purchase(purchase: Purchase, fmt: str, out: TextIO) -> None:
    if fmt == "json":
        _dump_json(out, purchase.raw)
    elif fmt == "csv" and purchase.release is not None:
        _write_releases([purchase.release], "csv", out)
    else:
        write_record(out, {f: getattr(purchase, f) for f in PURCHASE_FIELDS}, fmt)
        if purchase.release is not None and fmt == "table":
            out.write("\n")
            _write_releases([purchase.release], "table", out)


def cmd_purchases(client: Client, args: argparse.Namespace, out: TextIO) -> int:
    purchases = client.purchases()
    if args.format == "json":
        _dump_json(out, [p.raw for p in purchases])
    else:
        rows = [{**{c: getattr(p, c, None) for c in PURCHASE_COLUMNS}, "release": p.release.id if p.release else ""}
                for p in purchases]
        write_rows(out, PURCHASE_COLUMNS, rows, args.format)
    return OK


def cmd_purchase(client: Client, args: argparse.Namespace, out: TextIO) -> int:
    _write_purchase(client.purchase(args.purchase), args.format, out)
    return OK


def cmd_wait(client: Client, args: argparse.Namespace, out: TextIO) -> int:
    # a failure (refunded) or a purchase still in flight at the timeout is raised: exit code 4
    _write_purchase(client.wait(args.purchase, timeout=args.timeout), args.format, out)
    return OK


def cmd_releases(client: Client, args: argparse.Namespace, out: TextIO) -> int:
    _write_releases(client.releases(listing=args.listing, since=args.since), args.format, out)
    return OK


def cmd_release(client: Client, args: argparse.Namespace, out: TextIO) -> int:
    release = client.release(args.release)
    if args.format == "table":
        write_record(out, {f: getattr(release, f) if f != "files" else ", ".join(release.files) for f in RELEASE_FIELDS},
                     "table")
        out.write("\n")
    _write_releases([release], args.format, out)
    return OK


def cmd_download(client: Client, args: argparse.Namespace, out: TextIO) -> int:
    to_file = args.output_file not in (None, "-")
    fmt = args.as_ or (Path(args.output_file).suffix.lstrip(".").lower() if to_file else "") or "csv"
    if fmt not in DOWNLOAD_FORMATS:
        raise ValueError(f"cannot tell the file's format from {args.output_file}: give --as csv, json or parquet")
    if fmt == "parquet" and not to_file:
        raise ValueError("a parquet file is not printed: give -o FILE")
    body = client.download(args.release, what=args.what, fmt=fmt)
    if to_file:
        Path(args.output_file).write_bytes(body)
        sys.stderr.write(f"gradual: wrote {len(body)} bytes to {args.output_file}\n")
    else:
        out.write(body.decode("utf-8"))
    return OK


def cmd_wallet(client: Client, args: argparse.Namespace, out: TextIO) -> int:
    wallet = client.wallet()
    write_record(out, {"balance": wallet.balance, "currency": wallet.currency}, args.format)
    return OK


def cmd_statement(client: Client, args: argparse.Namespace, out: TextIO) -> int:
    rows = [{c: getattr(line, c) for c in STATEMENT_COLUMNS} for line in client.statement()]
    write_rows(out, STATEMENT_COLUMNS, rows, args.format)
    return OK


def cmd_earnings(client: Client, args: argparse.Namespace, out: TextIO) -> int:
    if args.statement:
        rows = [{c: getattr(line, c) for c in STATEMENT_COLUMNS} for line in client.earnings_statement()]
        write_rows(out, STATEMENT_COLUMNS, rows, args.format)
    else:
        earnings = client.earnings()
        write_record(out, {f: getattr(earnings, f) for f in EARNINGS_FIELDS}, args.format)
    return OK


def _write_dataset(dataset: Dataset, fmt: str, out: TextIO, fields_: Sequence[str] = DATASET_FIELDS) -> None:
    if fmt == "json":
        _dump_json(out, dataset.raw)
        return
    write_record(out, {f: getattr(dataset, f, None) for f in fields_}, fmt)
    if fmt == "table" and dataset.columns and fields_ is DATASET_DETAIL:
        out.write("\n")
        names = [c for c in ("name", "type", "missing") if any(c in column for column in dataset.columns)]
        write_rows(out, names, [dict(c) for c in dataset.columns], "table")


def cmd_upload(client: Client, args: argparse.Namespace, out: TextIO) -> int:
    # a large file goes in parts (resumed after a lost connection); --chunked sends any file so
    dataset = client.upload(args.file, budget=args.budget, name=args.name, relation=args.relation, wait=args.wait,
                            timeout=args.timeout, chunked=True if args.chunked else None)
    _write_dataset(dataset, args.format, out)
    return OK


def cmd_datasets(client: Client, args: argparse.Namespace, out: TextIO) -> int:
    datasets = client.datasets()
    if args.format == "json":
        _dump_json(out, [d.raw for d in datasets])
    else:
        write_rows(out, DATASET_COLUMNS, [{c: getattr(d, c) for c in DATASET_COLUMNS} for d in datasets], args.format)
    return OK


def cmd_dataset_show(client: Client, args: argparse.Namespace, out: TextIO) -> int:
    _write_dataset(client.dataset(args.dataset), args.format, out, DATASET_DETAIL)
    return OK


def cmd_dataset_budget(client: Client, args: argparse.Namespace, out: TextIO) -> int:
    delta: Any = ...
    if args.no_delta:
        delta = None
    elif args.delta is not None:
        delta = args.delta
    _write_dataset(client.set_budget(args.dataset, args.budget, reason=args.reason, delta=delta), args.format, out,
                   DATASET_DETAIL)
    return OK


def cmd_dataset_fits(client: Client, args: argparse.Namespace, out: TextIO) -> int:
    found = client.fits(args.dataset, ceiling=args.ceiling, mechanism=args.mechanism, values=args.values)
    write_record(out, found, args.format)
    return OK


def cmd_dataset_remove(client: Client, args: argparse.Namespace, out: TextIO) -> int:
    client.remove_dataset(args.dataset)
    out.write(f"removed {args.dataset}: its listings are closed; its sales and releases stay on record\n")
    return OK


# -- commands that set up, rather than call, the marketplace --------------------------------------------------


def _read_secret(args: argparse.Namespace, prompt: str, *, from_stdin: bool, err: TextIO) -> str:
    """A password or key: the first line of stdin (``--password-stdin``/``--key-stdin``), else asked for on the
    terminal without echo."""
    if from_stdin:
        value = sys.stdin.readline().rstrip("\r\n")
    else:
        if not sys.stdin.isatty():
            raise ValueError(f"no terminal to ask for the {prompt.lower().rstrip(': ')}: pipe it in with "
                             f"--{'password' if 'assword' in prompt else 'key'}-stdin")
        value = getpass.getpass(prompt, stream=err)
    if not value:
        raise ValueError(f"no {prompt.lower().rstrip(': ')} given")
    return value


def _setup_target(args: argparse.Namespace) -> tuple[str, Path, str]:
    path = config_path(args.config)
    profile = profile_name(args.profile)
    url = args.url or os.environ.get(ENV_URL)
    if not url and path.is_file():
        try:
            url = read_config(path, profile).get("url")  # the profile's address, when it is saved again
        except ConfigError:
            url = None
    if not url:
        raise ConfigError("no marketplace address: give --url (it is saved with the key)")
    return url, path, profile


def cmd_login(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    url, path, profile = _setup_target(args)
    username = args.username
    if not username:
        if args.password_stdin or not sys.stdin.isatty():
            raise ValueError("give --username with --password-stdin")
        err.write("Username: ")
        err.flush()
        username = sys.stdin.readline().strip()
    password = _read_secret(args, "Password: ", from_stdin=args.password_stdin, err=err)
    with Client.sign_in(url, username, password) as client:
        key = str(client.key)
        expires = (client.key_details or {}).get("expires_at")
    save_profile(path, profile, url=url, key=key)
    until = f" (it expires {expires})" if expires else ""
    out.write(f"Signed in to {url} as {username}: a new API key{until} is saved in {path}, profile {profile}.\n")
    return OK


def cmd_configure(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    url, path, profile = _setup_target(args)
    key = args.key or _read_secret(args, "API key: ", from_stdin=args.key_stdin, err=err)
    if not args.no_check:
        with Client(url, key) as client:
            client.wallet()  # a key the marketplace does not know is refused here (401), before it is saved
    save_profile(path, profile, url=url, key=key)
    out.write(f"The API key for {url} is saved in {path}, profile {profile}.\n")
    return OK


def cmd_completion(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    out.write(completion_script(parser(), args.shell))
    return OK


# -- the parser ---------------------------------------------------------------------------------------------


def _common(parser: argparse.ArgumentParser, *, top: bool) -> None:
    # given before or after the command; after it only when given (SUPPRESS keeps the earlier value)
    default: Any = None if top else argparse.SUPPRESS
    parser.add_argument("--url", default=default, help="the marketplace's address (else $GRADUAL_URL or the config file)")
    parser.add_argument("--key", default=default, help="your API key (else $GRADUAL_API_KEY or the config file)")
    parser.add_argument("--profile", default=default,
                        help="the config file's profile to use (else $GRADUAL_PROFILE, else default)")
    parser.add_argument("--config", default=default, help="a TOML config file (default ~/.config/gradual/config.toml)")
    parser.add_argument("--output", "--format", dest="format", choices=FORMATS, default="table" if top else argparse.SUPPRESS,
                        help="how to print the answer (default: table)")


SETUP = "setup"  # a handler of (args, out, err) that needs no client


def parser() -> argparse.ArgumentParser:
    main = argparse.ArgumentParser(
        prog="gradual", description="Buy differentially private answers from a Gradual marketplace.",
        epilog="Exit codes: 0 done, 1 refused by the API, 2 usage or settings, 3 unreachable, "
        "4 purchase failed or still in flight.",
    )
    main.add_argument("--version", action="version", version=f"gradual-client {__version__}")
    _common(main, top=True)
    commands = main.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, handler: Any, help: str, *, under: Any = commands, needs_key: bool = True,
                kind: str = "client") -> argparse.ArgumentParser:
        sub = under.add_parser(name, help=help, description=help)
        _common(sub, top=False)
        sub.set_defaults(handler=handler, needs_key=needs_key, kind=kind)
        return sub

    login = command("login", cmd_login, "sign in with your username and password and save a new API key",
                    needs_key=False, kind=SETUP)
    login.add_argument("--username", help="your username (else asked for)")
    login.add_argument("--password-stdin", action="store_true", help="read the password from stdin's first line")
    configure = command("configure", cmd_configure, "save an API key you have (from your account page)",
                        needs_key=False, kind=SETUP)
    configure.add_argument("--key-stdin", action="store_true", help="read the key from stdin's first line")
    configure.add_argument("--no-check", action="store_true", help="save the key without trying it first")

    listings = command("listings", cmd_listings, "the open listings; owners: create, close, reopen", needs_key=False)
    listings.add_argument("--search", help="text in the title or description")
    owned = listings.add_subparsers(dest="action", metavar="ACTION")
    create = command("create", cmd_listing_create, "create a listing from a JSON spec file (owners)", under=owned)
    create.add_argument("--spec", required=True,
                        help="a JSON file: the body of POST /api/v1/listings/ (dataset, title, statistics, ceiling, "
                        "price_per_epsilon or price_curve, ...); with \"microdata\", a microdata listing")
    create.add_argument("--dataset", help="the dataset's id (instead of the spec's)")
    create.add_argument("--wait", action="store_true",
                        help="on a large table the listing is made preparing: wait until it is ready or failed")
    create.add_argument("--timeout", type=float, default=600.0, help="seconds --wait waits (default 600)")
    compare = command("compare", cmd_listing_compare, "each mechanism's error bounds at the ceiling for a spec, and "
                      "the one proposed (owners)", under=owned)
    compare.add_argument("--spec", required=True, help="a JSON file: as for create (dataset, statistics, ceiling)")
    compare.add_argument("--dataset", help="the dataset's id (instead of the spec's)")
    compare.add_argument("--delta", help="the Skellam listing's delta (default 1e-9)")
    quality = command("quality", cmd_listing_quality, "your synthetic-data listing's delivered quality per level "
                      "released: the rows' average two-way TVD from your data (owners)", under=owned)
    quality.add_argument("listing", type=int, help="the listing's id")
    close = command("close", cmd_listing_close, "close your listing (owners)", under=owned)
    close.add_argument("listing", type=int, help="the listing's id")
    close.add_argument("--reason", help="why, shown to its buyers")
    reopen = command("reopen", cmd_listing_reopen, "open your closed listing again (owners)", under=owned)
    reopen.add_argument("listing", type=int, help="the listing's id")

    quote = command("quote", cmd_quote, "the price and accuracy of going up to a level, or of meeting a target",
                    needs_key=False)
    quote.add_argument("listing", type=int, help="the listing's id")
    how = quote.add_mutually_exclusive_group(required=True)
    how.add_argument("--epsilon", help="the level to go up to, e.g. 1.5")
    how.add_argument("--target", action="append",
                     help="a 95%% error bound for every statistic (0.5) or one (mean(age):1); repeatable")
    quote.add_argument("--records", type=int, help="records assumed in a mean's cell over a private count")

    buy = command("buy", cmd_buy, "buy a listing up to a level and wait for the release")
    buy.add_argument("listing", type=int, help="the listing's id")
    buy.add_argument("--epsilon", required=True, help="the level to go up to, e.g. 1.5")
    buy.add_argument("--no-wait", action="store_true", help="answer at once, without waiting for the release")
    buy.add_argument("--timeout", type=float, default=300.0, help="the longest wait for the release, in seconds")
    buy.add_argument("--idempotency-key", help="repeat-safe key (default: a new one); a repeat charges nothing")
    buy.add_argument("--max-price", help="the most to pay, in credits (default: the price quoted just before "
                     "buying); a higher price buys nothing")

    command("purchases", cmd_purchases, "your purchases, newest first")
    purchase = command("purchase", cmd_purchase, "one of your purchases (with its release once released)")
    purchase.add_argument("purchase", help="the purchase's id")
    wait = command("wait", cmd_wait, "wait until a purchase is released (exit code 4 if it failed or is still in flight)")
    wait.add_argument("purchase", help="the purchase's id")
    wait.add_argument("--timeout", type=float, default=300.0, help="the longest wait, in seconds")

    releases = command("releases", cmd_releases, "your releases: one row per released value")
    releases.add_argument("--listing", type=int, help="only the releases of this listing")
    releases.add_argument("--since", help="only releases made at or after this date or time (ISO, UTC unless given)")
    release = command("release", cmd_release, "one release: its level, values and files")
    release.add_argument("release", help="the release's id")
    download = command("download", cmd_download, "a release's file: a microdata release's records, a synthetic-data "
                       "release's rows, or any release's values")
    download.add_argument("release", help="the release's id")
    download.add_argument("-o", "--output-file", help="the file to write (default: print it)")
    download.add_argument("--what", help="records (microdata), rows (synthetic data), values, or another file the "
                          "release offers "
                          "(default: its one file, else values)")
    download.add_argument("--as", dest="as_", choices=DOWNLOAD_FORMATS,
                          help="the file's format (default: from -o's suffix, else csv)")

    command("wallet", cmd_wallet, "your wallet's balance")
    command("statement", cmd_statement, "every movement of your wallet, newest first")
    earnings = command("earnings", cmd_earnings, "owners: earnings not yet paid out, and payouts")
    earnings.add_argument("--statement", action="store_true", help="every movement of your earnings instead")

    datasets = command("datasets", cmd_datasets, "your datasets (owners): list, show, upload, remove")
    kept = datasets.add_subparsers(dest="action", metavar="ACTION")
    command("list", cmd_datasets, "your datasets", under=kept)
    show = command("show", cmd_dataset_show, "one dataset: its status, budget and columns", under=kept)
    show.add_argument("dataset", help="the dataset's id")
    budget = command("budget", cmd_dataset_budget, "change a dataset's budget and, optionally, its delta", under=kept)
    budget.add_argument("dataset", help="the dataset's id")
    budget.add_argument("--budget", required=True, help="the new budget (eps), e.g. 4")
    budget.add_argument("--reason", required=True, help="why, for the dataset's record")
    which = budget.add_mutually_exclusive_group()
    which.add_argument("--delta", help="the dataset's delta, at most 1e-6 (its listings then compose by privacy-loss "
                       "distributions and may use the Skellam path)")
    which.add_argument("--no-delta", action="store_true", help="remove the dataset's delta")
    fits = command("fits", cmd_dataset_fits, "how many more listings of one shape fit a dataset (a what-if)", under=kept)
    fits.add_argument("dataset", help="the dataset's id")
    fits.add_argument("--ceiling", required=True, help="the listing's ceiling, e.g. 0.5")
    fits.add_argument("--mechanism", choices=("lattice", "skellam"), default="lattice")
    fits.add_argument("--values", type=int, help="skellam: how many counts one record moves by one")
    remove = command("remove", cmd_dataset_remove, "remove a dataset: its listings close, what was sold stays on "
                     "record", under=kept)
    remove.add_argument("dataset", help="the dataset's id")
    for upload in (command("upload", cmd_upload, "upload a CSV or Parquet file as a new dataset (owners)"),
                   command("upload", cmd_upload, "upload a CSV or Parquet file as a new dataset", under=kept)):
        upload.add_argument("file", help="the file's path")
        upload.add_argument("--budget", required=True, help="the dataset's privacy budget, e.g. 2")
        upload.add_argument("--name", help="the dataset's name (default: the file's name)")
        upload.add_argument("--relation", choices=("private_size", "public_size"), help="whom releases protect")
        upload.add_argument("--chunked", action="store_true",
                            help="send the file in parts whatever its size (files over 16 MiB always are)")
        upload.add_argument("--wait", action="store_true", help="wait until the dataset is ready or failed")
        upload.add_argument("--timeout", type=float, default=300.0, help="the longest wait, in seconds")

    completion = command("completion", cmd_completion, "print a shell completion script: "
                         "eval \"$(gradual completion bash)\"", needs_key=False, kind=SETUP)
    completion.add_argument("shell", choices=SHELLS)
    return main


def main(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    args = parser().parse_args(argv)
    buffer = io.StringIO()  # nothing half-printed when a later page fails
    try:
        if args.kind == SETUP:
            code = int(args.handler(args, buffer, err))
        else:
            settings = resolve(url=args.url, key=args.key, config=args.config, profile=args.profile,
                               require_key=args.needs_key)
            with Client(settings.url, settings.key) as client:
                code = int(args.handler(client, args, buffer))
    except ConfigError as exc:
        err.write(f"gradual: {exc.message}\n")
        return USAGE
    except (PurchaseFailed, ReleaseTimeout) as exc:
        err.write(f"gradual: {exc.message}\n")
        _write_purchase(exc.purchase, "table", err)
        return NOT_RELEASED
    except NetworkError as exc:
        err.write(f"gradual: {exc.message}\n")
        return UNREACHABLE
    except PriceChangedError as exc:
        err.write(f"gradual: the price changed: {exc.message}\n")
        if exc.quote is not None:
            err.write(f"  going up to epsilon {_text(exc.quote.epsilon)} now costs {_text(exc.quote.price, 'price')} "
                      f"credits; nothing was charged. To buy at that price: gradual buy {args.listing} "
                      f"--epsilon {args.epsilon} --max-price {_text(exc.quote.price, 'price')}\n")
        return REFUSED
    except GradualError as exc:
        err.write(f"gradual: error {exc.status} {exc.code}: {exc.message}\n" if exc.status
                  else f"gradual: {exc.message}\n")
        for name, messages in exc.fields.items():
            err.write(f"  {name}: {' '.join(messages)}\n")
        if exc.retry_after is not None:
            err.write(f"  try again after {exc.retry_after:g} s\n")
        return REFUSED
    except ValueError as exc:
        err.write(f"gradual: {exc}\n")
        return USAGE
    except OSError as exc:
        err.write(f"gradual: {exc.strerror or exc}{': ' + str(exc.filename) if exc.filename else ''}\n")
        return USAGE
    except KeyboardInterrupt:
        err.write("gradual: interrupted\n")
        return 130
    except Exception as exc:  # an answer this version cannot read, an address httpx refuses, ...: said, not a traceback
        if os.environ.get("GRADUAL_DEBUG"):
            raise
        err.write(f"gradual: unexpected error ({type(exc).__name__}): {exc} (GRADUAL_DEBUG=1 shows where)\n")
        return REFUSED
    out.write(buffer.getvalue())
    return code


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
