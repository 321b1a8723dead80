"""The client: one object per marketplace and API key, methods for what a buyer (and an owner) does."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from decimal import Decimal, InvalidOperation
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urljoin

import httpx

from . import __version__
from .config import resolve
from .errors import (
    ConflictError,
    GradualError,
    NetworkError,
    PurchaseFailed,
    RateLimitError,
    ReleaseTimeout,
    ServerError,
    error_from_response,
)
from .models import (
    Dataset,
    Earnings,
    Listing,
    Purchase,
    Quote,
    Release,
    StatementLine,
    Wallet,
    releases_to_frame,
)

Number = Decimal | int | float | str
#: a listing as an argument: its id, or the Listing itself
ListingRef = int | Listing
#: an accuracy target: a bound for every statistic (0.5), {statistic name: bound}, or the API's own
#: strings ("0.5", "mean(age):1"), several of them in a list
Target = Number | Mapping[str, Number] | Sequence[str | tuple[str, Number]]

#: the API's longest ``Prefer: wait`` (seconds)
MAX_PREFER_WAIT = 30
#: files larger than this are uploaded in parts (``uploads/``), each a short request, resumed after a failure
CHUNKED_THRESHOLD = 16 * 1024 * 1024


def decimal_text(value: Number) -> str:
    """A number as the API's decimal text, exactly: 1.5 -> "1.5", Decimal("2.50") -> "2.50", never "1E+1"."""
    if isinstance(value, bool):
        raise TypeError("a number was expected, not a bool")
    try:
        number = value if isinstance(value, Decimal) else Decimal(str(value).strip())
    except InvalidOperation:
        raise ValueError(f"not a number: {value!r}") from None
    if not number.is_finite():
        raise ValueError(f"not a finite number: {value!r}")
    return format(number, "f")


def _listing_id(listing: ListingRef) -> int:
    if isinstance(listing, Listing):
        return listing.id
    if isinstance(listing, bool) or not isinstance(listing, int):
        try:
            return int(str(listing))
        except ValueError:
            raise ValueError(f"a listing is its id (a whole number) or a Listing, not {listing!r}") from None
    return listing


def _targets(target: Target) -> list[str]:
    if isinstance(target, bool):
        raise TypeError("a target is a bound, {statistic: bound} or the API's strings, not a bool")
    if isinstance(target, Mapping):
        return [f"{name}:{decimal_text(bound)}" for name, bound in target.items()]
    if isinstance(target, (Decimal, int, float)):
        return [decimal_text(target)]
    if isinstance(target, str):
        return [target]
    out: list[str] = []
    for item in target:
        if isinstance(item, tuple):
            name, bound = item
            out.append(f"{name}:{decimal_text(bound)}")
        else:
            out.append(str(item))
    return out



#: the fields in which a statistic declares categories (buyers see them)
DECLARED_CATEGORIES = ("categories", "row_categories", "column_categories")


def _confirmed(statistic: Mapping[str, Any]) -> dict[str, Any]:
    """The statistic, with ``categories_public: true`` when it declares categories."""
    out = dict(statistic)
    if any(key in out for key in DECLARED_CATEGORIES):
        out["categories_public"] = True
    return out


def _seconds(retry_after: str | None, default: float = 1.0) -> float:
    """A ``Retry-After`` in seconds (the API sends a number); ``default`` without one."""
    try:
        return max(0.0, float(retry_after)) if retry_after else default
    except ValueError:
        return default

