"""The load bench's baseline endpoint (bench/load/baseline) does its one transaction: a token
looked up, the budget row debited exactly, two balanced ledger rows, a release with a noise
sample; and refuses what it must. Its own settings cannot live beside the product's in this
process, so it runs in a child process on a SQLite file (the bench serves it on PostgreSQL)."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import json, sys
from decimal import Decimal
from bench.load.baseline.seed import seed  # sets Django up with the baseline's settings
from django.test import Client
from bench.load.baseline.models import Budget, LedgerRow, Release
from bench.load.baseline.invariants import CHECKS
from django.db import connection

made = seed(buyers=2, budgets=2)
budget = made["budgets"][1]
small = Budget.objects.create(initial=Decimal("1.0000"), remaining=Decimal("1.0000"))
buyer = Client(HTTP_AUTHORIZATION="Bearer " + made["buyers"][0]["token"])
post = lambda c, body: c.post("/debit/", body, content_type="application/json")
out = {"budget": budget, "buyer": made["buyers"][0]["id"]}
answers = [post(buyer, {"budget": budget, "amount": a}) for a in ("0.25", "0.0001", "1.5")]
out["ok"] = [(r.status_code, r.json()) for r in answers]
out["remaining"] = str(Budget.objects.get(pk=budget).remaining)
out["legs"] = sorted((row.account, str(row.amount)) for row in LedgerRow.objects.filter(release_id=answers[0].json()["id"]))
out["releases"] = Release.objects.count()
out["over"] = post(buyer, {"budget": small.pk, "amount": "1.0001"}).status_code
out["small_left"] = str(Budget.objects.get(pk=small.pk).remaining)
out["bad_amount"] = [post(buyer, {"budget": budget, "amount": a}).status_code for a in ("0.00001", "-1", "x", "NaN")]
out["no_budget"] = post(buyer, {"budget": 999, "amount": "0.1"}).status_code
out["no_token"] = post(Client(), {"budget": budget, "amount": "0.1"}).status_code
out["bad_token"] = post(Client(HTTP_AUTHORIZATION="Bearer nope"), {"budget": budget, "amount": "0.1"}).status_code
out["ping"] = Client().get("/ping/").status_code
with connection.cursor() as cursor:
    out["invariants"] = {}
    for name, sql, _ in CHECKS:
        cursor.execute(sql)
        out["invariants"][name] = cursor.fetchone()[0]
out["after"] = Release.objects.count()
json.dump(out, sys.stdout)
"""


def test_the_baseline_debits_writes_its_rows_and_refuses_what_it_must(tmp_path):
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="bench.load.baseline.settings",
               DATABASE_URL=f"sqlite:///{tmp_path / 'baseline.sqlite3'}", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    (s1, a1), (s2, a2), (s3, a3) = out["ok"]
    assert (s1, s2, s3) == (200, 200, 200)
    assert [a["status"] for a in (a1, a2, a3)] == ["released"] * 3
    assert len({a1["id"], a2["id"], a3["id"]}) == 3
    assert a3["remaining"] == out["remaining"] == "999999998.2499"  # 10^9 - 0.25 - 0.0001 - 1.5, exactly
    assert len({a1["value"], a2["value"], a3["value"]}) == 3  # a fresh Laplace sample each time
    assert out["legs"] == [[f"budget:{out['budget']}", "0.2500"], [f"buyer:{out['buyer']}", "-0.2500"]]
    assert out["releases"] == 3
    assert out["over"] == 409 and out["small_left"] == "1.0000"  # refused: nothing debited
    assert out["bad_amount"] == [400, 400, 400, 400]
    assert out["no_budget"] == 404
    assert out["no_token"] == 401 and out["bad_token"] == 401
    assert out["ping"] == 200
    assert out["invariants"] == {name: 0 for name in out["invariants"]} and len(out["invariants"]) == 4
    assert out["after"] == 3  # no refused request left a release
