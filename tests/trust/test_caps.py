"""A buyer's cap (market.trust.selectors) and the owner's writes (market.trust.services)."""

from decimal import Decimal

import pytest
from django.contrib.auth.models import AnonymousUser

from market.catalog.models import Listing
from market.core.errors import Forbidden, InvalidInput
from market.trust.models import Edge, NodeMember, Tier, TierMember, TrustNetwork
from market.trust.selectors import buyer_cap, buyer_caps
from market.trust.services import (
    trust_edges_upload,
    trust_listings_set,
    trust_network_update,
    trust_node_members_set,
    trust_tier_members_set,
    trust_tiers_set,
)

pytestmark = pytest.mark.django_db

GRAPH = b"home,lab\nlab,partner\nhome,partner\nfar,away\n"  # a triangle home-lab-partner; far-away apart


def settings_of(owner, **changes):
    values = {"mode": "tiers", "metric": "shortest", "map_kind": "exp", "lam": "0.5", "unknown_distance": "3", "home": ""}
    values.update(changes)
    return trust_network_update(owner=owner, **values)


@pytest.fixture
def capped(listing, owner):
    trust_listings_set(owner=owner, listing_ids=[listing.pk])
    listing.refresh_from_db()
    return listing


@pytest.fixture
def tiers(owner, users):
    trust_tiers_set(owner=owner, tiers=[("partner", "1"), ("colleague", "0.5"), ("public", "4")])
    bob, carol = users("bob"), users("carol")
    trust_tier_members_set(owner=owner, text="bob,partner\ncarol,public\n")
    return bob, carol


# --- buyer_cap


def test_a_buyer_in_a_tier(capped, tiers):
    bob, carol = tiers
    cap = buyer_cap(listing=capped, buyer=bob)
    # 5·e^(−0.5·1) = 3.03265... rounded down
    assert cap.level == Decimal("3.0326") and cap.distance == 1.0
    assert cap.reason == "tier 'partner' at distance 1: cap = 5 × e^(−0.5·1) = 3.0326"
    # 5·e^(−0.5·4) = 0.67667...
    assert buyer_cap(listing=capped, buyer=carol).level == Decimal("0.6766")


def test_a_buyer_outside_the_network_counts_at_the_unknown_distance(capped, tiers, users):
    dave = users("dave")
    cap = buyer_cap(listing=capped, buyer=dave)
    # 5·e^(−0.5·3) = 1.11565...
    assert cap.level == Decimal("1.1156") and cap.distance == 3.0
    assert cap.reason == (
        "not in the owner's trust tiers, so counted at the unknown distance 3: cap = 5 × e^(−0.5·3) = 1.1156"
    )
    anonymous = buyer_cap(listing=capped, buyer=AnonymousUser())
    assert anonymous.level == Decimal("1.1156") and anonymous.reason.startswith("not signed in, so counted")


def test_the_owner_and_an_uncapped_listing_get_the_ceiling(listing, owner, tiers):
    bob, _ = tiers
    uncapped = buyer_cap(listing=listing, buyer=bob)
    assert uncapped.level == Decimal("5") and uncapped.distance is None
    assert uncapped.reason == "this listing is not capped by trust: its ceiling is ε 5"
    trust_listings_set(owner=owner, listing_ids=[listing.pk])
    listing.refresh_from_db()
    mine = buyer_cap(listing=listing, buyer=owner)
    assert mine.level == Decimal("5") and mine.reason == "you own this listing: its ceiling"


def test_an_owner_without_a_network_caps_everyone_as_unknown(capped, buyer):
    assert not TrustNetwork.objects.exists()
    # the defaults: exp with λ 0.5, unknown distance 3
    assert buyer_cap(listing=capped, buyer=buyer).level == Decimal("1.1156")


def test_the_inverse_map_and_another_unknown_distance(capped, owner, tiers):
    bob, _ = tiers
    settings_of(owner, map_kind="inverse", unknown_distance="1")
    cap = buyer_cap(listing=capped, buyer=bob)
    assert cap.level == Decimal("2.5") and cap.reason == "tier 'partner' at distance 1: cap = 5 / (1 + 1) = 2.5"
    trust_tier_members_set(owner=owner, text="")
    assert buyer_cap(listing=capped, buyer=bob).level == Decimal("2.5")  # unknown, now at distance 1