class Client:
    """A client of one Gradual marketplace.

    >>> client = Client("https://gradual.example.org", "gradual_...")
    >>> listing = client.listings(search="clinic")[0]
    >>> client.quote(listing, epsilon=1).price
    >>> purchase = client.buy(listing, epsilon=1)          # waits for the release
    >>> purchase.release.to_frame()                          # with pandas

    ``url`` is the site's address (``/api/v1/`` is added). ``key`` is an API key (``gradual_...``); without
    one only public reads work. Requests that are safe to repeat (reads, and purchases, which carry an
    idempotency key) are tried again on a lost connection, ``429`` and ``409 busy``, at most ``retries``
    times, after the ``Retry-After`` the API gives (at most ``max_retry_wait`` seconds).
    """

    def __init__(
        self,
        url: str,
        key: str | None = None,
        *,
        timeout: float = 60.0,
        retries: int = 2,
        max_retry_wait: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        base = url.rstrip("/")
        for suffix in ("/api/v1", "/api"):
            if base.endswith(suffix):
                base = base[: -len(suffix)]
                break
        self.url = base
        self.api = f"{base}/api/v1/"
        self.key = key
        self.timeout = timeout
        self.retries = retries
        self.max_retry_wait = max_retry_wait
        #: after :meth:`sign_in`, the new key's details as the API gave them (name, prefix, expires_at, ...)
        self.key_details: Mapping[str, Any] | None = None
        headers = {"Accept": "application/json", "User-Agent": f"gradual-client/{__version__}"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        self._http = httpx.Client(headers=headers, timeout=timeout, transport=transport, follow_redirects=False)

    # -- making one ----------------------------------------------------------------------------------

    @classmethod
    def from_env(
        cls, *, url: str | None = None, key: str | None = None, config: str | os.PathLike[str] | None = None,
        **options: Any,
    ) -> Client:
        """A client from ``GRADUAL_URL`` and ``GRADUAL_API_KEY``, or the config file (see :mod:`gradual_client.config`);
        ``url`` and ``key`` given here win."""
        settings = resolve(url=url, key=key, config=config)
        return cls(settings.url, settings.key, **options)

    @classmethod
    def sign_in(cls, url: str, username: str, password: str, **options: Any) -> Client:
        """A client with a new API key made from a username and password (``POST auth/token/``; the key expires
        as the marketplace says). The key is ``client.key``: keep it to avoid making a new one each time."""
        with cls(url, None, **options) as anonymous:
            answer = anonymous._request("POST", "auth/token/", json={"username": username, "password": password})
        body = answer.json()
        client = cls(url, str(body["token"]), **options)
        client.key_details = body.get("key") if isinstance(body.get("key"), dict) else None
        return client

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Client({self.url!r}, key={'…' + self.key[-4:] if self.key else None})"

    # -- HTTP ----------------------------------------------------------------------------------------

    def _url(self, path: str) -> str:
        if path.startswith(("http://", "https://")):
            return path
        if path.startswith("/"):
            return urljoin(self.url + "/", path)
        return self.api + path

    def _request(
        self,
        method: str,
        path: str,
        *,
        params: Any = None,
        json: Any = None,
        content: bytes | None = None,
        data: Mapping[str, str] | None = None,
        files: Any = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
        repeatable: bool | None = None,
    ) -> httpx.Response:
        """One call, its error answer raised as the exception for its status. ``repeatable`` (default: GET)
        says the call may be sent again on a lost connection, 429 or 409 busy."""
        repeatable = method == "GET" if repeatable is None else repeatable
        attempt = 0
        while True:
            try:
                response = self._http.request(
                    method, self._url(path), params=params, json=json, content=content, data=data, files=files,
                    headers=headers,
                    timeout=self.timeout if timeout is None else timeout,
                )
            except httpx.TransportError as exc:
                if repeatable and attempt < self.retries and files is None:
                    attempt += 1
                    time.sleep(min(self.max_retry_wait, 0.5 * 2**attempt))
                    continue
                raise NetworkError(f"could not reach {self.url}: {exc}", code="network") from exc
            if response.is_success:
                return response
            error = error_from_response(response)
            again = isinstance(error, RateLimitError) or (isinstance(error, ConflictError) and error.code == "busy")
            if again and repeatable and attempt < self.retries and files is None:
                attempt += 1
                time.sleep(min(self.max_retry_wait, error.retry_after if error.retry_after is not None else 1.0))
                continue
            raise error

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self._request(method, path, **kwargs)
        if response.status_code == 204 or not response.content:
            return None
        try:
            return response.json()
        except ValueError as exc:
            raise GradualError(f"the answer of {method} {path} is not JSON", status=response.status_code,
                               code="bad_answer") from exc

    def pages(self, path: str, params: Any = None) -> Iterator[Mapping[str, Any]]:
        """Every item of a list, page after page, following each answer's ``next`` link."""
        url: str | None = path
        while url:
            page = self._json("GET", url, params=params)
            params = None  # the next link carries the query
            if isinstance(page, list):  # a list answered without pagination
                yield from page
                return
            yield from page.get("results") or ()
            url = page.get("next")

    # -- buyers --------------------------------------------------------------------------------------

    def listings(self, search: str | None = None) -> list[Listing]:
        """Every open listing (all pages), optionally those whose title or description has ``search``."""
        params = {"search": search} if search else None
        return [Listing.from_json(item) for item in self.pages("listings/", params)]

    def listing(self, listing: ListingRef) -> Listing:
        return Listing.from_json(self._json("GET", f"listings/{_listing_id(listing)}/"))

    def quote(
        self,
        listing: ListingRef,
        epsilon: Number | None = None,
        *,
        target: Target | None = None,
        records: int | None = None,
    ) -> Quote:
        """What going up to ``epsilon`` costs you now, with its accuracy; or, with ``target`` instead, the cheapest
        level meeting your 95% error bounds: ``target=0.5`` (every statistic), ``target={"mean(age)": 1}``,
        or the API's strings ``["mean(age):1", "count:20"]``. ``records``: the cell size assumed for means over a
        private count (default 1000)."""
        if (epsilon is None) == (target is None):
            raise ValueError("give either epsilon or target")
        params: list[tuple[str, str]] = []
        if epsilon is not None:
            params.append(("epsilon", decimal_text(epsilon)))
        else:
            assert target is not None
            params += [("target", t) for t in _targets(target)]
        if records is not None:
            params.append(("records", str(int(records))))
        return Quote.from_json(self._json("GET", f"listings/{_listing_id(listing)}/quote/", params=params))

    def buy(
        self,
        listing: ListingRef,
        epsilon: Number,
        *,
        wait: bool = True,
        timeout: float = 300.0,
        idempotency_key: str | None = None,
        max_price: Number | None = None,
    ) -> Purchase:
        """Buy ``listing`` up to level ``epsilon``. Sent with an idempotency key (a new one each call, or yours:
        a repeat of a key answers the first purchase and charges nothing). With ``wait`` the call returns once
        the release is made (``purchase.release``), waiting on the server (``Prefer: wait``) for at most
        ``timeout`` seconds: :class:`ReleaseTimeout` if it is still in flight then, :class:`PurchaseFailed` if
        it failed (refunded).

        ``max_price``: the most you agree to pay, in credits (the price of your quote, ``quote.price``). If the
        step costs more when it is bought, nothing is charged and :class:`PriceChangedError` carries the new
        quote; a lower price is charged as it is. Without it the price of the moment is paid."""
        key = idempotency_key or f"gradual-client-{uuid.uuid4()}"
        body = {"listing": _listing_id(listing), "epsilon": decimal_text(epsilon)}
        if max_price is not None:
            body["max_price"] = decimal_text(max_price)
        headers = {"Idempotency-Key": key}
        started = time.monotonic()
        seconds = 0
        if wait:
            seconds = max(1, min(MAX_PREFER_WAIT, math.ceil(timeout)))
            headers["Prefer"] = f"wait={seconds}"
        answer = self._json(
            "POST", "purchases/", json=body, headers=headers, timeout=self.timeout + seconds, repeatable=True,
        )
        purchase = Purchase.from_json(answer)
        if not wait:
            return purchase
        return self.wait(purchase, timeout=max(0.0, timeout - (time.monotonic() - started)))

    def wait(self, purchase: Purchase | str, *, timeout: float = 300.0) -> Purchase:
        """The purchase once released; :class:`PurchaseFailed` if it failed, :class:`ReleaseTimeout` if it is still
        in flight after ``timeout`` seconds. The server holds each request until the release (``Prefer: wait``)."""
        deadline = time.monotonic() + timeout
        current = purchase if isinstance(purchase, Purchase) else self.purchase(purchase)
        while current.pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ReleaseTimeout(current, timeout)
            seconds = max(1, min(MAX_PREFER_WAIT, math.ceil(remaining)))
            response = self._request(
                "GET", f"purchases/{current.id}/", headers={"Prefer": f"wait={seconds}"}, timeout=self.timeout + seconds,
            )
            current = Purchase.from_json(response.json())
            if current.pending and "wait" not in response.headers.get("Preference-Applied", ""):
                # the server did not hold the answer (too many waits open): ask again at its pace, not at once
                time.sleep(min(_seconds(response.headers.get("Retry-After")), max(0.0, deadline - time.monotonic())))
        if current.failed:
            raise PurchaseFailed(current)
        return current

    def purchases(self) -> list[Purchase]:
        return [Purchase.from_json(item) for item in self.pages("purchases/")]

    def purchase(self, purchase_id: str) -> Purchase:
        return Purchase.from_json(self._json("GET", f"purchases/{purchase_id}/"))

    def releases(self, *, listing: ListingRef | None = None, since: datetime | str | None = None) -> list[Release]:
        """Your releases, newest first; only those of ``listing``, and those made at or after ``since`` (a datetime
        or ISO text: ``"2026-11-01"``; a date or time without a zone is UTC), if given. The API filters
        (``?listing=&since=``); they are applied here again, for a server that predates them."""
        listing_id = None if listing is None else _listing_id(listing)
        after = None if since is None else _moment(since)
        params = {name: value for name, value in (("listing", listing_id), ("since", after and after.isoformat()))
                  if value is not None}
        return [
            release for release in (Release.from_json(item) for item in self.pages("releases/", params or None))
            if (listing_id is None or release.listing == listing_id)
            and (after is None or (release.created_at is not None and release.created_at >= after))
        ]

    def release(self, release_id: str) -> Release:
        return Release.from_json(self._json("GET", f"releases/{release_id}/"))

    def download(self, release: Release | str, what: str | None = None, fmt: str = "csv") -> bytes:
        """A file of a release: ``what`` is one of ``release.files`` (``"records"`` of a microdata release,
        ``"rows"`` of a synthetic-data release, as ``csv`` or ``parquet``), or ``"values"`` (its released values as ``csv`` or ``json``: every release has
        them). By default the release's only file if it offers one, else its values."""
        current = release if isinstance(release, Release) else self.release(release)
        files = current.files
        what = what or (next(iter(files)) if len(files) == 1 else "values")
        if what == "values":
            return values_file(current, fmt)
        if what not in files:
            offered = ", ".join(["values", *files])
            raise ValueError(f"release {current.id} has no {what} to download (it has: {offered})")
        if fmt not in files[what]:
            raise ValueError(f"the {what} of release {current.id} come as {', '.join(files[what])}, not {fmt}")
        return self._request("GET", files[what][fmt], timeout=max(self.timeout, 600.0)).content

    def releases_frame(self, releases: Iterable[Release] | None = None) -> Any:
        """All your releases (or those given) as one pandas DataFrame, one row per released value: release,
        listing, level, label, kind, value, error_bound, noise_scale. Needs pandas."""
        return releases_to_frame(self.releases() if releases is None else releases)

    def wallet(self) -> Wallet:
        return Wallet.from_json(self._json("GET", "wallet/"))

    def statement(self) -> list[StatementLine]:
        """Every movement of your wallet, newest first, with the balance after each."""
        return [StatementLine.from_json(item) for item in self.pages("wallet/statement/")]

    def earnings(self) -> Earnings:
        """Owners: your earnings not yet paid out, and your payouts' totals."""
        return Earnings.from_json(self._json("GET", "earnings/"))

    def earnings_statement(self) -> list[StatementLine]:
        """Owners: every movement of your earnings (sales, refunds, payouts), newest first."""
        return [StatementLine.from_json(item) for item in self.pages("earnings/statement/")]

    def top_up(self, amount: Number) -> Wallet:
        """Demo marketplaces only: add credits to your own wallet."""
        return Wallet.from_json(self._json("POST", "wallet/top-up/", json={"amount": decimal_text(amount)}))

    # -- owners --------------------------------------------------------------------------------------

    def upload(
        self,
        path: str | os.PathLike[str],
        *,
        budget: Number,
        name: str | None = None,
        relation: str | None = None,
        description: str | None = None,
        source: str | None = None,
        licence: str | None = None,
        record_name: str | None = None,
        record_name_plural: str | None = None,
        wait: bool = False,
        timeout: float = 300.0,
        chunked: bool | None = None,
    ) -> Dataset:
        """Upload a CSV or Parquet file as a new dataset with a privacy ``budget``; it is read in the background
        (``status`` processing). With ``wait``, returns once it is ready or failed (see :meth:`wait_dataset`).
        A file larger than ``CHUNKED_THRESHOLD`` (or any, with ``chunked=True``) is sent in parts
        (:meth:`upload_parts`), resumed after a lost connection; otherwise in one request."""
        file = Path(path)
        fields = {
            "name": name or file.stem, "budget": decimal_text(budget), "relation": relation,
            "description": description, "source": source, "licence": licence,
            "record_name": record_name, "record_name_plural": record_name_plural,
        }
        data = {k: v for k, v in fields.items() if v is not None}
        if chunked or (chunked is None and file.stat().st_size > CHUNKED_THRESHOLD):
            answer = self._json("POST", f"uploads/{self.upload_parts(file)}/dataset/", json=data)
        else:
            with file.open("rb") as handle:
                answer = self._json("POST", "datasets/", data=data, files={"file": (file.name, handle)},
                                    timeout=max(self.timeout, 600.0))
        dataset = Dataset.from_json(answer)
        return self.wait_dataset(dataset, timeout=timeout) if wait else dataset

    upload_dataset = upload

    def upload_parts(self, path: str | os.PathLike[str], *, upload_id: str | None = None, resumes: int = 5) -> str:
        """Send a file as a resumable upload (``POST uploads/``, then ``PUT`` its parts in order) and return the
        upload's id, for ``POST datasets/``. ``upload_id`` resumes an earlier one from where the server says
        it stands. A lost connection, a server error or a ``409 offset_mismatch`` resumes from the byte the
        server has (at most ``resumes`` times in all); other errors are raised."""
        file = Path(path)
        size = file.stat().st_size
        if upload_id is None:
            state = self._json("POST", "uploads/", json={"size": size, "filename": file.name})
        else:
            state = self._json("GET", f"uploads/{upload_id}/")
        upload_id, part, received = str(state["id"]), int(state["part_max_bytes"]), int(state["received"])
        failures = 0
        with file.open("rb") as handle:
            while received < size:
                handle.seek(received)
                chunk = handle.read(min(part, size - received))
                place = f"bytes {received}-{received + len(chunk) - 1}/{size}"
                try:
                    state = self._json("PUT", f"uploads/{upload_id}/", content=chunk, repeatable=False, headers={
                        "Content-Type": "application/octet-stream", "Content-Range": place})
                    received = int(state["received"])
                except (NetworkError, ServerError, RateLimitError, ConflictError) as error:
                    if failures >= resumes or (isinstance(error, ConflictError) and error.code not in (
                            "offset_mismatch", "busy")):
                        raise
                    failures += 1
                    time.sleep(min(self.max_retry_wait, error.retry_after or 0.5 * 2**failures))
                    detail = (error.body or {}).get("error") if isinstance(error.body, dict) else None
                    if isinstance(detail, dict) and isinstance(detail.get("received"), int):
                        received = detail["received"]  # offset_mismatch: where the server stands
                    else:
                        received = int(self._json("GET", f"uploads/{upload_id}/")["received"])
        return upload_id

    def datasets(self) -> list[Dataset]:
        return [Dataset.from_json(item) for item in self.pages("datasets/")]

    def dataset(self, dataset_id: str) -> Dataset:
        return Dataset.from_json(self._json("GET", f"datasets/{dataset_id}/"))

    def remove_dataset(self, dataset_id: str) -> None:
        """Owners: remove a dataset. Its open listings close (buyers are told why) and it leaves your
        datasets; what was spent and released on it stays on record. Removing it again changes nothing."""
        self._json("DELETE", f"datasets/{dataset_id}/")

    def wait_dataset(self, dataset: Dataset | str, *, timeout: float = 300.0, every: float = 0.5) -> Dataset:
        """The dataset once it is no longer processing (ready, or failed with ``failure``); :class:`GradualError`
        with code ``timeout`` if it is still processing after ``timeout`` seconds."""
        current = dataset if isinstance(dataset, Dataset) else self.dataset(dataset)
        return _until_not(current, "processing", self.dataset, what="dataset", timeout=timeout, every=every)

    def confirm_columns(
        self, dataset: Dataset | str, columns: Mapping[str, str] | Sequence[Mapping[str, str]]
    ) -> Dataset:
        """Confirm or change column types and missing-value policies: ``{"age": "integer"}`` or
        ``[{"name": "age", "type": "integer", "missing": "exclude"}]`` (``ignored`` drops a column)."""
        dataset_id = dataset.id if isinstance(dataset, Dataset) else dataset
        if isinstance(columns, Mapping):
            body = [{"name": name, "type": kind} for name, kind in columns.items()]
        else:
            body = [dict(column) for column in columns]
        return Dataset.from_json(self._json("PATCH", f"datasets/{dataset_id}/", json={"columns": body}))

    def create_listing(
        self,
        dataset: Dataset | str,
        *,
        title: str,
        statistics: Sequence[Mapping[str, Any]],
        ceiling: Number,
        price_per_epsilon: Number | None = None,
        price_curve: Mapping[str, Any] | None = None,
        compensation: Mapping[str, Any] | None = None,
        description: str | None = None,
        categories_public: bool = False,
        mechanism: str | None = None,
        delta: Number | str | None = None,
    ) -> Listing:
        """List statistics of your dataset up to ``ceiling``, priced ``price_per_epsilon`` (linear) or by a
        ``price_curve`` (``{"kind": "power", "c": "10.00", "p": "1.5"}``, ...).

        Buyers see the categories a statistic declares (``categories``, ``row_categories``,
        ``column_categories``), and which values occur in your data is itself private, so the server
        refuses them unless each such statistic carries ``"categories_public": true``. Put it in the
        statistic yourself, or pass ``categories_public=True`` to confirm every declared list at once
        (only lists of values anyone may know).

        ``mechanism``: ``"lattice"`` (default) or ``"skellam"`` (Gaussian-like integer noise, ``(eps, delta)``-DP with
        ``delta``, default 1e-9; only on a dataset with a delta); :meth:`compare_mechanisms` says which is more accurate."""
        body: dict[str, Any] = {
            "dataset": dataset.id if isinstance(dataset, Dataset) else dataset,
            "title": title,
            "statistics": [_confirmed(s) if categories_public else dict(s) for s in statistics],
            "ceiling": decimal_text(ceiling),
        }
        if price_per_epsilon is not None:
            body["price_per_epsilon"] = decimal_text(price_per_epsilon)
        if price_curve is not None:
            body["price_curve"] = dict(price_curve)
        if compensation is not None:
            body["compensation"] = dict(compensation)
        if description is not None:
            body["description"] = description
        if mechanism is not None:
            body["mechanism"] = mechanism
        if delta is not None:
            body["delta"] = str(delta)
        return Listing.from_json(self._json("POST", "listings/", json=body))

    def wait_listing(self, listing: ListingRef, *, timeout: float = 600.0, every: float = 1.0) -> Listing:
        """Owners: your listing once it is no longer preparing (a listing over a large table, or computed by
        Spark, is made ``preparing`` while a worker computes its answer): ready, or failed with ``failure``;
        :class:`GradualError` with code ``timeout`` if it is still preparing after ``timeout`` seconds."""
        current = listing if isinstance(listing, Listing) else self.listing(listing)
        return _until_not(current, "preparing", self.listing, what="listing", timeout=timeout, every=every)

    def compare_mechanisms(self, dataset: Dataset | str, *, statistics: Sequence[Mapping[str, Any]], ceiling: Number,
                           delta: Number | str | None = None) -> dict[str, Any]:
        """Before listing: each mechanism's 95% error bounds at ``ceiling`` for ``statistics`` on your dataset, and
        the one proposed (``{"proposed", "ratio", "mechanisms": [{"mechanism", "available", "reason", "values"}]}``)."""
        body: dict[str, Any] = {"dataset": dataset.id if isinstance(dataset, Dataset) else dataset,
                                "statistics": [dict(s) for s in statistics], "ceiling": decimal_text(ceiling)}
        if delta is not None:
            body["delta"] = str(delta)
        return self._json("POST", "listings/compare/", json=body)

    def set_budget(self, dataset: Dataset | str, budget: Number, *, reason: str, delta: Any = ...) -> Dataset:
        """Change your dataset's budget, and its delta (left out: as it is; None: none; at most 1e-6)."""
        dataset_id = dataset.id if isinstance(dataset, Dataset) else dataset
        body: dict[str, Any] = {"budget": decimal_text(budget), "reason": reason}
        if delta is not ...:
            body["delta"] = None if delta is None else str(delta)
        return Dataset.from_json(self._json("POST", f"datasets/{dataset_id}/budget/", json=body))

    def quality(self, listing_id: int) -> list[dict[str, Any]]:
        """Owners: your synthetic-data listing's delivered quality, one ``{"level", "rows", "tvd"}`` per level
        released (the rows' average two-way total-variation distance from your data)."""
        return self._json("GET", f"listings/{int(listing_id)}/quality/")["levels"]

    def fits(self, dataset: Dataset | str, *, ceiling: Number, mechanism: str = "lattice",
             values: int | None = None) -> dict[str, Any]:
        """How many more listings of one shape fit your dataset beside its listings (a what-if)."""
        dataset_id = dataset.id if isinstance(dataset, Dataset) else dataset
        params: dict[str, Any] = {"ceiling": decimal_text(ceiling), "mechanism": mechanism}
        if values is not None:
            params["values"] = values
        return self._json("GET", f"datasets/{dataset_id}/fits/", params=params)

    def create_listing_from_spec(self, spec: Mapping[str, Any]) -> Listing:
        """A listing from the API's own request body (``POST listings/``: dataset, title, statistics, ceiling,
        price_per_epsilon or price_curve, ...), e.g. read from a JSON file; a body with ``microdata`` (a
        microdata listing) goes to ``POST listings/microdata/``."""
        if not isinstance(spec, Mapping):
            raise ValueError("a listing's spec is a JSON object (dataset, title, statistics, ceiling, ...)")
        path = "listings/microdata/" if "microdata" in spec else "listings/"
        return Listing.from_json(self._json("POST", path, json=dict(spec)))

    def close_listing(self, listing: ListingRef, *, reason: str | None = None) -> Listing:
        """Owners: close your listing (nothing more is sold; its buyers keep their releases and see ``reason``)."""
        body = {} if reason is None else {"reason": reason}
        return Listing.from_json(self._json("POST", f"listings/{_listing_id(listing)}/close/", json=body))

    def reopen_listing(self, listing: ListingRef) -> Listing:
        """Owners: open your closed listing again (409 if it could not be created today)."""
        return Listing.from_json(self._json("POST", f"listings/{_listing_id(listing)}/reopen/"))


def _until_not(current, status: str, fetch, *, what: str, timeout: float, every: float):
    """``current`` fetched again every ``every`` s until its status is no longer ``status``;
    :class:`GradualError` with code ``timeout`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while current.status == status:
        if time.monotonic() >= deadline:
            raise GradualError(f"{what} {current.id} was still {status} after {timeout:g} s", code="timeout")
        time.sleep(every)
        current = fetch(current.id)
    return current


def _moment(value: datetime | str) -> datetime:
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"not a date or time: {value!r} (e.g. 2026-11-01 or 2026-11-01T12:00:00+00:00)") from None
    return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)


def values_file(release: Release, fmt: str = "csv") -> bytes:
    """A release's released values as a file: ``csv`` (one row per value, the API's fields as columns) or
    ``json`` (the API's ``values`` list, as sent)."""
    values = list(release.raw.get("values") or ())
    if fmt == "json":
        return (json.dumps(values, indent=2, ensure_ascii=False) + "\n").encode()
    if fmt != "csv":
        raise ValueError(f"a release's values come as csv or json, not {fmt}")
    columns = ["release", "listing", "level"]
    for value in values:
        columns += [name for name in value if name not in columns]
    text = io.StringIO()
    writer = csv.DictWriter(text, columns, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    for value in values:
        writer.writerow({"release": release.id, "listing": release.listing, "level": format(release.level.normalize(), "f"),
                         **{k: "" if v is None else (json.dumps(v) if isinstance(v, (dict, list)) else v)
                            for k, v in value.items()}})
    return text.getvalue().encode()
