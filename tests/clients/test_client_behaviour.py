"""``gradual-client``'s own behaviour where a live server cannot be made to show it on demand: retries after
429 and 409 busy (with the same idempotency key), what is never retried, answers that are not the API's
error shape, the numbers it sends, and where its settings come from. The HTTP side is httpx's
MockTransport, answering as the API documents."""

import json
from decimal import Decimal

import httpx
import pytest

from gradual_client import (
    Client,
    ConflictError,
    GradualError,
    NetworkError,
    PriceChangedError,
    PurchaseFailed,
    RateLimitError,
    ServerError,
    ValidationError,
    decimal_text,
)
from gradual_client.config import ConfigError, resolve

PURCHASE = {
    "id": "0b7c6f6e-58a4-4f5e-9d7e-2a3f4c5d6e7f", "listing": 3, "level_from": "0.0000", "epsilon": "0.5000",
    "price": "5.00", "status": "queued", "failure_reason": "", "created_at": "2026-11-24T06:00:00.123456Z",
    "release": None,
}


def error(status, code, message="no", fields=None, retry_after=None):
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
    body = {"error": {"status": status, "code": code, "message": message, "fields": fields or {}}}
    return httpx.Response(status, json=body, headers=headers)


def scripted(*answers):
    """A client whose requests get ``answers`` in turn; ``client.sent`` holds the requests."""
    queue = list(answers)
    sent: list[httpx.Request] = []

    def handle(request):
        sent.append(request)
        answer = queue.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    client = Client("http://gradual.test/api/v1/", "gradual_k", transport=httpx.MockTransport(handle), max_retry_wait=0.01)
    client.sent = sent
    return client


def test_a_throttled_read_is_sent_again_after_retry_after():
    client = scripted(error(429, "throttled", retry_after=0), httpx.Response(200, json={"balance": "7.50", "currency": "credits"}))
    assert client.wallet().balance == Decimal("7.50")
    assert [r.url.path for r in client.sent] == ["/api/v1/wallet/"] * 2
    assert client.sent[0].headers["Authorization"] == "Bearer gradual_k"


def test_retries_are_counted_then_the_error_is_raised():
    client = scripted(*[error(429, "throttled", "slow down", retry_after=3)] * 3)
    with pytest.raises(RateLimitError) as throttled:
        client.wallet()
    assert len(client.sent) == 3 and throttled.value.retry_after == 3.0 and throttled.value.code == "throttled"


def test_a_busy_purchase_is_sent_again_with_the_same_idempotency_key():
    client = scripted(error(409, "busy", retry_after=0), httpx.Response(202, json=PURCHASE))
    purchase = client.buy(3, "0.5", wait=False)
    assert purchase.status == "queued" and purchase.price == Decimal("5.00")
    keys = [r.headers["Idempotency-Key"] for r in client.sent]
    assert len(keys) == 2 and keys[0] == keys[1]
    assert json.loads(client.sent[0].content) == {"listing": 3, "epsilon": "0.5"}
    assert "Prefer" not in client.sent[0].headers


def test_each_purchase_gets_its_own_idempotency_key_unless_given():
    client = scripted(*[httpx.Response(202, json=PURCHASE)] * 4)
    client.buy(3, 1, wait=False)
    client.buy(3, 1, wait=False)
    client.buy(3, 1, wait=False, idempotency_key="mine")
    client.buy(3, 1, wait=False, idempotency_key="mine")
    keys = [r.headers["Idempotency-Key"] for r in client.sent]
    assert keys[0] != keys[1] and keys[2:] == ["mine", "mine"]


def test_a_conflict_and_a_validation_error_are_not_sent_again():
    client = scripted(error(409, "conflict", "that key was used for another purchase"))
    with pytest.raises(ConflictError) as conflict:
        client.buy(3, 1, wait=False, idempotency_key="k")
    assert conflict.value.code == "conflict" and len(client.sent) == 1
    client = scripted(error(400, "invalid", "epsilon: too high", {"epsilon": ["At most 5.0000 (the ceiling)."]}))
    with pytest.raises(ValidationError) as invalid:
        client.quote(3, epsilon=7)
    assert invalid.value.fields == {"epsilon": ["At most 5.0000 (the ceiling)."]} and len(client.sent) == 1
    assert "epsilon: At most 5.0000 (the ceiling)." in str(invalid.value)


