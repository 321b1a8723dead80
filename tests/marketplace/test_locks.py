"""The one lock order, the retry of a lost lock race, and free steps refused."""

import ast
from decimal import Decimal
from pathlib import Path

import psycopg
import pytest
from django.db import OperationalError

from market.core import locks
from market.core.errors import Busy, InvalidInput
from market.core.locks import Rank, check_order, recording
from market.ledger.models import Transfer
from market.trading.models import Purchase
from market.trading.services import purchase_create, purchase_fail, purchase_quote
from market.trust.services import trust_listings_set, trust_network_update
from market.trading.services import purchase_release
from tests.fixtures.market import needs_postgres

ROOT = Path(__file__).resolve().parents[2]


def test_row_locks_are_taken_only_by_the_lock_helpers():
    """Every select_for_update (and raw FOR UPDATE/SHARE) lives in a ``locks.py`` module, where
    it announces its rank; anywhere else it would escape the order."""
    offenders = []
    for folder in ("market", "releases"):
        for path in (ROOT / folder).rglob("*.py"):
            # triggers.py holds the database's own trigger functions (SQL run inside the database, as the
            # migrations install it), not locks the Python code takes
            if path.name in ("locks.py", "triggers.py") or "migrations" in path.parts:
                continue
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                if isinstance(node, ast.Attribute) and node.attr == "select_for_update":
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and (
                    "FOR UPDATE" in node.value or "FOR SHARE" in node.value
                ):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


def test_check_order_refuses_a_lock_below_one_held():
    check_order([(Rank.LISTING, "l"), (Rank.HOLDING, "h"), (Rank.ACCOUNT, "a")])
    with pytest.raises(locks.LockOrderError, match="against the lock order"):
        check_order([(Rank.PATH, "p"), (Rank.LISTING, "l")])


def test_every_service_takes_its_locks_in_the_one_order(
    make_listing, buyer, owner, users, fund, django_capture_on_commit_callbacks
):
    listing = make_listing()
    fund(buyer, 100)
    taken = {}
    with recording() as log, django_capture_on_commit_callbacks(execute=False):
        purchase, *_ = purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="1")
    taken["purchase"] = list(log)
    with recording() as log:
        purchase_release(purchase_id=purchase.pk)
    taken["release"] = list(log)
    with django_capture_on_commit_callbacks(execute=False):
        second, *_ = purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="2")
    with recording() as log:
        purchase_fail(purchase_id=second.pk, reason="test")
    taken["refund"] = list(log)
    with recording() as log:
        fresh = make_listing(budget="10")
    taken["listing"] = list(log)
    with recording() as log:  # a listing nobody holds: its tier has room (its size release of 0.5 aside)
        trust_listings_set(owner=owner, listing_ids=[fresh.pk])
    taken["trust listings"] = list(log)
    sam = users("sam")
    fund(sam, 100)
    with recording() as log, django_capture_on_commit_callbacks(execute=False):
        purchase_create(buyer=sam, listing_id=fresh.pk, epsilon="0.5")
    taken["capped purchase"] = list(log)
    with recording() as log:
        trust_network_update(owner=owner, mode="tiers", metric="shortest", map_kind="exp", lam="1", unknown_distance="2")
    taken["trust network"] = list(log)

    for name, seen in taken.items():
        check_order(seen)
    ranks = {name: [rank for rank, _ in seen] for name, seen in taken.items()}
    assert ranks["purchase"] == [Rank.LISTING, Rank.HOLDING, Rank.ACCOUNT]
    # found capped under the listing's lock: rolled back, run again under the dataset's (any buyer's turn)
    assert ranks["capped purchase"] == [Rank.LISTING, None, Rank.DATASET, Rank.LISTING, Rank.HOLDING, Rank.ACCOUNT]
    with pytest.raises(locks.LockOrderError):  # without the mark the same locks would be out of order
        check_order([lock for lock in taken["capped purchase"] if lock[0] is not None])
    assert ranks["release"] == [Rank.PATH, Rank.HOLDING, Rank.PURCHASE]
    assert ranks["refund"] == [Rank.HOLDING, Rank.PURCHASE, Rank.ACCOUNT]
    assert Rank.DATASET in ranks["listing"] and Rank.LISTING in ranks["trust listings"]
    assert ranks["trust network"] == [Rank.NETWORK]


