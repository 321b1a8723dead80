"""The load bench's like-for-like baseline (bench/load/baseline) answers the product buyer's requests:
a quote priced on the listing's curve from the level held, a purchase that debits the wallet
exactly, raises the holding, writes two balanced ledger rows and queues its release (run eagerly
here: no Redis), the release with 10 noisy values; and it refuses what it must with a clear 4xx.
Its own settings cannot live beside the product's in this process, so it runs in a child process
on a SQLite file (the bench serves it on PostgreSQL, with a Celery worker)."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import json, sys
from bench.load.baseline.seed import seed  # sets Django up with the baseline's settings
from django.test import Client
from bench.load.baseline.models import Holding, LedgerRow, Purchase, Release, Wallet
from bench.load.baseline.invariants import CHECKS
from django.db import connection

made = seed(buyers=2, listings=2, ceiling="1", price="2.00")
listing = made["listings"][1]["id"]
me = made["buyers"][0]
buyer = Client(HTTP_AUTHORIZATION="Bearer " + me["token"])
buy = lambda c, body, **h: c.post("/api/v1/purchases/", body, content_type="application/json", **h)
quote = lambda eps: buyer.get(f"/api/v1/listings/{listing}/quote/?epsilon={eps}")
out = {"me": me["id"], "listing": listing}
out["quotes"] = [(r.status_code, r.json()) for r in (quote("0.2501"), quote("1.5"), quote("0.00001"))]
first = buy(buyer, {"listing": listing, "epsilon": "0.2501"}, HTTP_IDEMPOTENCY_KEY="k1", HTTP_PREFER="wait=5")
out["first"] = (first.status_code, first.json(), first.headers.get("Preference-Applied"))
out["repeat"] = buy(buyer, {"listing": listing, "epsilon": "0.2501"}, HTTP_IDEMPOTENCY_KEY="k1").status_code
out["quote_after"] = quote("0.5").json()
second = buy(buyer, {"listing": listing, "epsilon": "0.5"})
out["second"] = (second.status_code, second.json()["price"])
second_id = second.json()["id"]
out["read"] = buyer.get(f"/api/v1/purchases/{first.json()['id']}/", HTTP_PREFER="wait=1").status_code
out["level"] = buyer.get(f"/api/v1/listings/{listing}/").json()["your_level"]
out["wallet"] = str(Wallet.objects.get(buyer_id=me["id"]).balance)
h = Holding.objects.get(buyer_id=me["id"], listing_id=listing)
out["holding"] = [str(h.purchased), str(h.released), str(h.ceiling)]
out["legs"] = sorted((r.account, str(r.amount)) for r in LedgerRow.objects.filter(purchase_id=first.json()["id"]))
out["values"] = [len(r.values) for r in Release.objects.all()]
out["refused"] = {
    "not above": buy(buyer, {"listing": listing, "epsilon": "0.5"}).status_code,
    "over ceiling": buy(buyer, {"listing": listing, "epsilon": "1.0001"}).status_code,
    "bad epsilon": [buy(buyer, {"listing": listing, "epsilon": e}).status_code for e in ("0.00001", "-1", "x", "NaN")],
    "no listing": buy(buyer, {"listing": 999, "epsilon": "0.1"}).status_code,
    "no token": buy(Client(), {"listing": listing, "epsilon": "0.9"}).status_code,
    "bad token": buy(Client(HTTP_AUTHORIZATION="Bearer nope"), {"listing": listing, "epsilon": "0.9"}).status_code,
    "someone else's purchase": Client(HTTP_AUTHORIZATION="Bearer " + made["buyers"][1]["token"]).get(
        f"/api/v1/purchases/{first.json()['id']}/").status_code,
}
Wallet.objects.filter(buyer_id=me["id"]).update(balance="0.50", initial="1.50")  # 1.50 less the 1.00 spent
out["poor"] = buy(buyer, {"listing": listing, "epsilon": "0.9"}).status_code
out["ping"] = Client().get("/ping/").status_code
with connection.cursor() as cursor:
    out["invariants"] = {}
    for name, sql, _ in CHECKS:
        cursor.execute(sql)
        out["invariants"][name] = cursor.fetchone()[0]
out["purchases"] = Purchase.objects.count()
# the checks see a tampered row: a wallet a cent off, a purchase left queued without its release
Wallet.objects.filter(buyer_id=me["id"]).update(balance="0.51")
Release.objects.filter(purchase_id=second_id).delete()
Purchase.objects.filter(pk=second_id).update(status="queued")
with connection.cursor() as cursor:
    out["tampered"] = {}
    for name, sql, _ in CHECKS:
        cursor.execute(sql)
        out["tampered"][name] = cursor.fetchone()[0]
json.dump(out, sys.stdout)
"""


def test_the_baseline_quotes_buys_releases_and_refuses_what_it_must(tmp_path):
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="bench.load.baseline.settings",
               DATABASE_URL=f"sqlite:///{tmp_path / 'baseline.sqlite3'}", PYTHONPATH=str(ROOT))
    env.pop("REDIS_URL", None)
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    (q1, a1), (q2, _), (q3, _) = out["quotes"]
    assert (q1, a1["price"]) == (200, "0.50")  # 2.00 x 0.2501 = 0.5002, to the cent
    assert (q2, q3) == (409, 400)  # over the ceiling; not a level
    status, body, applied = out["first"]
    assert (status, body["status"], body["price"], len(body["values"]), applied) == (201, "released", "0.50", 10, "wait=5")
    assert out["repeat"] == 200  # the same Idempotency-Key: the same purchase, nothing charged again
    assert out["quote_after"]["price"] == "0.50"  # P(0.5) - P(0.2501) = 1.00 - 0.50
    assert out["second"] == [202, "0.50"]  # no Prefer: wait: answered at once, queued
    assert out["read"] == 200 and out["level"] == "0.5000"
    assert out["wallet"] == "99999999.00"  # 10^8 - 0.50 - 0.50, exactly
    assert out["holding"] == ["0.5000", "0.5000", "1.0000"]
    assert out["legs"] == [[f"buyer:{out['me']}", "-0.50"], [f"listing:{out['listing']}", "0.50"]]
    assert out["values"] == [10, 10]
    assert out["refused"] == {"not above": 409, "over ceiling": 409, "bad epsilon": [400, 400, 400, 400],
                              "no listing": 404, "no token": 401, "bad token": 401, "someone else's purchase": 404}
    assert out["poor"] == 402  # 0.50 left, 0.80 asked: nothing written
    assert out["ping"] == 200
    assert out["invariants"] == {name: 0 for name in out["invariants"]} and len(out["invariants"]) == 7
    assert out["purchases"] == 2
    assert {k: v for k, v in out["tampered"].items() if v} == {
        "every wallet is its funds less its purchases": 1,
        "holdings: released <= purchased <= ceiling, matching the purchases and releases": 1,
        "nothing left in flight": 1}