QUOTE = {"listing": 3, "epsilon": "1.0000", "current_level": "0.0000", "ceiling": "5.0000", "cap": "5.0000",
         "cap_reason": "the listing's ceiling", "price": "10.00", "accuracy": [], "statistics": [], "target": None}


def price_changed(new_price: str) -> httpx.Response:
    answer = error(409, "price_changed", f"the price of this step rose to {new_price} credits, above the 10.00 "
                   "credits you agreed to pay; nothing was charged: confirm the new quote to buy",
                   {"max_price": [f"The price is now {new_price} credits."]})
    body = answer.json()
    body["error"]["quote"] = {**QUOTE, "price": new_price}
    return httpx.Response(409, json=body)


def test_buy_sends_max_price_and_a_price_changed_carries_the_new_quote_and_is_not_sent_again():
    client = scripted(price_changed("40.00"), httpx.Response(202, json=PURCHASE))
    with pytest.raises(PriceChangedError) as changed:
        client.buy(3, 1, wait=False, max_price=Decimal("10.00"), idempotency_key="k")
    assert len(client.sent) == 1 and json.loads(client.sent[0].content) == {"listing": 3, "epsilon": "1", "max_price": "10.00"}
    assert isinstance(changed.value, ConflictError) and changed.value.code == "price_changed"
    assert changed.value.quote is not None and changed.value.quote.price == Decimal("40.00")
    assert changed.value.fields == {"max_price": ["The price is now 40.00 credits."]}
    client.buy(3, 1, wait=False, max_price=changed.value.quote.price)  # confirming the new price
    assert json.loads(client.sent[1].content)["max_price"] == "40.00"


def cli_run(monkeypatch, answers, *argv):
    """``gradual`` run in this process against scripted answers: (exit code, stdout, stderr, requests)."""
    import io

    from gradual_client import cli

    client = scripted(*answers)
    monkeypatch.setattr(cli, "Client", lambda url, key: client)
    monkeypatch.setenv("GRADUAL_URL", "http://gradual.test/")
    monkeypatch.setenv("GRADUAL_API_KEY", "gradual_k")
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue(), client.sent


def test_the_command_line_buys_at_most_the_price_it_quoted_and_says_when_it_changed(monkeypatch):
    code, out, err, sent = cli_run(monkeypatch, [httpx.Response(200, json=QUOTE), price_changed("40.00")],
                                   "buy", "3", "--epsilon", "1", "--no-wait")
    assert [(r.method, r.url.path) for r in sent] == [("GET", "/api/v1/listings/3/quote/"), ("POST", "/api/v1/purchases/")]
    assert json.loads(sent[1].content) == {"listing": 3, "epsilon": "1", "max_price": "10.00"}  # the quoted price
    assert code == 1 and out == ""
    assert "gradual: the price changed:" in err and "nothing was charged" in err
    assert "now costs 40.00 credits" in err and "--max-price 40.00" in err

    code, out, err, sent = cli_run(monkeypatch, [httpx.Response(202, json=PURCHASE)],
                                   "buy", "3", "--epsilon", "0.5", "--max-price", "6", "--no-wait")
    assert code == 0 and len(sent) == 1 and json.loads(sent[0].content)["max_price"] == "6"  # no quote needed
    assert "queued" in out