def lost_race(sqlstate):
    """An OperationalError as Django raises it for a lock conflict PostgreSQL broke."""
    cause = psycopg.errors.lookup(sqlstate)("simulated")
    error = OperationalError("simulated lost race")
    error.__cause__ = cause
    return error


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("sqlstate", ["40P01", "40001", "55P03"])
def test_a_lost_lock_race_is_run_again(sqlstate, monkeypatch):
    monkeypatch.setattr(locks.time, "sleep", lambda s: None)
    calls = []

    def work():
        calls.append(1)
        if len(calls) < 3:
            raise lost_race(sqlstate)
        return "done"

    assert locks.retrying(work) == "done" and len(calls) == 3


@pytest.mark.django_db(transaction=True)
def test_a_race_lost_every_time_is_busy_and_other_errors_pass_through(monkeypatch):
    monkeypatch.setattr(locks.time, "sleep", lambda s: None)
    with pytest.raises(Busy) as caught:
        locks.retrying(lambda: (_ for _ in ()).throw(lost_race("40P01")), attempts=4)
    assert caught.value.status == 409 and caught.value.retry_after == 1
    with pytest.raises(OperationalError):
        locks.retrying(lambda: (_ for _ in ()).throw(OperationalError("connection refused")))


@pytest.mark.django_db(transaction=True)
def test_a_purchase_that_keeps_losing_is_a_409_with_retry_after_and_charges_nothing(listing, buyer, fund, api, monkeypatch):
    import market.trading.services as trading

    fund(buyer, 100)
    monkeypatch.setattr(locks.time, "sleep", lambda s: None)

    def deadlocked(**kwargs):
        raise lost_race("40P01")

    monkeypatch.setattr(trading, "listing_share_lock", deadlocked)
    answer = api(buyer).post("/api/v1/purchases/", {"listing": listing.pk, "epsilon": "1"}, format="json")
    assert answer.status_code == 409, answer.content
    assert answer.headers["Retry-After"] == "1"
    assert answer.json()["error"]["code"] == "busy"
    assert not Purchase.objects.exists() and not Transfer.objects.filter(kind="purchase").exists()


def test_a_step_still_in_flight_is_busy_with_retry_after(listing, buyer, fund, api, django_capture_on_commit_callbacks):
    fund(buyer, 100)
    with django_capture_on_commit_callbacks(execute=False):
        first = api(buyer).post("/api/v1/purchases/", {"listing": listing.pk, "epsilon": "1"}, format="json")
        second = api(buyer).post("/api/v1/purchases/", {"listing": listing.pk, "epsilon": "2"}, format="json")
    assert first.status_code == 202
    assert second.status_code == 409 and second.headers["Retry-After"] == "1"
    assert second.json()["error"]["code"] == "busy"
    assert Purchase.objects.count() == 1


def test_a_step_priced_at_zero_is_refused_with_the_smallest_paid_step(make_listing, buyer, fund, api):
    listing = make_listing(price="1.00")  # P(eps) = 1.00 x eps, rounded half-up to the cent
    fund(buyer, 100)
    answer = api(buyer).post("/api/v1/purchases/", {"listing": listing.pk, "epsilon": "0.0004"}, format="json")
    assert answer.status_code == 400
    assert "goes up to 0.005" in answer.json()["error"]["message"]
    assert answer.json()["error"]["fields"]["epsilon"] == ["At least 0.005: smaller steps round to 0.00 credits."]
    assert not Purchase.objects.exists()
    with pytest.raises(Exception, match="smallest paid step goes up to 0.005$"):
        purchase_quote(buyer=buyer, listing=listing, epsilon="0.0049")
    assert purchase_quote(buyer=buyer, listing=listing, epsilon="0.005").price == Decimal("0.01")


