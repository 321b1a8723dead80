"""The owner's trust page (/owner/trust/), and the coalitions on a listing's dashboard."""

import html
import re
from decimal import Decimal

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from market.catalog.models import Listing
from market.trading.services import purchase_create
from market.trust.models import Edge, NodeMember, Tier, TierMember, TrustNetwork
from market.trust.services import trust_tier_members_set, trust_tiers_set

pytestmark = pytest.mark.django_db

TRUST = reverse("web:owner-trust")
SETTINGS = reverse("web:owner-trust-settings")
LISTINGS = reverse("web:owner-trust-listings")
TIERS = reverse("web:owner-trust-tiers")
TIER_MEMBERS = reverse("web:owner-trust-tier-members")
EDGES = reverse("web:owner-trust-edges")
NODE_MEMBERS = reverse("web:owner-trust-node-members")
ALL = [TRUST, SETTINGS, LISTINGS, TIERS, TIER_MEMBERS, EDGES, NODE_MEMBERS]


def text(response) -> str:
    return html.unescape(response.content.decode())


def error_of(response, field_id: str) -> str:
    """The error list shown with one input (``<input id>_error``)."""
    found = re.search(rf'<ul class="errorlist" id="{re.escape(field_id)}_error">(.*?)</ul>', text(response), re.S)
    return found.group(1) if found else ""


def settings_post(**changes) -> dict:
    data = {"mode": "tiers", "metric": "shortest", "home": "", "map_kind": "exp", "lam": "0.5", "unknown_distance": "3"}
    data.update(changes)
    return data


def tiers_post(rows) -> dict:
    data = {"tiers-TOTAL_FORMS": str(len(rows)), "tiers-INITIAL_FORMS": "0", "tiers-MIN_NUM_FORMS": "0", "tiers-MAX_NUM_FORMS": "20"}
    for i, (name, distance) in enumerate(rows):
        data[f"tiers-{i}-name"], data[f"tiers-{i}-distance"] = name, distance
    return data


def upload(client, content: bytes):
    return client.post(EDGES, {"file": SimpleUploadedFile("edges.csv", content, content_type="text/csv")})


# --- who may see what


@pytest.mark.parametrize("url", ALL)
def test_anonymous_visitors_are_sent_to_log_in(client, url):
    answer = client.get(url) if url == TRUST else client.post(url)
    assert answer.status_code == 302 and answer["Location"].startswith("/accounts/login/")


@pytest.mark.parametrize("url", ALL)
def test_a_signed_in_non_owner_gets_the_owner_only_page(signed_in, buyer, url):
    client = signed_in(buyer)
    answer = client.get(url) if url == TRUST else client.post(url, settings_post())
    assert answer.status_code == 403 and "Owner tools are for data owners" in text(answer)
    assert not TrustNetwork.objects.exists()


def test_another_owners_network_and_listings_are_out_of_reach(signed_in, owner, listing, users):
    users("victor")
    trust_tiers_set(owner=owner, tiers=[("secret-partners", "1")])
    trust_tier_members_set(owner=owner, text="victor,secret-partners")
    intruder = users("mallory", owner=True)
    client = signed_in(intruder)
    page = text(client.get(TRUST))
    assert "secret-partners" not in page and "Clinic visits" not in page and "victor" not in page
    # the victim's listing cannot be chosen, nor capped
    assert client.get(f"{TRUST}?listing={listing.pk}").status_code == 404
    assert client.get(f"{TRUST}?listing=abc").status_code == 404
    posted = client.post(LISTINGS, {"listings": [listing.pk]})
    assert posted.status_code == 200 and "Choose among your listings." in error_of(posted, "id_listings")
    assert not Listing.objects.get(pk=listing.pk).trust_capped
    # the intruder's writes go to their own network only
    client.post(TIERS, tiers_post([("mine", "2")]))
    assert list(Tier.objects.filter(network__owner=owner).values_list("name", flat=True)) == ["secret-partners"]
    assert list(Tier.objects.filter(network__owner=intruder).values_list("name", flat=True)) == ["mine"]


def test_the_owner_dashboard_links_to_the_trust_page(signed_in, owner):
    assert f'href="{TRUST}"' in text(signed_in(owner).get(reverse("web:owner")))


# --- the forms