def test_the_quote_carries_what_is_bounded_for_the_buyers_tier(monkeypatch):
    bound = ("Everyone at distance ≥ 3 from the owner (you, and every account the owner has not placed (new "
             "accounts and visitors too)) together learns at most ε 1.1156 (5 × e^(−0.5·3), rounded down) about any one person "
             "in this dataset from its 2 trust-capped listings: ... They hold ε 1.1156 of it now.")
    capped = {**QUOTE, "cap": "0.0000", "cap_reason": "buyers at distance ≥ 3 together already hold 1.1156 ...",
              "cap_bound": bound}
    assert scripted(httpx.Response(200, json=capped)).quote(3, epsilon=1).cap_bound == bound
    assert scripted(httpx.Response(200, json=QUOTE)).quote(3, epsilon=1).cap_bound == ""  # an older server
    code, out, _, _ = cli_run(monkeypatch, [httpx.Response(200, json=capped)], "quote", "3", "--epsilon", "1")
    assert code == 0 and "cap_bound" in out and "together learns at most ε 1.1156" in out
    code, out, _, _ = cli_run(monkeypatch, [httpx.Response(200, json=QUOTE)], "quote", "3", "--epsilon", "1")
    assert code == 0 and "cap_bound" not in out


def test_a_lost_connection_is_retried_for_reads_only():
    client = scripted(httpx.ConnectError("refused"), httpx.Response(200, json={"balance": "1.00", "currency": "credits"}))
    assert client.wallet().balance == Decimal("1.00") and len(client.sent) == 2
    client = scripted(httpx.ConnectError("refused"))
    with pytest.raises(NetworkError):
        client.top_up(5)  # a write without an idempotency key is never sent twice
    assert len(client.sent) == 1


def test_an_answer_not_in_the_error_shape_still_raises_by_status():
    client = scripted(httpx.Response(502, text="<html>bad gateway</html>"))
    with pytest.raises(ServerError) as bad:
        client.listing(1)
    assert (bad.value.status, bad.value.code) == (502, "server_error")
    client = scripted(httpx.Response(418, text="teapot"))
    with pytest.raises(GradualError) as odd:
        client.listing(1)
    assert odd.value.status == 418 and odd.value.message == "teapot"


def test_waiting_asks_the_server_to_hold_the_answer_and_a_failure_is_raised():
    failed = {**PURCHASE, "status": "failed", "failure_reason": "the listing was closed; refunded"}
    client = scripted(httpx.Response(202, json=PURCHASE), httpx.Response(200, json=failed))
    with pytest.raises(PurchaseFailed) as refused:
        client.buy(3, "0.5", timeout=300)
    assert refused.value.purchase.failed and "refunded" in refused.value.message
    assert [r.headers.get("Prefer") for r in client.sent] == ["wait=30", "wait=30"]
    assert client.sent[1].url.path == f"/api/v1/purchases/{PURCHASE['id']}/"


def test_lists_follow_next_links_and_targets_are_sent_as_the_api_reads_them():
    page1 = {"next": "http://gradual.test/api/v1/listings/?cursor=abc", "previous": None, "results": []}
    client = scripted(httpx.Response(200, json=page1), httpx.Response(200, json={"next": None, "results": []}))
    assert client.listings(search="clinic") == []
    assert [str(r.url) for r in client.sent] == [
        "http://gradual.test/api/v1/listings/?search=clinic", "http://gradual.test/api/v1/listings/?cursor=abc"]
    quote = {"listing": 3, "epsilon": "1.0000", "current_level": "0.0000", "ceiling": "5.0000", "cap": "5.0000",
             "cap_reason": "", "price": "10.00", "accuracy": [], "statistics": [],
             "target": [{"name": "mean(age)", "error_bound": "1"}, {"name": None, "error_bound": "20"}]}
    client = scripted(httpx.Response(200, json=quote))
    answer = client.quote(3, target={"mean(age)": 1, "count": Decimal("20.0")}, records=500)
    assert client.sent[0].url.params.get_list("target") == ["mean(age):1", "count:20.0"]
    assert client.sent[0].url.params["records"] == "500"
    assert answer.target == (("mean(age)", Decimal(1)), (None, Decimal(20)))


def test_numbers_are_sent_as_exact_decimal_text():
    assert decimal_text(1.5) == "1.5" and decimal_text(0.1) == "0.1" and decimal_text(2) == "2"
    assert decimal_text(Decimal("1E+1")) == "10" and decimal_text(" 0.25 ") == "0.25"
    for bad in (float("nan"), float("inf"), "abc", True):
        with pytest.raises((ValueError, TypeError)):
            decimal_text(bad)


