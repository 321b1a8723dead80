"""The ``gradual`` command line.

    gradual listings [--search TEXT]
    gradual quote LISTING (--epsilon E | --target T [--target T ...]) [--records N]
    gradual buy LISTING --epsilon E [--max-price P] [--no-wait] [--idempotency-key K] [--timeout S]
    gradual releases
    gradual wallet
    gradual statement

Every command takes ``--format table|csv|json`` and ``--url``, ``--key``, ``--config`` (which win over
``GRADUAL_URL``, ``GRADUAL_API_KEY`` and the config file). Exit codes: 0 done; 1 the API refused (its code
and message on stderr); 2 bad usage or missing settings; 3 the marketplace could not be reached;
4 a purchase failed (refunded) or was still in flight when the wait ended.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, is_dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, TextIO

from . import __version__
from .client import Client
from .config import ConfigError, resolve
from .errors import (
    GradualError,
    NetworkError,
    PriceChangedError,
    PurchaseFailed,
    ReleaseTimeout,
)
from .models import FRAME_COLUMNS, Purchase, Release

OK, REFUSED, USAGE, UNREACHABLE, NOT_RELEASED = 0, 1, 2, 3, 4
FORMATS = ("table", "csv", "json")


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def _jsonable(value: Any) -> Any:
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    if is_dataclass(value) and not isinstance(value, type):
        return {k: _jsonable(v) for k, v in asdict(value).items() if k != "raw"}
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def write_rows(out: TextIO, columns: Sequence[str], rows: Sequence[dict[str, Any]], fmt: str) -> None:
    """Rows as an aligned table, CSV (a header, then one line per row) or a JSON list."""
    if fmt == "json":
        json.dump([{c: _jsonable(row.get(c)) for c in columns} for row in rows], out, indent=2, ensure_ascii=False)
        out.write("\n")
        return
    if fmt == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow([_text(row.get(c)) for c in columns])
        return
    cells = [[_text(row.get(c)) for c in columns] for row in rows]
    widths = [max([len(c), *(len(line[i]) for line in cells)]) for i, c in enumerate(columns)]
    out.write("  ".join(c.ljust(w) for c, w in zip(columns, widths)).rstrip() + "\n")
    for line in cells:
        out.write("  ".join(v.ljust(w) for v, w in zip(line, widths)).rstrip() + "\n")
    if not rows:
        out.write("(none)\n")


def write_record(out: TextIO, record: dict[str, Any], fmt: str) -> None:
    """One object: ``name  value`` lines, a CSV of one row, or a JSON object."""
    if fmt == "json":
        json.dump(_jsonable(record), out, indent=2, ensure_ascii=False)
        out.write("\n")
    elif fmt == "csv":
        write_rows(out, list(record), [record], "csv")
    else:
        width = max(len(k) for k in record)
        for name, value in record.items():
            out.write(f"{name.ljust(width)}  {_text(value)}\n")


LISTING_COLUMNS = ("id", "title", "owner", "engine", "ceiling", "price", "your_level", "is_open")
QUOTE_FIELDS = ("listing", "epsilon", "current_level", "cap", "price")
PURCHASE_FIELDS = ("id", "listing", "level_from", "epsilon", "price", "status", "failure_reason")


def cmd_listings(client: Client, args: argparse.Namespace, out: TextIO) -> int:
    rows = [
        {**{c: getattr(listing, c, None) for c in LISTING_COLUMNS}, "price": listing.price_curve.get("formula", "")}
        for listing in client.listings(search=args.search)
    ]
    write_rows(out, LISTING_COLUMNS, rows, args.format)
    return OK


def cmd_quote(client: Client, args: argparse.Namespace, out: TextIO) -> int:
    quote = client.quote(args.listing, args.epsilon, target=args.target, records=args.records)
    if args.format == "json":
        json.dump(quote.raw, out, indent=2, ensure_ascii=False)
        out.write("\n")
        return OK
    if args.format == "csv":
        rows = [{**{f: getattr(quote, f) for f in QUOTE_FIELDS}, "statistic": s.name, "error_bound": s.error_bound,
                 "assumes_records": s.assumes_records, "note": s.note} for s in quote.statistics]
        write_rows(out, (*QUOTE_FIELDS, "statistic", "error_bound", "assumes_records", "note"), rows, "csv")
        return OK
    bound = {"cap_bound": quote.cap_bound} if quote.cap_bound else {}
    write_record(out, {f: getattr(quote, f) for f in QUOTE_FIELDS} | {"cap_reason": quote.cap_reason} | bound, "table")
    out.write("\n")
    rows = [{"statistic": s.name, "error_bound (95%)": s.note if s.too_few else s.error_bound,
             "assumes_records": s.assumes_records, "note": "" if s.too_few else s.note} for s in quote.statistics]
    write_rows(out, ("statistic", "error_bound (95%)", "assumes_records", "note"), rows, "table")
    return OK


def _release_rows(releases: Sequence[Release]) -> list[dict[str, Any]]:
    return [row for release in releases for row in release.rows()]


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
        json.dump(purchase.raw, out, indent=2, ensure_ascii=False)
        out.write("\n")
    elif fmt == "csv" and purchase.release is not None:
        write_rows(out, FRAME_COLUMNS, _release_rows([purchase.release]), "csv")
    else:
        write_record(out, {f: getattr(purchase, f) for f in PURCHASE_FIELDS}, fmt)
        if purchase.release is not None and fmt == "table":
            out.write("\n")
            write_rows(out, FRAME_COLUMNS, _release_rows([purchase.release]), "table")


def cmd_releases(client: Client, args: argparse.Namespace, out: TextIO) -> int:
    releases = client.releases()
    if args.format == "json":
        json.dump([r.raw for r in releases], out, indent=2, ensure_ascii=False)
        out.write("\n")
    else:
        write_rows(out, FRAME_COLUMNS, _release_rows(releases), args.format)
    return OK


def cmd_wallet(client: Client, args: argparse.Namespace, out: TextIO) -> int:
    wallet = client.wallet()
    write_record(out, {"balance": wallet.balance, "currency": wallet.currency}, args.format)
    return OK


STATEMENT_COLUMNS = ("at", "description", "amount", "balance_after", "transfer")


def cmd_statement(client: Client, args: argparse.Namespace, out: TextIO) -> int:
    rows = [{c: getattr(line, c) for c in STATEMENT_COLUMNS} for line in client.statement()]
    write_rows(out, STATEMENT_COLUMNS, rows, args.format)
    return OK


DATASET_FIELDS = ("id", "name", "status", "row_count", "failure")


def cmd_upload(client: Client, args: argparse.Namespace, out: TextIO) -> int:
    # a large file goes in parts (resumed after a lost connection); --chunked sends any file so
    dataset = client.upload(args.file, budget=args.budget, name=args.name, relation=args.relation, wait=args.wait,
                            timeout=args.timeout, chunked=True if args.chunked else None)
    if args.format == "json":
        json.dump(dataset.raw, out, indent=2, ensure_ascii=False)
        out.write("\n")
    else:
        write_record(out, {f: getattr(dataset, f, None) for f in DATASET_FIELDS}, args.format)
    return OK


def _common(parser: argparse.ArgumentParser, *, top: bool) -> None:
    # given before or after the command; after it only when given (SUPPRESS keeps the earlier value)
    default: Any = None if top else argparse.SUPPRESS
    parser.add_argument("--url", default=default, help="the marketplace's address (else $GRADUAL_URL or the config file)")
    parser.add_argument("--key", default=default, help="your API key (else $GRADUAL_API_KEY or the config file)")
    parser.add_argument("--config", default=default, help="a TOML config file (default ~/.config/gradual/config.toml)")
    parser.add_argument("--format", choices=FORMATS, default="table" if top else argparse.SUPPRESS,
                        help="how to print the answer (default: table)")


def parser() -> argparse.ArgumentParser:
    main = argparse.ArgumentParser(
        prog="gradual", description="Buy differentially private answers from a Gradual marketplace.",
        epilog="Exit codes: 0 done, 1 refused by the API, 2 usage or settings, 3 unreachable, "
        "4 purchase failed or still in flight.",
    )
    main.add_argument("--version", action="version", version=f"gradual-client {__version__}")
    _common(main, top=True)
    commands = main.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, handler: Any, help: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help, description=help)
        _common(sub, top=False)
        sub.set_defaults(handler=handler, needs_key=name not in ("listings", "quote"))
        return sub

    listings = command("listings", cmd_listings, "the open listings")
    listings.add_argument("--search", help="text in the title or description")

    quote = command("quote", cmd_quote, "the price and accuracy of going up to a level, or of meeting a target")
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

    upload = command("upload", cmd_upload, "upload a CSV or Parquet file as a new dataset (owners)")
    upload.add_argument("file", help="the file's path")
    upload.add_argument("--budget", required=True, help="the dataset's privacy budget, e.g. 2")
    upload.add_argument("--name", help="the dataset's name (default: the file's name)")
    upload.add_argument("--relation", choices=("private_size", "public_size"), help="whom releases protect")
    upload.add_argument("--chunked", action="store_true",
                        help="send the file in parts whatever its size (files over 16 MiB always are)")
    upload.add_argument("--wait", action="store_true", help="wait until the dataset is ready or failed")
    upload.add_argument("--timeout", type=float, default=300.0, help="the longest wait, in seconds")

    command("releases", cmd_releases, "your releases: one row per released value")
    command("wallet", cmd_wallet, "your wallet's balance")
    command("statement", cmd_statement, "every movement of your wallet, newest first")
    return main


def main(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    args = parser().parse_args(argv)
    try:
        settings = resolve(url=args.url, key=args.key, config=args.config, require_key=args.needs_key)
    except ConfigError as exc:
        err.write(f"gradual: {exc.message}\n")
        return USAGE
    buffer = io.StringIO()  # nothing half-printed when a later page fails
    try:
        with Client(settings.url, settings.key) as client:
            code = int(args.handler(client, args, buffer))
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
            err.write(f"  going up to epsilon {_text(exc.quote.epsilon)} now costs {_text(exc.quote.price)} credits; "
                      f"nothing was charged. To buy at that price: gradual buy {args.listing} "
                      f"--epsilon {args.epsilon} --max-price {_text(exc.quote.price)}\n")
        return REFUSED
    except GradualError as exc:
        err.write(f"gradual: error {exc.status} {exc.code}: {exc.message}\n")
        for name, messages in exc.fields.items():
            err.write(f"  {name}: {' '.join(messages)}\n")
        if exc.retry_after is not None:
            err.write(f"  try again after {exc.retry_after:g} s\n")
        return REFUSED
    except ValueError as exc:
        err.write(f"gradual: {exc}\n")
        return USAGE
    out.write(buffer.getvalue())
    return code


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