def test_a_fresh_page_shows_the_defaults(signed_in, owner, listing):
    page = text(signed_in(owner).get(TRUST))
    assert "Trust tiers and caps" in page and "ceiling × e^(−0.5·d)" in page
    assert f"Caps on “{listing.title}” (ceiling ε 5)" in page
    assert "This listing is not capped by trust yet" in page
    # anyone else: 5·e^(−0.5·3) = 1.1156
    assert "anyone, so counted" not in page and "ε 1.1156" in page
    assert not TrustNetwork.objects.exists()  # reading creates nothing


def test_tiers_buyers_and_the_table_of_caps(signed_in, owner, listing, users):
    users("bob"), users("carol")
    client = signed_in(owner)
    assert client.post(TIERS, tiers_post([("partner", "1"), ("", ""), ("public", "4")])).status_code == 302
    assert sorted(Tier.objects.values_list("name", "distance")) == [("partner", Decimal(1)), ("public", Decimal(4))]
    answer = client.post(TIER_MEMBERS, {"tier-members": "bob,partner\ncarol,public\n"})
    assert answer.status_code == 302 and answer["Location"] == f"{TRUST}#tiers"
    assert client.post(LISTINGS, {"listings": [listing.pk]}).status_code == 302
    assert Listing.objects.get(pk=listing.pk).trust_capped

    page = text(client.get(TRUST))
    assert "This listing is not capped" not in page
    rows = re.findall(r"<tr>\s*<td>(.*?)</td>\s*<td class=\"num\">(.*?)</td>\s*<td class=\"num\">(.*?)</td>", page, re.S)
    assert rows == [("bob", "1", "ε 3.0326"), ("carol", "4", "ε 0.6766"), ("<em>anyone else</em>", "unknown (3)", "ε 1.1156")]
    assert "tier 'partner' at distance 1: cap = 5 × e^(−0.5·1) = 3.0326" in page
    assert "bob,partner\ncarol,public" in page  # the textarea shows the placements


def test_tier_errors_are_shown_at_their_rows(signed_in, owner):
    client = signed_in(owner)
    # the service numbers the rows it gets, blank ones skipped: its "tier 2" is the page's row 3
    posted = client.post(TIERS, tiers_post([("a", "1"), ("", ""), ("a", "2"), ("b", "-1")]))
    assert posted.status_code == 200
    rows = text(posted).split('<tr class="tier-row')[1:]
    assert "'a' is already the name of tier 1" in rows[2] and "distance: must be at least 0." in rows[3]
    # a row the form cannot read is shown before the service is asked
    rows = text(client.post(TIERS, tiers_post([("a", "1"), ("b", "")]))).split('<tr class="tier-row')[1:]
    assert "Give this tier a distance." in rows[1]
    assert not Tier.objects.exists()


def test_placing_unknown_usernames_names_their_lines(signed_in, owner, users):
    users("bob")
    client = signed_in(owner)
    client.post(TIERS, tiers_post([("partner", "1")]))
    posted = client.post(TIER_MEMBERS, {"tier-members": "bob,partner\nzed,partner\nbob,partner\n"})
    assert posted.status_code == 200
    errors = error_of(posted, "id_tier-members")
    assert "line 2: no user named 'zed'" in errors and "line 3: 'bob' is already placed on line 1" in errors
    assert not TierMember.objects.exists()


def test_a_bad_edge_list_names_its_lines_and_stores_nothing(signed_in, owner):
    client = signed_in(owner)
    assert upload(client, b"home,acme\nacme,lab,2\n").status_code == 302
    posted = upload(client, b"home,acme\nacme,acme\n,lab\nlab,x,-1\nhome,acme\n" + b"a,b,c,d\n")
    assert posted.status_code == 200
    errors = error_of(posted, "id_file")
    for message in (
        "line 2: 'acme' is joined to itself",
        "line 3: the first name is empty",
        "line 4: the weight must be a number greater than 0, not '-1'",
        "line 5: the edge home–acme is already on line 1",
        "line 6: expected two names and an optional weight (a,b or a,b,weight), found 4 fields",
    ):
        assert message in errors
    assert list(Edge.objects.values_list("a", "b", "weight")) == [("home", "acme", 1.0), ("acme", "lab", 2.0)]
    too_many = upload(client, "\n".join(f"n{i},n{i + 1}" for i in range(2001)).encode())
    assert "line 2001: more than 2000 edges" in error_of(too_many, "id_file")
    assert Edge.objects.count() == 2


