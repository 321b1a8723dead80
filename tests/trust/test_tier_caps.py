"""Trust caps bind each tier as a whole (issue 28, point 3).

Accounts are free, so a cap per account bounds nothing: the documented example (two trust-capped
listings on one dataset, ceilings 5 and 2, unknown buyers at distance 3, map 5·e^(−0.5·d)) let
account A buy 1.1156 on the first and account B 0.4462 on the second, 1.5618 together, where the
dataset's cap for the public is 1.1156. Now everyone at distance ≥ d together (on each listing the
highest level any of them holds, summed over the dataset's capped listings) stays within the map at d.
"""

import html
from decimal import Decimal

import pytest

from market.catalog.models import Listing
from market.catalog.services import listing_create
from market.core.errors import InvalidInput
from market.trading.models import Holding
from market.trading.services import purchase_create, purchase_quote
from market.trust.selectors import buyer_cap, buyer_caps, trust_overview
from market.trust.services import trust_listings_set, trust_tier_members_set, trust_tiers_set
from tests.datasets import ready_dataset
from tests.fixtures.market import STATISTICS, make_csv

pytestmark = pytest.mark.django_db

PUBLIC = Decimal("1.1156")  # 5·e^(−0.5·3), rounded down
TRUSTED = Decimal("3.0326")  # 5·e^(−0.5·1)
VISITS_TRUSTED = Decimal("1.2130")  # 2·e^(−0.5·1): the partner's own map on the ceiling-2 listing
PUBLIC_FORMULA = "5 × e^(−0.5·3) = 1.1156"


def two_capped(owner, seed=1):
    """Two trust-capped listings on one dataset: 'Ages' (ceiling 5) and 'Visits' (ceiling 2)."""
    dataset = ready_dataset(owner=owner, name="visits", data=make_csv(120, seed=seed), total_budget="7")
    made = [
        listing_create(owner=owner, dataset_id=dataset.public_id, title=title, statistics=STATISTICS[:1],
                       ceiling=ceiling, price_per_epsilon="1.00")
        for title, ceiling in (("Ages", "5"), ("Visits", "2"))
    ]
    trust_listings_set(owner=owner, listing_ids=[listing.pk for listing in made])
    return [Listing.objects.select_related("dataset").get(pk=listing.pk) for listing in made]


@pytest.fixture
def pair(owner):
    return two_capped(owner)


def buy(buyer, listing, eps):
    return purchase_create(buyer=buyer, listing_id=listing.pk, epsilon=eps).purchase


def held_together(listings, buyers):
    """What ``buyers`` together learn from ``listings``: per listing the highest level any holds, summed."""
    return sum(
        (max((h.purchased for h in Holding.objects.filter(listing=listing, buyer__in=buyers)), default=Decimal(0))
         for listing in listings),
        Decimal(0),
    )


def test_the_documented_example_two_accounts_cannot_pass_the_publics_cap_together(pair, users, fund, api, eager_celery):
    ages, visits = pair
    a, b = users("alice"), users("bert")
    for account in (a, b):
        fund(account, 100)
    buy(a, ages, "1.1156")

    # B is a different account at the same (unknown) distance: the public's room on the dataset is spent
    cap = buyer_cap(listing=visits, buyer=b)
    assert cap.level == 0
    assert cap.reason == (
        "not in the owner's trust tiers, so counted at the unknown distance 3; buyers at distance ≥ 3 together "
        f"already hold 1.1156 of this dataset's cap 1.1156 for them ({PUBLIC_FORMULA}) on its other trust-capped "
        "listings, so at most 0 here"
    )
    with pytest.raises(InvalidInput, match="above your cap of 0"):
        buy(b, visits, "0.4462")
    answer = api(b).post("/api/v1/purchases/", {"listing": visits.pk, "epsilon": "0.4462"}, format="json")
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == "invalid"
    assert "buyers at distance ≥ 3 together already hold 1.1156 of this dataset's cap 1.1156" in error["message"]
    assert error["fields"]["epsilon"] == [f"At most 0 (your cap: {cap.reason})."]
    assert not Holding.objects.filter(buyer=b, purchased__gt=0).exists()
    assert held_together([ages, visits], [a, b]) == PUBLIC

    # what B is shown is the room left: 0 on Visits, in quotes and listings alike
    assert api(b).get(f"/api/v1/listings/{visits.pk}/").json()["your_cap"] == "0.0000"
    refused = api(b).get(f"/api/v1/listings/{visits.pk}/quote/?epsilon=0.1")
    assert refused.status_code == 400 and "at most 0 here" in refused.json()["error"]["message"]
    # a visitor, and any new account, is in the same tier
    assert buyer_cap(listing=visits, buyer=None).level == 0
    assert buyer_cap(listing=visits, buyer=users("newcomer")).level == 0
    # reading Ages's one noise path up to the level the tier already holds costs the tier nothing more
    quote = api(b).get(f"/api/v1/listings/{ages.pk}/quote/?epsilon=1.1156").json()
    assert quote["cap"] == "1.1156" and quote["cap_reason"] == (
        f"not in the owner's trust tiers, so counted at the unknown distance 3: cap = {PUBLIC_FORMULA}"
    )
    assert quote["cap_bound"] == buyer_cap(listing=ages, buyer=b).together
    assert quote["cap_bound"].startswith("Everyone at distance ≥ 3 from the owner (you, and every account")
    assert quote["cap_bound"].endswith("They hold ε 1.1156 of it now.")
    buy(b, ages, "1.1156")
    assert held_together([ages, visits], [a, b]) == PUBLIC


