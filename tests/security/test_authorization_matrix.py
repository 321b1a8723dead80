"""Who may do what: every API endpoint and every page, for six actors, in one table.

The actors (columns), in one seeded world (``conftest.world``):

- ``anon``:  not signed in;
- ``buyer``: bob, who bought the owner's listing at ε 1 and holds its purchase P and release R;
- ``other_buyer``: carol, a buyer with a purchase of her own (on the other owner's listing);
- ``owner``: olivia, whose dataset D and listing L these are;
- ``other_owner``: oscar, an owner with his own dataset and listing (bought by carol);
- ``staff``: sam, staff and superuser (not an owner).

Each row is one request; each cell the status that actor gets. The codes:

- ``302L``: redirected to log in at ``/accounts/login/?next=…`` (pages needing a login);
- ``302A``: redirected to the admin's log-in page ``/admin/login/?next=…``;
- ``302``:  any other redirect (a form that worked);
- anything else: that status exactly.

The rules the table shows: anonymous API calls needing authentication are 401;
anonymous pages needing a login are 302L; another user's purchase, release,
dataset and owner listing do not exist for them (404, never 403); signed-in
non-owners on owner pages get 403; only staff reach the admin.

The API is called with each actor's token (``Authorization: Bearer …``), the
pages with a signed-in session. Every request that writes runs in a savepoint
rolled back afterwards, so each cell sees the same world.

Beside the statuses, every response body, for every actor, is searched for what
must never leave the server: the dataset's raw cells, the listing's true answer,
the stored noise, and (for everyone but the buyer) the buyer's released values.
"""

from __future__ import annotations

import html
import json
import re
import uuid
from dataclasses import dataclass

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from django.test import Client
from rest_framework.test import APIClient

from market.catalog.models import Listing
from market.trading.models import Purchase

from .conftest import ACTORS, PASSWORD, noise_values, noise_vectors

pytestmark = pytest.mark.django_db


@dataclass(frozen=True)
class Row:
    method: str
    path: str  # {L} {D} {P} {R}: the owner's listing and dataset, the buyer's purchase and release
    expect: str  # one code per actor, in the order of ACTORS
    body: str | None = None  # the name of a payload below (a function of the world and the actor)
    api: bool = False

    @property
    def id(self) -> str:
        return f"{self.method} {self.path}" + (f" [{self.body}]" if self.body else "")


def api(method, path, expect, body=None):
    return Row(method, path, expect, body, api=True)


def page(method, path, expect, body=None):
    return Row(method, path, expect, body)