def test_the_graph_mode_from_upload_to_caps(signed_in, owner, listing, users):
    users("bob"), users("carol")
    client = signed_in(owner)
    upload(client, b"home,lab\nlab,partner\nhome,partner\nfar,away\n")
    posted = client.post(SETTINGS, settings_post(mode="graph"))
    assert posted.status_code == 200 and "distances are measured from it" in error_of(posted, "id_home")
    assert client.post(SETTINGS, settings_post(mode="graph", home="home", metric="resistance", map_kind="inverse")).status_code == 302
    posted = client.post(NODE_MEMBERS, {"node-members": "bob,partner\ncarol,nowhere\n"})
    assert "line 2: no organisation named 'nowhere'" in error_of(posted, "id_node-members")
    assert client.post(NODE_MEMBERS, {"node-members": "bob,partner\ncarol,far\n"}).status_code == 302
    assert sorted(NodeMember.objects.values_list("buyer__username", "node")) == [("bob", "partner"), ("carol", "far")]

    page = text(client.get(TRUST))
    assert re.search(r"4 edges among 5 organisations;\s+2 connected to yours, “home”.", page)
    # bob: resistance home-partner 2/3 -> 5 / (1 + 0.6667) rounded down; carol: not connected, 5 / (1 + 3) = 1.25
    assert "organisation 'partner' at effective resistance 0.6667 from the owner's organisation" in page
    assert "organisation 'far' is not connected to the owner's organisation, so counted at the unknown distance 3" in page
    assert "ε 2.9999" in page and "ε 1.25" in page


def test_choosing_another_listing_shows_caps_on_its_ceiling(signed_in, owner, make_listing, users):
    first = make_listing(ceiling="2", rows=20)
    make_listing(rows=20)  # the newest, ceiling 5: the default
    client = signed_in(owner)
    assert "(ceiling ε 5)" in text(client.get(TRUST)).split("</h2>")[1]
    chosen = text(client.get(f"{TRUST}?listing={first.pk}"))
    # 2·e^(−0.5·3) = 0.44626...
    assert f"Caps on “{first.title}” (ceiling ε 2)" in chosen and "ε 0.4462" in chosen


def test_saved_settings_read_back_as_typed(signed_in, owner, make_listing):
    make_listing(ceiling="10", rows=20)
    client = signed_in(owner)
    client.post(TIERS, tiers_post([("far", "10")]))
    assert client.post(SETTINGS, settings_post(lam="10", unknown_distance="20")).status_code == 302
    page = text(client.get(TRUST))
    # 10, not 1E+1 (Decimal.normalize): in the inputs, the map and the table
    for html_input in ('name="lam" value="10"', 'name="unknown_distance" value="20"', 'name="tiers-0-distance" value="10"'):
        assert html_input in page
    assert "ceiling × e^(−10·d)" in page and "(ceiling ε 10)" in page and "unknown (20)" in page


def test_bad_settings_are_shown_at_their_fields(signed_in, owner):
    posted = signed_in(owner).post(SETTINGS, settings_post(lam="0", unknown_distance="-1"))
    assert posted.status_code == 200
    assert "Must be greater than 0." in error_of(posted, "id_lam")
    assert "Must be at least 0." in error_of(posted, "id_unknown_distance")
    assert not TrustNetwork.objects.exists()


# --- coalitions on the listing's dashboard


def test_the_listing_dashboard_names_the_worst_coalition(
    signed_in, owner, listing, users, fund, eager_celery, django_capture_on_commit_callbacks
):
    for name, eps in (("b1", "0.5"), ("b2", "2"), ("b3", "1")):
        who = users(name)
        fund(who, 100)
        with django_capture_on_commit_callbacks(execute=True):
            purchase_create(buyer=who, listing_id=listing.pk, epsilon=eps)
    page = text(signed_in(owner).get(reverse("web:owner-listing", args=[listing.pk])))
    assert (
        "The worst coalition of your 3 buyers\n          learns ε 2 — the largest level any of them holds — not the sum ε 3.5."
        in page
    )