def test_the_cap_shown_is_the_room_the_tier_has_left(pair, users, fund, eager_celery):
    ages, visits = pair
    a, b = users("alice"), users("bert")
    fund(a, 100)
    fund(b, 100)
    buy(a, ages, "1")
    assert buyer_cap(listing=visits, buyer=b).level == Decimal("0.1156")
    with pytest.raises(InvalidInput, match="so at most 0.1156 here"):
        purchase_quote(buyer=b, listing=visits, epsilon="0.2")
    buy(b, visits, "0.1156")
    assert held_together([ages, visits], [a, b]) == PUBLIC
    # and now A may not raise Ages past what the tier has left: 1.1156 − 0.1156
    assert buyer_cap(listing=ages, buyer=a).level == Decimal("1")
    with pytest.raises(InvalidInput, match="already hold 0.1156 of this dataset's cap 1.1156"):
        buy(a, ages, "1.0001")


def test_buy_by_accuracy_searches_only_the_room_left(pair, users, fund, eager_celery):
    ages, visits = pair
    a, b, c = users("alice"), users("bert"), users("carol")
    for account in (a, b, c):
        fund(account, 100)
    buy(a, ages, "1")
    # any bound needs some level; B's whole room on Visits is 0.1156
    with pytest.raises(InvalidInput) as caught:
        purchase_quote(buyer=b, listing=visits, target=[(None, Decimal("0.000001"))])
    assert "not reachable up to your cap of ε 0.1156" in caught.value.message
    # a loose target is met within the room, and its level is one B may buy
    quote = purchase_quote(buyer=b, listing=visits, target=[(None, Decimal("1000"))])
    assert 0 < quote.epsilon <= Decimal("0.1156") and quote.cap == Decimal("0.1156")
    buy(c, ages, "1.1156")  # another account spends the public's room: nothing to search
    with pytest.raises(InvalidInput) as caught:
        purchase_quote(buyer=b, listing=visits, target=[(None, Decimal("1000"))])
    assert caught.value.message.startswith("target: nothing is sold to you on this listing: your cap is ε 0 (")
    assert "buyers at distance ≥ 3 together already hold 1.1156 of this dataset's cap 1.1156" in caught.value.message


def test_a_trusted_tier_has_its_own_room_while_the_public_keeps_to_its_own(pair, owner, users, fund, eager_celery):
    """A partner tier at distance 1 (map 3.0326 on the dataset) and the public at 3 (1.1156).
    Everyone at distance ≥ 1 includes the public: the partner's room is what the public has not taken."""
    ages, visits = pair
    trust_tiers_set(owner=owner, tiers=[("partner", "1")])
    bob = users("bob")
    trust_tier_members_set(owner=owner, text="bob,partner")
    a, b, c = users("alice"), users("bert"), users("carol")
    for account in (bob, a, b, c):
        fund(account, 100)

    buy(a, ages, str(PUBLIC))  # the public's whole room
    with pytest.raises(InvalidInput, match="above your cap of 0"):
        buy(b, visits, "0.1")

    # the partner may still buy: on Visits up to their own map, 2·e^(−0.5)
    assert buyer_cap(listing=visits, buyer=bob).level == VISITS_TRUSTED
    buy(bob, visits, str(VISITS_TRUSTED))
    # on Ages, what the partner tier (with the public) does not hold yet: 3.0326 − 1.2130
    cap = buyer_cap(listing=ages, buyer=bob)
    assert cap.level == TRUSTED - VISITS_TRUSTED == Decimal("1.8196")
    assert cap.reason == (
        "tier 'partner' at distance 1; buyers at distance ≥ 1 together already hold 1.213 of this dataset's cap "
        "3.0326 for them (5 × e^(−0.5·1) = 3.0326) on its other trust-capped listings, so at most 1.8196 here"
    )
    with pytest.raises(InvalidInput, match="above your cap of 1.8196"):
        buy(bob, ages, "1.8197")
    buy(bob, ages, "1.8196")

    # the public is bound by its own cap still: Ages up to what it already reads, Visits nothing
    assert buyer_cap(listing=ages, buyer=c).level == PUBLIC
    assert buyer_cap(listing=visits, buyer=c).level == 0
    public = [a, b, c]
    assert held_together([ages, visits], public) == PUBLIC
    assert held_together([ages, visits], public + [bob]) == TRUSTED


