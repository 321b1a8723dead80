"""A dropped database connection never answers a charge with a 5xx (``market.core.outages``).

The connection is terminated from a second one (``pg_terminate_backend``, as a restart or a proxy
would) at the moment each test names: before the purchase's COMMIT (run again on a fresh
connection, or 503 and nothing charged), during it (the purchase's id, chosen before its INSERT,
finds it: 202), and after it (202 with what is known).
"""

from decimal import Decimal

import psycopg
import pytest
from django.db import OperationalError, connection, connections
from django.test import Client

import market.trading.selectors as selectors
import market.trading.services as services
from market.ledger.models import Transfer
from market.ledger.selectors import ledger_is_balanced, wallet_balance
from market.trading.models import Holding, Purchase
from tests.fixtures.market import needs_postgres
from tests.marketplace.test_api import assert_error

from .conftest import database_url, wait_for

PURCHASES = "/api/v1/purchases/"


def drop_connection():
    """Terminate this thread's database connection from another one, and wait until it is gone."""
    pid = connection.connection.info.backend_pid
    with psycopg.connect(database_url(), autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
        wait_for(lambda: not other.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone(),
                 10, "the backend to end")


def dropping_before_commit(monkeypatch, times: int):
    """The connection drops inside the purchase's transaction, just before its payment, ``times`` times."""
    real, left = services.transfer_create, [times]

    def transfer_create(**kwargs):
        if left[0] > 0:
            left[0] -= 1
            drop_connection()
        return real(**kwargs)

    monkeypatch.setattr(services, "transfer_create", transfer_create)


def ended(answer):
    """What a server does at the end of each request (Django's test client does not): a connection
    left broken is closed, and the next query opens a fresh one."""
    connection.close_if_unusable_or_obsolete()
    return answer


def buy(api, buyer, listing, key="drop", **headers):
    return ended(api(buyer).post(PURCHASES, {"listing": listing.pk, "epsilon": "1"}, format="json",
                                 HTTP_IDEMPOTENCY_KEY=key, **headers))


def assert_charged_once(buyer, answer):
    assert answer.status_code == 202, answer.content
    assert answer.json()["status"] == "queued"
    assert str(Purchase.objects.get().pk) == answer.json()["id"]
    assert Transfer.objects.filter(kind="purchase").count() == 1
    assert wallet_balance(user=buyer) == Decimal("90.00") and ledger_is_balanced()


@needs_postgres
@pytest.mark.django_db(transaction=True)
def test_a_connection_dropped_before_the_commit_is_run_again_and_charges_once(listing, buyer, fund, api, monkeypatch):
    fund(buyer, 100)
    dropping_before_commit(monkeypatch, times=1)
    assert_charged_once(buyer, buy(api, buyer, listing))
    assert Holding.objects.get(buyer=buyer, listing=listing).purchased == Decimal("1")


@needs_postgres
@pytest.mark.django_db(transaction=True)
def test_a_connection_that_stays_down_is_503_with_retry_after_and_charges_nothing(listing, buyer, fund, api, monkeypatch):
    fund(buyer, 100)
    dropping_before_commit(monkeypatch, times=2)
    answer = buy(api, buyer, listing)
    assert_error(answer, 503, "unavailable")
    assert int(answer["Retry-After"]) >= 1
    assert not Purchase.objects.exists() and not Transfer.objects.filter(kind="purchase").exists()
    assert wallet_balance(user=buyer) == Decimal("100.00")
    monkeypatch.undo()
    assert_charged_once(buyer, buy(api, buyer, listing))  # the same request again, once the database is back


@needs_postgres
@pytest.mark.django_db(transaction=True)
def test_a_commit_whose_answer_is_lost_is_found_by_its_id_and_answered_202(listing, buyer, fund, api, monkeypatch):
    """The COMMIT lands but its answer is lost with the connection: the purchase is looked up on a
    fresh connection by the id chosen before its INSERT, and answered as made, not made again."""
    fund(buyer, 100)
    db = connections["default"]
    real_commit, real_transfer, armed = db.commit, services.transfer_create, []

    def transfer_create(**kwargs):
        armed.append(True)  # the next commit is the purchase's
        return real_transfer(**kwargs)

    def commit():
        real_commit()
        if armed:
            armed.clear()
            drop_connection()
            raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(services, "transfer_create", transfer_create)
    monkeypatch.setattr(db, "commit", commit)
    assert_charged_once(buyer, buy(api, buyer, listing))


@needs_postgres
@pytest.mark.django_db(transaction=True)
def test_a_read_back_that_fails_after_the_commit_answers_202_with_what_is_known(listing, buyer, fund, api, monkeypatch):
    fund(buyer, 100)
    # the connection drops while the request waits for the release (Prefer: wait), after the commit
    monkeypatch.setattr(selectors, "release_wait", lambda **kwargs: drop_connection())
    answer = buy(api, buyer, listing, HTTP_PREFER="wait=1")
    assert_charged_once(buyer, answer)


@needs_postgres
@pytest.mark.django_db(transaction=True)
def test_the_pages_confirm_survives_a_dropped_connection_or_says_503(listing, buyer, fund, monkeypatch):
    fund(buyer, 100)
    client = Client()
    client.force_login(buyer)
    dropping_before_commit(monkeypatch, times=2)
    answer = ended(client.post(f"/listings/{listing.pk}/buy/", {"epsilon": "1", "idempotency_key": "page"}))
    assert answer.status_code == 503 and int(answer["Retry-After"]) >= 1
    assert "Try again in a moment" in answer.content.decode() and not Purchase.objects.exists()

    dropping_before_commit(monkeypatch, times=1)
    answer = ended(client.post(f"/listings/{listing.pk}/buy/", {"epsilon": "1", "idempotency_key": "page"}))
    assert answer.status_code == 302 and answer["Location"] == f"/purchases/{Purchase.objects.get().pk}/"
    assert Transfer.objects.filter(kind="purchase").count() == 1 and wallet_balance(user=buyer) == Decimal("90.00")


def lost_connection():
    """An OperationalError as Django raises it when PostgreSQL's connection fails (SQLSTATE 08006)."""
    error = OperationalError("simulated: server closed the connection unexpectedly")
    error.__cause__ = psycopg.errors.lookup("08006")("simulated")
    return error


@pytest.mark.django_db
def test_a_lost_connection_is_503_with_retry_after_in_the_api_and_on_the_pages(buyer, api, client, monkeypatch):
    import market.api.views as api_views
    import market.web.views as web_views

    def broken(**kwargs):
        raise lost_connection()

    monkeypatch.setattr(api_views.ledger, "wallet_balance", broken)
    answer = api(buyer).get("/api/v1/wallet/")
    assert_error(answer, 503, "unavailable")
    assert answer["Retry-After"] == "2"

    monkeypatch.setattr(web_views.catalog, "holdings_list", broken)
    client.force_login(buyer)
    page = client.get("/library/")
    assert page.status_code == 503 and page["Retry-After"] == "2"
    assert "Try again in a moment" in page.content.decode()


@needs_postgres
@pytest.mark.django_db(transaction=True)
def test_a_read_whose_connection_is_terminated_is_run_again_on_a_fresh_one(listing, buyer, fund, api, client,
                                                                          monkeypatch):
    """A quote and a page lose their database session mid-request (terminated from outside): each is
    run once more on a fresh connection and answered as usual, not 503 (``RetryReadsMiddleware``)."""
    import market.api.views as api_views
    import market.web.views as web_views

    def dropping_once(real):
        left = [1]

        def wrapper(**kwargs):
            if left[0]:
                left[0] -= 1
                drop_connection()
            return real(**kwargs)
        return wrapper

    monkeypatch.setattr(api_views.catalog, "listing_get", dropping_once(api_views.catalog.listing_get))
    answer = ended(api(buyer).get(f"/api/v1/listings/{listing.pk}/quote/?epsilon=1"))
    assert answer.status_code == 200, answer.content
    assert answer.json()["epsilon"] == "1.0000" and Decimal(answer.json()["price"]) > 0

    monkeypatch.setattr(web_views.catalog, "holdings_list", dropping_once(web_views.catalog.holdings_list))
    client.force_login(buyer)
    page = ended(client.get("/library/"))
    assert page.status_code == 200