def test_graph_distances_shortest_and_resistance(capped, owner, users):
    bob, carol, erin = users("bob"), users("carol"), users("erin")
    trust_edges_upload(owner=owner, data=GRAPH)
    settings_of(owner, mode="graph", home="home", map_kind="inverse")
    trust_node_members_set(owner=owner, text="bob,partner\ncarol,far\nerin,home\n")

    # shortest: home-partner is an edge of length 1 -> 5 / (1 + 1) = 2.5
    cap = buyer_cap(listing=capped, buyer=bob)
    assert cap.level == Decimal("2.5") and cap.distance == 1.0
    assert cap.reason == (
        "organisation 'partner' at shortest-path distance 1 from the owner's organisation: cap = 5 / (1 + 1) = 2.5"
    )
    # 'far' is in the graph but not connected to home: unknown, 5 / (1 + 3) = 1.25
    far = buyer_cap(listing=capped, buyer=carol)
    assert far.level == Decimal("1.25")
    assert far.reason.startswith("organisation 'far' is not connected to the owner's organisation, so counted at")
    # the owner's own organisation: distance 0, the ceiling
    assert buyer_cap(listing=capped, buyer=erin).level == Decimal("5")

    # resistance: in the triangle, home-partner is 1 in parallel with 2 -> 2/3; 5 / (1 + 2/3) = 3 (rounded down
    # from the float 2.9999999999...: 2/3 is stored to 10 places, 0.6666666667, a hair above)
    settings_of(owner, mode="graph", home="home", map_kind="inverse", metric="resistance")
    cap = buyer_cap(listing=capped, buyer=bob)
    assert cap.distance == pytest.approx(2 / 3) and cap.level == Decimal("2.9999")
    assert "effective resistance 0.6667" in cap.reason


def test_a_buyer_at_a_node_that_left_the_graph_is_unknown(capped, owner, buyer):
    trust_edges_upload(owner=owner, data=GRAPH)
    settings_of(owner, mode="graph", home="home")
    trust_node_members_set(owner=owner, text="bob,lab\n")
    assert buyer_cap(listing=capped, buyer=buyer).distance == 1.0
    trust_edges_upload(owner=owner, data=b"home,partner\n")
    cap = buyer_cap(listing=capped, buyer=buyer)
    assert cap.distance == 3.0 and cap.reason.startswith("organisation 'lab' is not in the owner's trust network")


def test_the_mode_chooses_tiers_or_nodes(capped, owner, tiers):
    bob, _ = tiers
    trust_edges_upload(owner=owner, data=GRAPH)
    trust_node_members_set(owner=owner, text="bob,home\n")
    assert buyer_cap(listing=capped, buyer=bob).distance == 1.0  # tiers mode: partner
    settings_of(owner, mode="graph", home="home")
    assert buyer_cap(listing=capped, buyer=bob).distance == 0.0  # graph mode: at home
    settings_of(owner, mode="tiers", home="home")
    assert buyer_cap(listing=capped, buyer=bob).distance == 1.0  # both kept


def test_caps_of_many_listings_take_five_queries(owner, make_listing, tiers, django_assert_num_queries):
    bob, _ = tiers
    listings = [make_listing(rows=20) for _ in range(3)]
    trust_listings_set(owner=owner, listing_ids=[listing.pk for listing in listings[:2]])
    listings = list(Listing.objects.select_related("dataset").filter(pk__in=[listing.pk for listing in listings]))
    # the network, the buyer's tier and node, the capped listings' datasets' capped listings, the buyer's holdings
    with django_assert_num_queries(5):
        caps = buyer_caps(listings=listings, buyer=bob)
    assert sorted(cap.level for cap in caps.values()) == [Decimal("3.0326"), Decimal("3.0326"), Decimal("5")]


# --- the services


def test_settings_are_checked_whole(owner):
    with pytest.raises(InvalidInput) as caught:
        settings_of(owner, mode="ring", lam="0", unknown_distance="-1", map_kind="square")
    assert set(caught.value.fields) == {"mode", "lam", "unknown_distance", "map_kind"}
    assert caught.value.fields["lam"] == ["Must be greater than 0."]
    assert caught.value.fields["unknown_distance"] == ["Must be at least 0."]
    with pytest.raises(InvalidInput) as caught:
        settings_of(owner, mode="graph", home="  ")
    assert caught.value.fields["home"] == ["Name your organisation's node in the edge list: distances are measured from it."]
    with pytest.raises(InvalidInput) as caught:
        settings_of(owner, lam="0.00001")
    assert caught.value.fields["lam"] == ["Use at most 4 decimal places."]
    assert not TrustNetwork.objects.exists()


def test_only_owners_have_a_network(buyer):
    with pytest.raises(Forbidden):
        trust_tiers_set(owner=buyer, tiers=[("partner", "1")])