def test_a_tier_above_its_cap_after_a_move_is_sold_nothing_more(owner, listing, users, fund, eager_celery):
    """One capped listing: bob bought 3 as a partner, then the owner took him out of the tier.
    The public now holds 3 on it, above its cap 1.1156: what is held stays held, nothing more is sold."""
    trust_tiers_set(owner=owner, tiers=[("partner", "1")])
    bob, sam = users("bob"), users("sam")
    trust_tier_members_set(owner=owner, text="bob,partner")
    trust_listings_set(owner=owner, listing_ids=[listing.pk])
    listing = Listing.objects.select_related("dataset").get(pk=listing.pk)
    fund(bob, 100)
    fund(sam, 100)
    buy(bob, listing, "3")
    assert buyer_cap(listing=listing, buyer=sam).level == PUBLIC  # bob is at 1: not in the public's tier
    trust_tier_members_set(owner=owner, text="")
    cap = buyer_cap(listing=listing, buyer=sam)
    assert cap.level == 0
    assert "buyers at distance ≥ 3 together already hold 3 of this dataset's cap 1.1156" in cap.reason
    assert "nothing more is sold to them" in cap.reason
    # the pages say so instead of a bound that no longer holds
    assert "together holds ε 3 on this dataset's trust-capped listings, above their cap ε 1.1156" in cap.together
    assert "learns at most" not in cap.together
    public = trust_overview(owner=owner, listing_id=listing.pk)["bounds"]["rows"][-1]
    assert (public["distance"], public["holds"], public["over"]) == ("3", "3", True)
    with pytest.raises(InvalidInput):
        buy(sam, listing, "0.5")
    assert Holding.objects.get(buyer=bob, listing=listing).purchased == 3


def test_caps_of_many_listings_on_many_datasets_with_holders_take_five_queries(
    owner, users, fund, eager_celery, django_assert_num_queries
):
    trust_tiers_set(owner=owner, tiers=[("partner", "1")])
    bob = users("bob")
    trust_tier_members_set(owner=owner, text="bob,partner")
    listings = two_capped(owner, seed=1) + two_capped(owner, seed=2)
    trust_listings_set(owner=owner, listing_ids=[listing.pk for listing in listings])  # all four
    for n, listing in enumerate(listings):
        someone = users(f"holder{n}")
        fund(someone, 100)
        buy(someone, listing, "0.2")
    fund(bob, 100)
    buy(bob, listings[0], "1")
    first = listings[0].pk
    listings = list(Listing.objects.select_related("dataset").filter(pk__in=[listing.pk for listing in listings]))
    # the capped listings of their datasets, the levels held there by place, the networks, the buyer's tier and node
    with django_assert_num_queries(5):
        caps = buyer_caps(listings=listings, buyer=bob)
    # on Ages, 3.0326 less what everyone at distance ≥ 1 holds on Visits (0.2); on Visits, the map on its ceiling
    assert sorted(cap.level for cap in caps.values()) == [VISITS_TRUSTED] * 2 + [Decimal("2.8326")] * 2
    assert caps[first].together.endswith("They hold ε 1.2 of it now.")  # bob's 1 on Ages, 0.2 on Visits


def page(response) -> str:
    return html.unescape(response.content.decode())