# fmt: off
#                                                            anon  buyer other owner o-own staff
API = [
    api("POST",   "/api/v1/auth/token/",                    "400  200   200   200   200   200", "credentials"),
    api("GET",    "/api/v1/listings/",                      "200  200   200   200   200   200"),
    api("GET",    "/api/v1/listings/{L}/",                  "200  200   200   200   200   200"),
    # the owner's 400s: "you own this listing: owners do not buy their own data"
    api("GET",    "/api/v1/listings/{L}/quote/?epsilon=2",  "200  200   200   400   200   200"),
    # public: the profile depends on the statistics, the relation and the level only
    api("GET",    "/api/v1/listings/{L}/privacy-profile/?epsilon=2", "200  200   200   200   200   200"),
    # a synthetic-data listing's delivered quality: its owner's only (tests/marketplace/test_synthetic_listing.py);
    # a listing of statistics has none, even for its owner
    api("GET",    "/api/v1/listings/{L}/quality/",          "401  404   404   404   404   404"),
    # creating a listing on D: non-owners 403 (role_required), the other owner 404 (not his)
    api("POST",   "/api/v1/listings/",                      "401  403   403   201   404   403", "listing"),
    # comparing mechanisms before listing: owners only, on their own datasets (another owner's: not found)
    api("POST",   "/api/v1/listings/compare/",              "401  403   403   200   404   403", "compare"),
    # an owner manages their listing: non-owners 403 (role_required), the other owner 404 (not his)
    api("PATCH",  "/api/v1/listings/{L}/",                  "401  403   403   200   404   403", "listing_edit"),
    api("POST",   "/api/v1/listings/{L}/close/",            "401  403   403   200   404   403", "close"),
    api("POST",   "/api/v1/listings/{L}/reopen/",           "401  403   403   200   404   403"),
    api("PUT",    "/api/v1/listings/{L}/",                  "401  405   405   405   405   405", "listing"),
    api("DELETE", "/api/v1/listings/{L}/",                  "401  405   405   405   405   405"),
    api("GET",    "/api/v1/datasets/",                      "401  200   200   200   200   200"),
    api("POST",   "/api/v1/datasets/",                      "401  403   403   202   202   403", "dataset"),
    # a dataset's status, columns and summaries: its owner's only
    api("GET",    "/api/v1/datasets/{D}/",                  "401  404   404   200   404   404"),
    # its listings fix its columns: the owner is told so (400)
    api("PATCH",  "/api/v1/datasets/{D}/",                  "401  404   404   400   404   404", "columns"),
    # removing one: its owner's only (204); anyone else's is not found
    api("DELETE", "/api/v1/datasets/{D}/",                  "401  404   404   204   404   404"),
    # a budget is changed by its owner (staff change it in the admin): anyone else's is not found
    api("POST",   "/api/v1/datasets/{D}/budget/",           "401  404   404   200   404   404", "budget"),
    # the owner's what-ifs on a dataset: anyone else's is not found
    api("GET",    "/api/v1/datasets/{D}/composition/?delta=1e-5&eps=0.2", "401  404   404   200   404   404"),
    api("GET",    "/api/v1/datasets/{D}/fits/?ceiling=0.5",   "401  404   404   200   404   404"),
    api("POST",   "/api/v1/datasets/{D}/sampled-sensitivity/", "401  404   404   200   404   404", "sensitivity"),
    # resumable uploads ({U}: the owner's, complete): non-owners may not open or send one (403); another
    # owner's does not exist for anyone else (404). The part is the last one sent again: answered as it stands
    api("POST",   "/api/v1/uploads/",                       "401  403   403   201   201   403", "upload_open"),
    api("GET",    "/api/v1/uploads/{U}/",                   "401  404   404   200   404   404"),
    api("PUT",    "/api/v1/uploads/{U}/",                   "401  403   403   200   404   403", "upload_part"),
    api("DELETE", "/api/v1/uploads/{U}/",                   "401  404   404   204   404   404"),
    api("POST",   "/api/v1/uploads/{U}/dataset/",           "401  403   403   202   404   403", "upload_dataset"),
    api("GET",    "/api/v1/purchases/",                     "401  200   200   200   200   200"),
    api("POST",   "/api/v1/purchases/",                     "401  202   202   400   202   202", "purchase"),
    api("GET",    "/api/v1/purchases/{P}/",                 "401  200   404   404   404   404"),
    api("DELETE", "/api/v1/purchases/{P}/",                 "401  405   405   405   405   405"),
    api("GET",    "/api/v1/purchases/not-a-purchase/",      "401  404   404   404   404   404"),
    api("GET",    "/api/v1/releases/",                      "401  200   200   200   200   200"),
    api("GET",    "/api/v1/releases/{R}/",                  "401  200   404   404   404   404"),
    # a microdata release's records ({MR}): its buyer's only; a release of statistics has none
    api("GET",    "/api/v1/releases/{MR}/records.csv",      "401  200   404   404   404   404"),
    api("GET",    "/api/v1/releases/{MR}/records.parquet",  "401  200   404   404   404   404"),
    api("GET",    "/api/v1/releases/{R}/records.csv",       "401  404   404   404   404   404"),
    # a synthetic-data release's rows: its buyer's only (tests/marketplace/test_synthetic_listing.py); other
    # releases have none
    api("GET",    "/api/v1/releases/{R}/rows.csv",          "401  404   404   404   404   404"),
    api("GET",    "/api/v1/releases/{MR}/rows.parquet",     "401  404   404   404   404   404"),
    # a microdata listing on {MD}: non-owners 403, the other owner 404 (not his)
    api("POST",   "/api/v1/listings/microdata/",            "401  403   403   201   404   403", "microdata"),
    api("DELETE", "/api/v1/releases/{R}/",                  "401  405   405   405   405   405"),
    api("GET",    "/api/v1/wallet/",                        "401  200   200   200   200   200"),
    api("GET",    "/api/v1/wallet/statement/",              "401  200   200   200   200   200"),
    api("POST",   "/api/v1/wallet/top-up/",                 "401  201   201   201   201   201", "top_up"),
    api("GET",    "/api/v1/wallet/top-up/",                 "401  405   405   405   405   405"),
    # an owner's earnings and payouts: owners only (each reads their own)
    api("GET",    "/api/v1/earnings/",                      "401  403   403   200   200   403"),
    api("GET",    "/api/v1/earnings/statement/",            "401  403   403   200   200   403"),
    api("GET",    "/api/v1/earnings/payouts/",              "401  403   403   200   200   403"),
    api("POST",   "/api/v1/earnings/payouts/",              "401  403   403   201   201   403", "payout"),
    # API keys: {K} is the buyer's key; another user's key does not exist for them
    api("GET",    "/api/v1/keys/",                          "401  200   200   200   200   200"),
    api("POST",   "/api/v1/keys/",                          "401  201   201   201   201   201", "api_key"),
    api("GET",    "/api/v1/keys/{K}/",                      "401  200   404   404   404   404"),
    api("PUT",    "/api/v1/keys/{K}/",                      "401  405   405   405   405   405", "api_key"),
    api("DELETE", "/api/v1/keys/{K}/",                      "401  204   404   404   404   404"),
    api("POST",   "/api/v1/keys/{K}/rotate/",               "401  201   404   404   404   404", "rotate"),
    # webhooks: {W} is the buyer's endpoint, {WD} a delivery to it; another user's do not exist for them
    api("GET",    "/api/v1/webhooks/endpoints/",            "401  200   200   200   200   200"),
    api("POST",   "/api/v1/webhooks/endpoints/",            "401  201   201   201   201   201", "webhook"),
    api("GET",    "/api/v1/webhooks/endpoints/{W}/",        "401  200   404   404   404   404"),
    api("PATCH",  "/api/v1/webhooks/endpoints/{W}/",        "401  200   404   404   404   404", "webhook_edit"),
    api("PUT",    "/api/v1/webhooks/endpoints/{W}/",        "401  405   405   405   405   405", "webhook"),
    api("DELETE", "/api/v1/webhooks/endpoints/{W}/",        "401  204   404   404   404   404"),
    api("POST",   "/api/v1/webhooks/endpoints/{W}/roll-secret/", "401  200   404   404   404   404"),
    api("POST",   "/api/v1/webhooks/endpoints/{W}/test/",   "401  202   404   404   404   404"),
    api("GET",    "/api/v1/webhooks/deliveries/",           "401  200   200   200   200   200"),
    api("GET",    "/api/v1/webhooks/deliveries/{WD}/",      "401  200   404   404   404   404"),
    api("POST",   "/api/v1/webhooks/deliveries/{WD}/replay/", "401  202   404   404   404   404"),
    api("GET",    "/api/v1/no-such-endpoint/",              "404  404   404   404   404   404"),
    api("GET",    "/api/schema/",                           "200  200   200   200   200   200"),
    api("GET",    "/api/docs/",                             "200  200   200   200   200   200"),
]