def test_tiers_are_checked_and_keep_their_buyers(owner, tiers):
    bob, _ = tiers
    with pytest.raises(InvalidInput) as caught:
        trust_tiers_set(owner=owner, tiers=[("a", "1"), ("", "2"), ("a", "x"), ("b", "-1")])
    assert caught.value.fields["tiers"] == [
        "tier 2: give it a name",
        "tier 3: 'a' is already the name of tier 1",
        "tier 3: distance: 'x' is not a number.",
        "tier 4: distance: must be at least 0.",
    ]
    # a tier with buyers cannot go; one without can
    with pytest.raises(InvalidInput) as caught:
        trust_tiers_set(owner=owner, tiers=[("colleague", "0.5")])
    assert caught.value.fields["tiers"] == [
        "tier 'partner' still has 1 buyer (bob): place them in another tier first",
        "tier 'public' still has 1 buyer (carol): place them in another tier first",
    ]
    trust_tiers_set(owner=owner, tiers=[("partner", "2"), ("public", "4")])
    assert sorted(Tier.objects.values_list("name", "distance")) == [("partner", Decimal(2)), ("public", Decimal(4))]
    assert TierMember.objects.get(buyer=bob).tier.distance == 2  # same tier, new distance


def test_placing_buyers_names_each_bad_line_and_stores_nothing(owner, tiers, users):
    users("dave")
    text = "\n".join(
        [
            "dave,partner",  # 1: fine
            "zed,partner",  # 2: no such user
            "olivia,partner",  # 3: the owner
            "dave,public",  # 4: dave again
            "bob,gold",  # 5: no such tier
            "just-a-name",  # 6: no comma
            "",  # 7: blank, skipped
            "carol,",  # 8: empty tier
        ]
    )
    with pytest.raises(InvalidInput) as caught:
        trust_tier_members_set(owner=owner, text=text)
    assert caught.value.fields["members"] == [
        "line 2: no user named 'zed'",
        "line 3: 'olivia' is you: your own cap is always the ceiling",
        "line 4: 'dave' is already placed on line 1",
        "line 5: no tier named 'gold' (your tiers: colleague, partner, public)",
        "line 6: write a username and tier, separated by a comma",
        "line 8: write a username and tier, separated by a comma",
    ]
    assert sorted(TierMember.objects.values_list("buyer__username", flat=True)) == ["bob", "carol"]  # as before


def test_placing_buyers_at_organisations_of_the_graph(owner, buyer):
    with pytest.raises(InvalidInput) as caught:
        trust_node_members_set(owner=owner, text="bob,lab")
    assert caught.value.fields["members"] == ["line 1: no organisation named 'lab' (upload your edge list first)"]
    trust_edges_upload(owner=owner, data=GRAPH)
    with pytest.raises(InvalidInput) as caught:
        trust_node_members_set(owner=owner, text="bob,labs")
    assert caught.value.fields["members"] == ["line 1: no organisation named 'labs' (it is not in your edge list)"]
    assert trust_node_members_set(owner=owner, text="bob,lab") == 1
    assert NodeMember.objects.get().node == "lab"


def test_a_bad_edge_list_stores_nothing(owner):
    trust_edges_upload(owner=owner, data=GRAPH)
    with pytest.raises(InvalidInput) as caught:
        trust_edges_upload(owner=owner, data=b"a,b\nb,b\nc,d,0\n")
    assert caught.value.fields["file"] == [
        "line 2: 'b' is joined to itself: an edge joins two different organisations",
        "line 3: the weight must be a number greater than 0, not '0'",
    ]
    assert list(Edge.objects.values_list("a", "b")) == [("home", "lab"), ("lab", "partner"), ("home", "partner"), ("far", "away")]


def test_distances_follow_the_edges_home_and_metric(owner):
    trust_edges_upload(owner=owner, data=GRAPH)
    assert TrustNetwork.objects.get().distances == {}  # no home yet
    settings_of(owner, home="home")
    assert TrustNetwork.objects.get().distances == {"home": 0, "lab": 1, "partner": 1, "far": None, "away": None}
    settings_of(owner, home="home", metric="resistance")
    distances = TrustNetwork.objects.get().distances
    assert distances["lab"] == pytest.approx(2 / 3) and distances["far"] is None
    trust_edges_upload(owner=owner, data=b"home,lab,2\n")
    assert TrustNetwork.objects.get().distances == {"home": 0, "lab": 0.5}


def test_only_the_owners_listings_can_be_capped(owner, listing, make_listing, users):
    intruder = users("mallory", owner=True)
    theirs = make_listing(who=intruder, rows=20)
    with pytest.raises(InvalidInput) as caught:
        trust_listings_set(owner=owner, listing_ids=[listing.pk, theirs.pk])
    assert caught.value.fields == {"listings": ["Choose among your listings."]}
    assert not Listing.objects.filter(trust_capped=True).exists()
    assert trust_listings_set(owner=owner, listing_ids=[listing.pk]) == 1
    assert trust_listings_set(owner=owner, listing_ids=[]) == 0
    assert not Listing.objects.filter(trust_capped=True).exists()