def test_settings_come_from_arguments_then_environment_then_the_config_file(tmp_path):
    config = tmp_path / "gradual" / "config.toml"
    config.parent.mkdir()
    config.write_text('url = "http://from-file"\napi_key = "gradual_file"\n')
    home = {"XDG_CONFIG_HOME": str(tmp_path)}
    assert resolve(environ=home) == resolve(environ=home)  # frozen and comparable
    assert (resolve(environ=home).url, resolve(environ=home).key) == ("http://from-file", "gradual_file")
    env = {**home, "GRADUAL_URL": "http://from-env", "GRADUAL_API_KEY": "gradual_env"}
    assert (resolve(environ=env).url, resolve(environ=env).key) == ("http://from-env", "gradual_env")
    assert resolve(url="http://arg", key="gradual_arg", environ=env).key == "gradual_arg"
    with pytest.raises(ConfigError):
        resolve(environ={"XDG_CONFIG_HOME": str(tmp_path / "none")})  # no address anywhere
    with pytest.raises(ConfigError):
        resolve(config=tmp_path / "missing.toml", environ=env)  # a file named must exist
    config.write_text("url = [")
    with pytest.raises(ConfigError):
        resolve(environ=home)
    with pytest.raises(ConfigError):
        resolve(environ={"GRADUAL_URL": "http://x", "XDG_CONFIG_HOME": str(tmp_path / "none")}, require_key=True)


def test_a_client_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setenv("GRADUAL_URL", "http://gradual.test/")
    monkeypatch.setenv("GRADUAL_API_KEY", "gradual_env")
    with Client.from_env() as client:
        assert (client.api, client.key) == ("http://gradual.test/api/v1/", "gradual_env")
    with Client.from_env(key="gradual_given") as client:
        assert client.key == "gradual_given" and "gradual_given" not in repr(client)


def test_a_wait_the_server_did_not_hold_is_asked_again_at_its_pace(monkeypatch):
    """Past the server's open waits (no ``Preference-Applied``) the client sleeps ``Retry-After`` before
    asking again, rather than at once; a held wait is followed at once."""
    released = {**PURCHASE, "status": "failed", "failure_reason": "refunded"}
    not_held = httpx.Response(200, json=PURCHASE, headers={"Retry-After": "1"})
    held = httpx.Response(200, json=PURCHASE, headers={"Preference-Applied": "wait=30"})
    client = scripted(httpx.Response(202, json=PURCHASE), not_held, held, httpx.Response(200, json=released))
    slept = []
    monkeypatch.setattr("gradual_client.client.time.sleep", slept.append)
    with pytest.raises(PurchaseFailed):
        client.buy(3, "0.5", timeout=300)
    assert slept == [1.0] and len(client.sent) == 4


def test_the_command_line_waits_for_a_purchase_and_a_failure_exits_4(monkeypatch):
    failed = {**PURCHASE, "status": "failed", "failure_reason": "the listing was closed; refunded"}
    code, out, err, sent = cli_run(monkeypatch, [httpx.Response(200, json=PURCHASE), httpx.Response(200, json=failed)],
                                   "wait", PURCHASE["id"], "--timeout", "60")
    assert code == 4 and out == "" and "the listing was closed; refunded" in err
    assert [r.url.path for r in sent] == [f"/api/v1/purchases/{PURCHASE['id']}/"] * 2
    assert sent[1].headers["Prefer"] == "wait=30"


def test_the_command_line_says_an_unreadable_answer_plainly(monkeypatch):
    monkeypatch.delenv("GRADUAL_DEBUG", raising=False)
    code, out, err, _ = cli_run(monkeypatch, [httpx.Response(200, json={"balance": "not a number"})], "wallet")
    assert code == 1 and out == "" and err.startswith("gradual: unexpected error (") and "Traceback" not in err