def test_the_listing_page_says_the_reason_and_what_is_bounded_for_whom(pair, users, fund, client, eager_celery):
    ages, visits = pair
    a, b = users("alice"), users("bert")
    fund(a, 100)
    fund(b, 100)
    buy(a, ages, "1.1156")
    client.force_login(b)
    text = page(client.get(f"/listings/{visits.pk}/"))
    assert ("Your cap on this listing: ε 0 — not in the owner's trust tiers, so counted at the unknown distance 3; "
            "buyers at distance ≥ 3 together already hold 1.1156 of this dataset's cap 1.1156") in text
    assert ("Everyone at distance ≥ 3 from the owner (you, and every account the owner has not placed (new accounts "
            "and visitors too)) together learns at most ε 1.1156 (5 × e^(−0.5·3), rounded down) about any one person in this "
            "dataset from its 2 trust-capped listings") in text
    assert "They hold ε 1.1156 of it now." in text
    refused = client.post(f"/listings/{visits.pk}/buy/", {"epsilon": "0.4462", "idempotency_key": "k1"})
    assert refused.status_code == 400
    assert "buyers at distance ≥ 3 together already hold 1.1156" in page(refused)
    assert not Holding.objects.filter(buyer=b, purchased__gt=0).exists()


def test_the_owners_trust_page_says_what_each_tier_learns_together(pair, owner, users, fund, client, eager_celery):
    ages, visits = pair
    trust_tiers_set(owner=owner, tiers=[("partner", "1")])
    a = users("alice")
    fund(a, 100)
    buy(a, ages, "1")
    bounds = trust_overview(owner=owner, listing_id=visits.pk)["bounds"]
    assert bounds["listings"] == ["Ages", "Visits"] and bounds["top"] == "5"
    assert bounds["rows"] == [
        {"distance": "1", "who": "tier 'partner'", "cap": "3.0326", "formula": "5 × e^(−0.5·1) = 3.0326",
         "holds": "1", "over": False},
        {"distance": "3", "who": "everyone you have not placed", "cap": "1.1156", "formula": PUBLIC_FORMULA,
         "holds": "1", "over": False},
    ]
    client.force_login(owner)
    text = page(client.get(f"/owner/trust/?listing={visits.pk}"))
    assert "The cap binds each tier as a whole, not each account" in text
    assert "What each tier learns together on this dataset" in text
    assert "Everyone at distance ≥ d together learns at most" in text
    assert "everyone you have not placed" in text


def test_a_size_release_counts_in_every_tiers_cap(owner, users, fund, eager_celery):
    """A listing's size release (its noisy per-cell counts) is published to everyone, so it is in
    every tier's sum: with a mean over a private count on the 'Ages' listing (size release ε 0.5 of its
    ceiling 5), the public's room on the dataset is the map on the total ceiling 5 less that 0.5, and
    a public buyer's own cap on 'Ages' is 1.1156 less 0.5 (fails when the size release is left out).
    Both listings have ceiling 5, so the tier's room, not the map on 'Visits', binds there."""
    dataset = ready_dataset(owner=owner, name="sized", data=make_csv(120, seed=3), total_budget="10")
    ages = listing_create(owner=owner, dataset_id=dataset.public_id, title="Ages", statistics=STATISTICS[1:2],
                          ceiling="5", price_per_epsilon="1.00", size_level="0.5")
    visits = listing_create(owner=owner, dataset_id=dataset.public_id, title="Visits", statistics=STATISTICS[:1],
                            ceiling="5", price_per_epsilon="1.00")
    trust_listings_set(owner=owner, listing_ids=[ages.pk, visits.pk])
    ages, visits = (Listing.objects.select_related("dataset").get(pk=x.pk) for x in (ages, visits))
    assert ages.size_level == Decimal("0.5") and ages.total_level == Decimal("5")
    buyer = users("carol")
    fund(buyer, 100)
    assert buyer_cap(listing=ages, buyer=buyer).level == PUBLIC - Decimal("0.5")
    # on 'Visits' the public may have what the size release on 'Ages' leaves of the dataset's cap
    cap = buyer_cap(listing=visits, buyer=buyer)
    assert cap.level == PUBLIC - Decimal("0.5")
    assert "together already hold 0.5" in cap.reason
    with pytest.raises(InvalidInput, match="above your cap"):
        buy(buyer, visits, str(PUBLIC - Decimal("0.5") + Decimal("0.0001")))
    buy(buyer, visits, str(PUBLIC - Decimal("0.5")))
    assert buyer_cap(listing=ages, buyer=users("dora")).level == 0