PAGES = [
    page("GET",  "/",                                       "200  200   200   200   200   200"),
    page("GET",  "/signup/",                                "200  200   200   200   200   200"),
    page("GET",  "/how-it-works/",                          "200  200   200   200   200   200"),
    page("POST", "/how-it-works/",                          "405  405   405   405   405   405"),
    page("GET",  "/favicon.ico",                            "301  301   301   301   301   301"),
    # scripts/run.sh's readiness probe: 404 for everyone unless the run command gave the server a token
    page("GET",  "/-/run-token",                            "404  404   404   404   404   404"),
    page("POST", "/signup/",                                "302  302   302   302   302   302", "signup"),
    page("GET",  "/listings/{L}/",                          "200  200   200   200   200   200"),
    page("GET",  "/listings/{L}/?epsilon=2",                "200  200   200   400   200   200"),
    page("POST", "/listings/{L}/buy/",                      "302L 302   302   400   302   302", "buy"),
    page("GET",  "/listings/{L}/buy/",                      "302L 405   405   405   405   405"),
    page("GET",  "/purchases/{P}/",                         "302L 200   404   404   404   404"),
    page("GET",  "/purchases/{P}/status/",                  "302L 200   404   404   404   404"),
    page("GET",  "/library/",                               "302L 200   200   200   200   200"),
    page("GET",  "/library/releases/{R}.csv",               "302L 200   404   404   404   404"),
    page("GET",  "/library/releases/{R}.json",              "302L 200   404   404   404   404"),
    page("GET",  "/library/releases/{R}.xml",               "302L 404   404   404   404   404"),
    # a microdata release's records ({MR}): its buyer's only; a release of statistics has none
    page("GET",  "/library/releases/{MR}/records.csv",      "302L 200   404   404   404   404"),
    page("GET",  "/library/releases/{MR}/records.parquet",  "302L 200   404   404   404   404"),
    page("GET",  "/library/releases/{MR}/records.json",     "302L 404   404   404   404   404"),
    page("GET",  "/library/releases/{R}/records.csv",       "302L 404   404   404   404   404"),
    page("GET",  "/library/releases/{R}/rows.csv",          "302L 404   404   404   404   404"),
    page("POST", "/wallet/top-up/",                         "302L 302   302   302   302   302", "top_up"),
    page("GET",  "/wallet/top-up/",                         "302L 405   405   405   405   405"),
    # the owner's pages
    page("GET",  "/owner/",                                 "302L 403   403   200   200   403"),
    page("GET",  "/owner/datasets/new/",                    "302L 403   403   200   200   403"),
    page("POST", "/owner/datasets/new/",                    "302L 403   403   302   302   403", "dataset"),
    page("GET",  "/owner/datasets/{D}/budget/",             "302L 403   403   200   404   403"),
    page("GET",  "/owner/datasets/{D}/columns/",            "302L 403   403   200   404   403"),
    page("POST", "/owner/datasets/{D}/columns/",            "302L 403   403   200   404   403", "columns_form"),
    page("GET",  "/owner/datasets/{D}/status/",             "302L 403   403   200   404   403"),
    page("POST", "/owner/datasets/{D}/budget/",             "302L 403   403   302   404   403", "budget_form"),
    page("POST", "/owner/datasets/{D}/remove/",             "302L 403   403   302   404   403"),
    page("GET",  "/owner/datasets/{D}/budget/?delta=1e-5&eps=0.2", "302L 403   403   200   404   403"),
    page("POST", "/owner/datasets/{D}/sampled-sensitivity/", "302L 403   403   200   404   403", "sensitivity"),
    page("GET",  "/owner/listings/new/",                    "302L 403   403   200   200   403"),
    page("GET",  "/owner/listings/new/?dataset={D}",        "302L 403   403   200   404   403"),
    # posting another owner's dataset id: the form says "Choose one of your datasets." and stores nothing
    page("POST", "/owner/listings/new/",                    "302L 403   403   302   200   403", "listing_form"),
    page("GET",  "/owner/listings/{L}/",                    "302L 403   403   200   404   403"),
    page("GET",  "/owner/listings/new-microdata/",          "302L 403   403   200   200   403"),
    page("GET",  "/owner/listings/new-microdata/?dataset={MD}", "302L 403   403   200   404   403"),
    # posting another owner's dataset id: the form says "Choose one of your datasets." and stores nothing
    page("POST", "/owner/listings/new-microdata/",          "302L 403   403   302   400   403", "microdata_form"),
    page("GET",  "/owner/earnings/",                        "302L 403   403   200   200   403"),
    page("POST", "/owner/earnings/",                        "302L 403   403   302   302   403", "payout"),
    page("POST", "/owner/listings/{L}/edit/",               "302L 403   403   302   404   403", "listing_edit"),
    page("POST", "/owner/listings/{L}/price/",              "302L 403   403   302   404   403", "price_form"),
    page("POST", "/owner/listings/{L}/close/",              "302L 403   403   302   404   403", "close"),
    page("POST", "/owner/listings/{L}/reopen/",             "302L 403   403   302   404   403"),
    page("GET",  "/owner/listings/{L}/close/",              "405  405   405   405   405   405"),
    page("GET",  "/owner/trust/",                           "302L 403   403   200   200   403"),
    page("GET",  "/owner/trust/?listing={L}",               "302L 403   403   200   404   403"),
    page("POST", "/owner/trust/settings/",                  "302L 403   403   302   302   403", "trust_settings"),
    page("GET",  "/owner/trust/settings/",                  "302L 403   403   405   405   403"),
    # capping another owner's listing: "Choose among your listings." and nothing changes
    page("POST", "/owner/trust/listings/",                  "302L 403   403   302   200   403", "trust_listings"),
    page("POST", "/owner/trust/tiers/",                     "302L 403   403   302   302   403", "trust_tiers"),
    page("POST", "/owner/trust/tiers/buyers/",              "302L 403   403   302   302   403", "tier_members"),
    page("POST", "/owner/trust/graph/",                     "302L 403   403   302   302   403", "edges"),
    page("POST", "/owner/trust/graph/buyers/",              "302L 403   403   302   302   403", "node_members"),
    # accounts
    page("GET",  "/accounts/login/",                        "200  200   200   200   200   200"),
    page("POST", "/accounts/login/",                        "200  302   302   302   302   302", "login"),
    page("POST", "/accounts/logout/",                       "302  302   302   302   302   302"),
    page("GET",  "/accounts/logout/",                       "405  405   405   405   405   405"),
    page("GET",  "/accounts/password/",                     "302L 200   200   200   200   200"),
    page("POST", "/accounts/password/",                     "302L 200   200   200   200   200", "wrong_password"),
    page("GET",  "/accounts/password/done/",                "302L 200   200   200   200   200"),
    page("GET",  "/account/",                               "302L 200   200   200   200   200"),
    page("POST", "/account/roles/",                         "302L 302   302   302   302   302", "role"),
    # refused or done, back to the account page with the reason (an only role, open listings)
    page("POST", "/account/roles/drop/",                    "302L 302   302   302   302   302", "role"),
    page("POST", "/account/keys/",                          "302L 302   302   302   302   302", "key_form"),
    page("POST", "/account/keys/{K}/revoke/",               "302L 302   404   404   404   404"),
    page("POST", "/account/keys/{K}/rotate/",               "302L 302   404   404   404   404"),
    page("POST", "/account/webhooks/",                      "302L 302   302   302   302   302", "webhook_form"),
    page("POST", "/account/webhooks/{W}/roll/",             "302L 302   404   404   404   404"),
    page("POST", "/account/webhooks/{W}/delete/",           "302L 302   404   404   404   404"),
    page("POST", "/account/webhooks/deliveries/{WD}/replay/", "302L 302   404   404   404   404"),
    # the admin: staff only
    page("GET",  "/admin/",                                 "302A 302A  302A  302A  302A  200"),
    page("GET",  "/admin/login/",                           "200  200   200   200   200   302"),
    page("GET",  "/admin/accounts/user/",                   "302A 302A  302A  302A  302A  200"),
    page("GET",  "/admin/catalog/dataset/",                 "302A 302A  302A  302A  302A  200"),
    page("GET",  "/admin/catalog/dataset/{DK}/change/",     "302A 302A  302A  302A  302A  200"),  # staff's admin: the pk
    page("GET",  "/admin/catalog/listing/{L}/change/",      "302A 302A  302A  302A  302A  200"),
    page("GET",  "/admin/ledger/transfer/",                 "302A 302A  302A  302A  302A  200"),
    page("GET",  "/admin/ledger/transfer/add/",             "302A 302A  302A  302A  302A  200"),
    page("GET",  "/admin/ledger/payout/",                   "302A 302A  302A  302A  302A  200"),
    # noise points and releases have no admin: they are not reachable even by staff
    page("GET",  "/admin/releases/noisepoint/",             "302A 302A  302A  302A  302A  404"),
    page("GET",  "/admin/releases/release/",                "302A 302A  302A  302A  302A  404"),
]
# fmt: on