def test_a_listing_that_would_give_everything_away_is_refused(make_listing):
    with pytest.raises(InvalidInput, match="gives every level away") as caught:
        make_listing(price="0.00")
    assert caught.value.fields == {"price_per_epsilon": ["Charge at least 0.01 at the ceiling."]}
    with pytest.raises(InvalidInput, match="gives every level away"):
        make_listing(price="0.01", ceiling="0.4")  # 0.01 x 0.4 rounds to 0.00


@pytest.mark.django_db(transaction=True)
@needs_postgres
def test_a_key_whose_row_is_locked_still_signs_in_unstamped(buyer, api):
    """The last-use stamp waits for no lock: with the key's row locked by another transaction
    (a rotation), a request signed with it waits out at most the lock timeout and succeeds."""
    import threading

    from django.db import connections, transaction

    from market.accounts.models import ApiKey
    from market.accounts.services import api_key_create

    key, secret = api_key_create(user=buyer, name="locked")
    locked, release = threading.Event(), threading.Event()

    def hold():
        try:
            with transaction.atomic():
                ApiKey.objects.select_for_update().get(pk=key.pk)
                locked.set()
                release.wait(30)
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert locked.wait(10)
        client = api()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        answer = client.get("/api/v1/wallet/")
        assert answer.status_code == 200, answer.content
    finally:
        release.set()
        holder.join(30)
    key.refresh_from_db()
    assert key.last_used_at is None  # not stamped this time; the next request will be


def test_a_lock_race_no_service_ran_again_is_a_409_in_the_api_not_a_500(buyer, api, monkeypatch):
    import market.api.views as views

    def broken(**kwargs):
        raise lost_race("55P03")

    monkeypatch.setattr(views.ledger, "wallet_balance", broken)
    answer = api(buyer).get("/api/v1/wallet/")
    assert answer.status_code == 409 and answer.headers["Retry-After"] == "1"
    assert answer.json()["error"]["code"] == "busy"
    # any other database error that is not a lost connection (market.core.outages) is still a bug, and says so
    monkeypatch.setattr(views.ledger, "wallet_balance", lambda **kw: (_ for _ in ()).throw(lost_race("53100")))
    assert api(buyer).get("/api/v1/wallet/").status_code == 500


def test_a_lock_race_on_a_page_is_a_409_page_that_says_nothing_was_taken(buyer, client, monkeypatch):
    import market.web.views as views

    def broken(**kwargs):
        raise lost_race("40P01")

    monkeypatch.setattr(views.catalog, "holdings_list", broken)
    client.force_login(buyer)
    answer = client.get("/library/")
    assert answer.status_code == 409 and answer["Retry-After"] == "1"
    assert "took nothing" in answer.content.decode()


@pytest.mark.django_db(transaction=True)
def test_a_top_up_that_loses_a_lock_race_is_run_again_and_funds_once(buyer, monkeypatch):
    import market.ledger.payments as payments
    from market.ledger.payments import ManualFunding
    from market.ledger.selectors import wallet_balance

    monkeypatch.setattr(locks.time, "sleep", lambda s: None)
    real, calls = payments.transfer_create, []

    def flaky(**kwargs):
        calls.append(1)
        if len(calls) < 3:
            raise lost_race("55P03")  # the funding account stayed locked past the timeout
        return real(**kwargs)

    monkeypatch.setattr(payments, "transfer_create", flaky)
    ManualFunding().fund(user=buyer, amount=Decimal("25.00"))
    assert len(calls) == 3
    assert wallet_balance(user=buyer) == Decimal("25.00")
    assert Transfer.objects.filter(kind="top_up").count() == 1