MATRIX = API + PAGES


# --- the requests' payloads


def _csv_file():
    return SimpleUploadedFile("more.csv", b"height,weight\n170,60\n182,81\n", content_type="text/csv")


def payload(name, world, actor):
    L, D = world.listing.pk, world.dataset.public_id
    user = world.user(actor)
    if name in ("credentials", "login"):
        return {"username": user.username, "password": PASSWORD} if user else {"username": "bob", "password": "wrong"}
    if name == "signup":
        return {"username": f"new-{actor}", "email": "", "role": "buyer", "password1": "yet-another-pass-3",
                "password2": "yet-another-pass-3"}
    if name == "wrong_password":
        return {"old_password": "not-it", "new_password1": "another-long-pass-2", "new_password2": "another-long-pass-2"}
    if name == "listing":
        return {"dataset": D, "title": "Again", "statistics": [{"kind": "count"}], "ceiling": "1", "price_per_epsilon": "1.00"}
    if name == "dataset":
        return {"name": "more", "description": "", "total_budget": "100", "file": _csv_file()}
    if name == "budget":
        return {"budget": "150", "reason": "matrix"}
    if name == "upload_open":
        return {"size": 1000, "filename": "more.csv"}
    if name == "upload_part":
        return world.upload_parts[-1]
    if name == "upload_dataset":
        return {"name": "more", "budget": "10"}
    if name == "columns":
        return {"columns": [{"name": "age", "missing": "exclude"}]}
    if name == "columns_form":
        return {"type-0": "integer", "missing-0": "none"}
    if name == "sensitivity":
        return {"kind": "mean", "column": "age", "gamma2": 0.9, "pairs": 20, "subsample": 50}
    if name == "budget_form":
        return {"total_budget": "150", "reason": "matrix"}
    if name == "compare":
        return {"dataset": D, "statistics": [{"kind": "count"}], "ceiling": "1"}
    if name == "purchase":
        return {"listing": L, "epsilon": "2"}
    if name == "buy":
        return {"epsilon": "2", "idempotency_key": uuid.uuid4().hex}
    if name == "top_up":
        return {"amount": "5"}
    if name == "payout":
        return {"amount": "0.01"}
    if name == "listing_form":
        return {
            "dataset": D, "title": "Again", "description": "", "ceiling": "1", "price_kind": "linear",
            "price_per_epsilon": "1.00", "stats-TOTAL_FORMS": "1", "stats-INITIAL_FORMS": "0",
            "stats-MIN_NUM_FORMS": "0", "stats-MAX_NUM_FORMS": "20",
            "stats-0-kind": "count", "stats-0-column": "", "stats-0-lower": "", "stats-0-upper": "", "stats-0-bins": "",
        }
    if name in ("microdata", "microdata_form"):
        spec = {"columns": [{"column": "colour", "categories": ["red"], "categories_public": True}], "levels": ["1"]}
        if name == "microdata":
            return {"dataset": world.md_dataset.public_id, "title": "Again", "microdata": spec, "price_per_epsilon": "1.00"}
        return {"dataset": world.md_dataset.public_id, "title": "Again", "levels": "1", "price_kind": "linear",
                "price_per_epsilon": "1.00", "col_0_include": "on", "col_0_categories": "red",
                "col_0_categories_public": "on"}
    if name == "listing_edit":
        return {"title": "Renamed", "description": "Now described."}
    if name == "price_form":
        return {"price_kind": "linear", "price_per_epsilon": "2.00"}
    if name == "close":
        return {"reason": "matrix"}
    if name == "api_key":
        return {"name": "matrix"}
    if name == "rotate":
        return {"grace_seconds": 60}
    if name == "role":
        return {"role": "owner"}
    if name in ("webhook", "webhook_form"):
        return {"url": "http://127.0.0.1:9/hook", "events": ["purchase.released"]}
    if name == "webhook_edit":
        return {"description": "matrix"}
    if name == "key_form":
        return {"name": "matrix", "expires_in_days": "30"}
    if name == "trust_settings":
        return {"mode": "tiers", "metric": "shortest", "home": "", "map_kind": "exp", "lam": "0.5", "unknown_distance": "3"}
    if name == "trust_listings":
        return {"listings": [L]}
    if name == "trust_tiers":
        return {"tiers-TOTAL_FORMS": "1", "tiers-INITIAL_FORMS": "0", "tiers-MIN_NUM_FORMS": "0",
                "tiers-MAX_NUM_FORMS": "20", "tiers-0-name": "partner", "tiers-0-distance": "1"}
    if name == "tier_members":
        return {"tier-members": ""}
    if name == "edges":
        return {"file": SimpleUploadedFile("edges.csv", b"home,partner\npartner,far,2\n", content_type="text/csv")}
    if name == "node_members":
        return {"node-members": ""}
    raise AssertionError(f"no payload {name}")


def client_for(world, tokens, actor, *, api: bool):
    user = world.user(actor)
    if api:
        client = APIClient()
        if user is not None:
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {tokens[actor]}")
        return client
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def send(world, tokens, actor, row):
    K = world.people["buyer"].api_keys.order_by("created_at").first().pk if "{K}" in row.path else None
    path = row.path.format(
        L=world.listing.pk, D=world.dataset.public_id, DK=world.dataset.pk, P=world.purchase.pk, R=world.release.public_id, K=K,
        W=world.endpoint.pk, WD=world.delivery.pk, MR=world.md_release.public_id, MD=world.md_dataset.public_id,
        U=world.upload.public_id,
    )
    client = client_for(world, tokens, actor, api=row.api)
    call = getattr(client, row.method.lower())
    args = [] if row.body is None else [payload(row.body, world, actor)]
    # the API takes JSON, except the dataset upload (multipart); the pages take forms
    kwargs = {"format": "json"} if row.api and row.body not in (None, "dataset", "upload_part") else {}
    if row.body == "upload_part":  # raw bytes, placed by Content-Range
        first, last = world.upload_parts
        kwargs = {"content_type": "application/octet-stream",
                  "HTTP_CONTENT_RANGE": f"bytes {len(first)}-{len(first) + len(last) - 1}/{len(first) + len(last)}"}
    with transaction.atomic():  # every cell sees the same world
        response = call(path, *args, **kwargs)
        transaction.set_rollback(True)
    return response


def observed(response) -> str:
    if response.status_code != 302:
        return str(response.status_code)
    location = response["Location"]
    if location.startswith("/accounts/login/?next="):
        return "302L"
    if location.startswith("/admin/login/?next="):
        return "302A"
    return "302"


def body_text(response) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode(errors="replace")
    return html.unescape(response.content.decode(errors="replace"))


# --- what must never be in a response


def _number_pattern(text: str) -> re.Pattern:
    """``text`` as a number on its own: not inside a longer number or a word (e.g. a token);
    a comma may stand either side (a CSV row, a JSON list)."""
    return re.compile(rf"(?<![\w.]){re.escape(text)}(?![\w]|\.\d)")


def _significant(text: str) -> int:
    return len(text.lstrip("-").replace(".", "").replace(",", "").lstrip("0").rstrip("0"))


def _renderings(value: float) -> set[str]:
    """The ways a float is written out on the site: repr, 6 significant digits, 2 decimals
    (the pages' ``floatformat:2``), a whole number with and without thousands separators.
    Only those with 5 significant digits or more are searched for: shorter ones (a histogram
    count of 12, a value of 2.125) turn up on any page by chance."""
    value = float(value)
    shown = {repr(value), f"{value:.6g}", f"{value:.2f}"}
    if value.is_integer():
        shown |= {str(int(value)), f"{int(value):,}"}
    return {s for s in shown if _significant(s) >= 5}


def _patterns(values) -> list[re.Pattern]:
    return [_number_pattern(s) for v in values for s in sorted(_renderings(v))]


def _noise_patterns(listing) -> list[re.Pattern]:
    """Float noise: each value (they have many digits). Lattice noise is small whole numbers that
    turn up anywhere by chance: each point's whole vector, as a list or a row (commas, spaces)."""
    if listing.mechanism != "lattice":
        return _patterns(noise_values(listing))
    return [
        re.compile(r"(?<![\w.])" + r"\s*,?\s*".join(re.escape(str(v)) for v in vector) + r"(?![\w]|\.\d)")
        for vector in noise_vectors(listing)
    ]


def secrets(world) -> dict[str, list[re.Pattern]]:
    """The patterns that no body may contain, by what they reveal."""
    if getattr(world, "_secrets", None) is None:
        income = sorted({row[1] for row in world.rows}, key=float)
        low, high = income[0], income[-1]
        # the owner's own listing form shows each column's min and max: never the cells in between
        cells = {income[len(income) * k // 8] for k in range(1, 8)} | {row[1] for row in world.rows[:5]}
        cells -= {low, high}
        answer = world.listing.true_answer()
        count, age_sum = answer[0], answer[1]
        assert count == len(world.rows) == world.dataset.row_count
        readings = world.release.values
        world._secrets = {
            "raw cells": [_number_pattern(c) for c in sorted(cells)],
            "column min/max": [_number_pattern(low), _number_pattern(high)],
            # the count statistic's true answer is the dataset's exact size
            "exact record count": _patterns([count]),
            # the sum, the histogram's counts, and the mean derived from the sum and the count
            "true answer": _patterns([*answer[1:], age_sum / count]),
            "stored noise": _noise_patterns(world.listing),
            # a released value that happens to equal the exact count (the count's noise drew 0, as a
            # discrete Laplace draw often does) reveals nothing more than the count: it is looked for
            # as the exact record count, with that figure's exceptions
            "buyer's release": _patterns([v for v in readings if v != count] + [readings[1] / readings[0]]),
        }
        world._count_released_exactly = count in readings
    return world._secrets


#: the dataset an owner makes of their resumable upload (its answer is the new dataset, processed at once here)
OWNERS_NEW_DATASET = ("/api/v1/uploads/{U}/dataset/",)
#: where the owner sees their own dataset's exact number of records
OWNERS_OWN_DATASET = ("/owner/", "/api/v1/datasets/", *OWNERS_NEW_DATASET)
#: where the owner sees their own dataset's column summaries (min, max)
OWNERS_SUMMARIES = ("/owner/listings/new/", "/owner/datasets/", "/api/v1/datasets/", *OWNERS_NEW_DATASET)


def leaks(world, actor, row, text: str) -> list[str]:
    found = []
    for what, patterns in secrets(world).items():
        if what == "buyer's release" and actor == "buyer":
            continue
        if what == "column min/max" and actor == "owner" and row.path.startswith(OWNERS_SUMMARIES):
            continue  # the owner's own listing form and dataset: each column's min and max, to choose bounds by
        if what == "exact record count" and actor == "owner" and row.path.startswith(OWNERS_OWN_DATASET):
            continue  # the owner's dashboard, listing form and dataset list: their own dataset's size
        if what == "exact record count" and actor == "buyer" and world._count_released_exactly:
            continue  # the buyer's own release holds that very figure: their pages show it
        found += [f"{what}: {p.pattern}" for p in patterns if p.search(text)]
    return found


# --- the tests


def test_the_matrix_names_every_route():
    """Every route of market/api/urls.py, market/web/urls.py, owner_urls.py (trust too), the
    accounts and the admin has a row: a new route without one makes this fail."""
    from django.urls import URLPattern, URLResolver, get_resolver

    def walk(patterns, prefix=""):
        for p in patterns:
            if isinstance(p, URLResolver):
                if "admin" in str(p.pattern):
                    yield "admin/"
                    continue
                yield from walk(p.url_patterns, prefix + str(p.pattern))
            elif isinstance(p, URLPattern):
                yield prefix + str(p.pattern)

    routes = {r for r in walk(get_resolver().url_patterns) if r != "^api/"}

    def as_route(path: str) -> str:
        path = path.split("?")[0].lstrip("/")
        path = re.sub(r"\{(?:[LDRU]|MR|MD)\}", "0", path).replace("{P}", "00000000-0000-0000-0000-000000000000")
        return path

    from django.urls import resolve

    covered = set()
    for row in MATRIX:
        match = resolve("/" + as_route(row.path))
        covered.add(match.route)
    named = {re.sub(r"<[^>]+>", "*", r) for r in routes}
    reached = {re.sub(r"<[^>]+>", "*", r) for r in covered}
    missing = {r for r in named if r != "admin/" and r not in reached}
    assert not missing, f"routes without a row in the matrix: {sorted(missing)}"
    assert any(r.path.startswith("/admin/") for r in MATRIX)


@pytest.mark.parametrize("row", MATRIX, ids=[row.id for row in MATRIX])
def test_authorization_matrix(row, world, tokens):
    expected = dict(zip(ACTORS, row.expect.split()))
    assert len(expected) == len(ACTORS) == len(row.expect.split())
    got, leaked = {}, {}
    for actor in ACTORS:
        response = send(world, tokens, actor, row)
        got[actor] = observed(response)
        found = leaks(world, actor, row, body_text(response))
        if found:
            leaked[actor] = found
    assert got == expected, f"{row.id}: got {got}"
    assert not leaked, f"{row.id}: secrets in the body: {leaked}"


# --- the detectors above do find what they look for (so a clean body means something)


def test_the_secret_detectors_find_the_secrets_where_they_are_allowed(world, tokens):
    """The buyer's own release, as the buyer downloads it, matches the release patterns; the owner's
    own dataset review page shows the column min/max and the listing form the dataset's size (the
    form itself shows no value or range of the data); the stored values match the
    noise patterns. Without this, a detector that never matches would pass the matrix."""
    found = secrets(world)
    buyer = client_for(world, tokens, "buyer", api=False)
    download = body_text(buyer.get(f"/library/releases/{world.release.public_id}.json"))
    # lattice counts and bins are short whole numbers (not searched for: they turn up anywhere);
    # the mean, read off the released sum and count, has many digits
    assert any(p.search(download) for p in found["buyer's release"])
    shown = body_text(buyer.get(f"/purchases/{world.purchase.pk}/"))  # values at their meaningful precision
    # its whole-number count is searched for as the exact record count when the count's noise drew 0
    released = found["buyer's release"] + (found["exact record count"] if world._count_released_exactly else [])
    assert any(p.search(shown) for p in released)
    api_release = body_text(client_for(world, tokens, "buyer", api=True).get(f"/api/v1/releases/{world.release.public_id}/"))
    assert any(p.search(api_release) for p in found["buyer's release"])

    owner = client_for(world, tokens, "owner", api=False)
    form = body_text(owner.get(f"/owner/listings/new/?dataset={world.dataset.public_id}"))
    review = body_text(owner.get(f"/owner/datasets/{world.dataset.public_id}/columns/"))
    assert all(p.search(review) for p in found["column min/max"])
    assert not any(p.search(form) for p in found["column min/max"])  # never beside the bound inputs
    assert any(p.search(form) for p in found["exact record count"])
    assert not any(p.search(form) for p in found["raw cells"])
    income = sorted(float(row[1]) for row in world.rows)
    assert f"{income[0]:g}" in review or repr(income[0]) in review

    # each secret has at least one searchable rendering
    assert all(found[what] for what in found), {what: len(p) for what, p in found.items()}
    vectors = noise_vectors(world.listing)
    assert vectors and all(len(v) == world.listing.dim for v in vectors)
    text_of_noise = json.dumps(vectors)
    assert sum(bool(p.search(text_of_noise)) for p in found["stored noise"]) >= len(vectors)
    raw = world.csv_bytes.decode()  # the rows as uploaded, e.g. "76,76490.69,3"
    assert all(p.search(raw) for p in found["raw cells"])
    as_json = json.dumps([[float(cell) for cell in row] for row in world.rows[:5]])  # or as a JSON list
    assert sum(bool(p.search(as_json)) for p in found["raw cells"]) >= 4


# --- lists hold one's own things only


def test_every_list_holds_only_the_actors_own_things(world, tokens):
    P, OP = str(world.purchase.pk), str(world.other_purchase.pk)
    R, OR = world.release.public_id, world.other_purchase.release.public_id
    D, OD = world.dataset.public_id, world.other_dataset.public_id
    MR, MD = world.md_release.public_id, world.md_dataset.public_id  # the buyer's microdata release, on MD
    MP, ML = str(world.md_release.purchase_id), world.md_release.listing_id
    expected = {
        #               purchases  releases   datasets   wallet statement amounts
        "buyer":       ({P, MP},   {R, MR},   set(),     {"500.00", "-10.00", "-1.00"}),
        "other_buyer": ({OP},      {OR},      set(),     {"500.00", "-1.00"}),
        "owner":       (set(),     set(),     {D, MD},   {"500.00"}),
        "other_owner": (set(),     set(),     {OD},      {"500.00"}),
        "staff":       (set(),     set(),     set(),     {"500.00"}),
    }
    for actor, (purchases, releases, datasets, amounts) in expected.items():
        client = client_for(world, tokens, actor, api=True)
        got = (
            {item["id"] for item in client.get("/api/v1/purchases/").json()["results"]},
            {item["id"] for item in client.get("/api/v1/releases/").json()["results"]},
            {item["id"] for item in client.get("/api/v1/datasets/").json()["results"]},
            {item["amount"] for item in client.get("/api/v1/wallet/statement/").json()["results"]},
        )
        assert got == (purchases, releases, datasets, amounts), actor
        listed = {item["id"]: item["your_level"] for item in client.get("/api/v1/listings/").json()["results"]}
        assert listed == {
            world.listing.pk: "1.0000" if actor == "buyer" else "0.0000",
            world.other_listing.pk: "1.0000" if actor == "other_buyer" else "0.0000",
            ML: "1.0000" if actor == "buyer" else "0.0000",
        }, actor

        page = body_text(client_for(world, tokens, actor, api=False).get("/library/"))
        assert (f"/library/releases/{R}.csv" in page) == (actor == "buyer"), actor
        assert (f"/library/releases/{OR}.csv" in page) == (actor == "other_buyer"), actor
        assert (f"/library/releases/{MR}/records.csv" in page) == (actor == "buyer"), actor
    for actor, mine, theirs in (("owner", world.listing, world.other_listing), ("other_owner", world.other_listing, world.listing)):
        page = body_text(client_for(world, tokens, actor, api=False).get("/owner/"))
        assert f"/owner/listings/{mine.pk}/" in page and mine.title in page
        assert f"/owner/listings/{theirs.pk}/" not in page and theirs.title not in page


# --- 404 for someone else's is the same 404 as for nothing at all


#: the CSRF token in a page's forms (the 404 page's header has the log-out form): random each time
CSRF_TOKEN = re.compile(r'name="csrfmiddlewaretoken" value="[^"]*"')


@pytest.mark.parametrize(
    "actor,method,path,nothing,api,data",
    [
        ("other_buyer", "get", "/api/v1/purchases/{P}/", "/api/v1/purchases/00000000-0000-4000-8000-000000000000/", True, None),
        ("owner", "get", "/api/v1/purchases/{P}/", "/api/v1/purchases/00000000-0000-4000-8000-000000000000/", True, None),
        ("other_buyer", "get", "/api/v1/releases/{R}/", "/api/v1/releases/rel_0000000000000000000000/", True, None),
        ("staff", "get", "/api/v1/releases/{R}/", "/api/v1/releases/rel_0000000000000000000000/", True, None),
        ("other_buyer", "get", "/purchases/{P}/", "/purchases/00000000-0000-4000-8000-000000000000/", False, None),
        ("other_buyer", "get", "/library/releases/{R}.csv", "/library/releases/rel_0000000000000000000000.csv", False, None),
        ("other_buyer", "get", "/library/releases/{MR}/records.csv",
         "/library/releases/rel_0000000000000000000000/records.csv", False, None),
        ("other_owner", "get", "/owner/listings/{L}/", "/owner/listings/987654/", False, None),
        ("other_owner", "get", "/owner/listings/new/?dataset={D}", "/owner/listings/new/?dataset=ds_0000000000000000000000", False, None),
        ("other_owner", "get", "/owner/trust/?listing={L}", "/owner/trust/?listing=987654", False, None),
    ],
)
def test_someone_elses_thing_is_indistinguishable_from_nothing(world, tokens, actor, method, path, nothing, api, data):
    fill = dict(L=world.listing.pk, D=world.dataset.public_id, P=world.purchase.pk, R=world.release.public_id,
                MR=world.md_release.public_id)
    client = client_for(world, tokens, actor, api=api)
    theirs = getattr(client, method)(path.format(**fill))
    missing = getattr(client, method)(nothing)
    assert theirs.status_code == missing.status_code == 404

    def strip(response, address):  # a page may name its own path; its CSRF token is masked anew each time
        return CSRF_TOKEN.sub("", body_text(response).replace(address.split("?")[0], ""))

    assert strip(theirs, path.format(**fill)) == strip(missing, nothing)


def test_creating_a_listing_on_someone_elses_dataset_reads_as_no_such_dataset(world, tokens):
    client = client_for(world, tokens, "other_owner", api=True)
    spec = {"title": "Mine now", "statistics": [{"kind": "count"}], "ceiling": "1", "price_per_epsilon": "1.00"}
    theirs = client.post("/api/v1/listings/", {**spec, "dataset": world.dataset.public_id}, format="json")
    missing = client.post("/api/v1/listings/", {**spec, "dataset": "ds_0000000000000000000000"}, format="json")
    assert theirs.status_code == missing.status_code == 404
    assert theirs.json() == missing.json()
    assert Listing.objects.filter(dataset=world.dataset).count() == 1


def test_a_closed_listing_exists_for_its_owner_and_its_buyers_only(world, tokens):
    reason = "Closed: the owner withdrew it."
    Listing.objects.filter(pk=world.listing.pk).update(is_open=False, closed_reason=reason)
    L = world.listing.pk
    for actor in ACTORS:
        api_client, pages = client_for(world, tokens, actor, api=True), client_for(world, tokens, actor, api=False)
        sees = actor in ("owner", "buyer")  # the buyer holds a level on it: they read why it closed
        expected = 200 if sees else 404
        answer = api_client.get(f"/api/v1/listings/{L}/")
        assert answer.status_code == expected, actor
        page = pages.get(f"/listings/{L}/")
        assert page.status_code == expected, actor
        if sees:
            assert answer.json()["closed_reason"] == reason and reason in page.content.decode()
        if actor == "buyer":  # their library marks it closed, the reason on hover
            library = pages.get("/library/").content.decode()
            assert f'<span class="badge" title="{reason}">closed</span>' in library
        listed = [item["id"] for item in api_client.get("/api/v1/listings/").json()["results"]]
        assert (L in listed) == sees, actor
    # nobody buys it, its buyer included
    buyer = client_for(world, tokens, "buyer", api=True)
    assert buyer.post("/api/v1/purchases/", {"listing": L, "epsilon": "2"}, format="json").status_code == 404
    assert Purchase.objects.filter(listing_id=L).count() == 1


def test_the_admin_never_shows_a_datasets_exact_record_count(world, tokens):
    staff = client_for(world, tokens, "staff", api=False)
    count = secrets(world)["exact record count"]
    for url in ("/admin/catalog/dataset/", f"/admin/catalog/dataset/{world.dataset.pk}/change/"):
        page = body_text(staff.get(url))
        assert world.dataset.name in page  # the page is the dataset's
        assert not any(p.search(page) for p in count), url


# --- cross-site requests: a signed-in browser's session does not buy without the CSRF token


def test_a_session_cannot_be_used_across_sites(world):
    buyer = world.user("buyer")
    before = Purchase.objects.count()
    api_client = APIClient(enforce_csrf_checks=True)
    api_client.force_login(buyer)  # a browser session, not a token
    refused = api_client.post("/api/v1/purchases/", {"listing": world.listing.pk, "epsilon": "2"}, format="json")
    assert refused.status_code == 403 and "CSRF" in refused.json()["error"]["message"]
    assert api_client.post("/api/v1/wallet/top-up/", {"amount": "5"}, format="json").status_code == 403
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(buyer)
    assert browser.post(f"/listings/{world.listing.pk}/buy/", {"epsilon": "2"}).status_code == 403
    assert browser.post("/wallet/top-up/", {"amount": "5"}).status_code == 403
    assert Purchase.objects.count() == before
    # reading needs no token, and a token (no cookie) needs none either
    assert api_client.get("/api/v1/wallet/").status_code == 200
