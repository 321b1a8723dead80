"""Purchases, releases and the ledger, through the services (Celery eager)."""

from decimal import Decimal

import numpy as np
import pytest

from market.core.errors import Conflict, InsufficientFunds, InvalidInput, NotFound
from market.ledger.models import Leg, Transfer
from market.ledger.selectors import ledger_is_balanced, wallet_balance
from market.trading.models import Holding, Purchase
from market.trading.services import purchase_create
from releases.models import NoisePoint, Release
from market.trading.services import purchase_release, purchases_sweep

pytestmark = pytest.mark.django_db


def buy(buyer, listing, eps, capture, **kw):
    with capture(execute=True):
        purchase, *_ = purchase_create(buyer=buyer, listing_id=listing.pk, epsilon=eps, **kw)
    purchase.refresh_from_db()
    return purchase


def test_a_purchase_charges_the_increment_and_releases(
    listing, buyer, fund, eager_celery, seeded_noise, django_capture_on_commit_callbacks
):
    fund(buyer, 100)
    p1 = buy(buyer, listing, "0.5", django_capture_on_commit_callbacks)
    assert p1.status == "released" and p1.price == Decimal("5.00")
    p2 = buy(buyer, listing, "1.25", django_capture_on_commit_callbacks)
    assert p2.price == Decimal("7.50") and p2.level_from == Decimal("0.5")
    assert wallet_balance(user=buyer) == Decimal("87.50")  # 100 - P(1.25), as if bought at once
    holding = Holding.objects.get(buyer=buyer, listing=listing)
    assert holding.purchased == holding.released == Decimal("1.25")
    listing.noise_path.refresh_from_db()
    assert listing.noise_path.released_max == Decimal("1.25")
    release = Release.objects.get(purchase=p2)
    assert len(release.values) == len(listing.labels)
    assert ledger_is_balanced()


def test_levels_between_and_below_are_bridged_and_tightened(
    listing, users, fund, eager_celery, seeded_noise, django_capture_on_commit_callbacks
):
    first, second, third = users("b1"), users("b2"), users("b3")
    for who in (first, second, third):
        fund(who, 100)
    buy(first, listing, "0.5", django_capture_on_commit_callbacks)
    buy(first, listing, "3", django_capture_on_commit_callbacks)
    buy(second, listing, "1", django_capture_on_commit_callbacks)
    buy(third, listing, "0.2", django_capture_on_commit_callbacks)
    methods = dict(NoisePoint.objects.filter(path__listing=listing).values_list("level", "method"))
    assert methods == {
        Decimal("0.5"): "initial",
        Decimal("3"): "relax",
        Decimal("1"): "bridge",
        Decimal("0.2"): "tighten",
    }
    # a buyer at a level already released reads the same point
    buy(third, listing, "3", django_capture_on_commit_callbacks)
    assert NoisePoint.objects.filter(path__listing=listing).count() == 4
    a = Release.objects.get(buyer=first, level=Decimal("3")).values
    b = Release.objects.get(buyer=third, level=Decimal("3")).values
    assert a == b


def test_task_run_twice_releases_once_and_samples_once(
    listing, buyer, fund, eager_celery, django_capture_on_commit_callbacks
):
    fund(buyer, 100)
    p = buy(buyer, listing, "1", django_capture_on_commit_callbacks)
    first = Release.objects.get(purchase=p)
    again = purchase_release(purchase_id=p.pk)
    assert again == first
    assert Release.objects.filter(purchase=p).count() == 1
    assert NoisePoint.objects.filter(path__listing=listing).count() == 1


def test_a_crash_between_noise_and_commit_leaves_nothing_then_one_release(
    listing, buyer, fund, monkeypatch, django_capture_on_commit_callbacks
):
    import releases.services

    fund(buyer, 100)
    with django_capture_on_commit_callbacks(execute=False):  # the task is "lost": nothing runs
        purchase, *_ = purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="1")

    def crash(name):
        if name == "after_noise":
            raise RuntimeError("worker died")

    monkeypatch.setattr(releases.services, "_checkpoint", crash)
    with pytest.raises(RuntimeError):
        purchase_release(purchase_id=purchase.pk)
    assert NoisePoint.objects.count() == 0 and Release.objects.count() == 0
    purchase.refresh_from_db()
    assert purchase.in_flight  # still owed, not refunded
    monkeypatch.setattr(releases.services, "_checkpoint", lambda name: None)
    purchase_release(purchase_id=purchase.pk)
    purchase_release(purchase_id=purchase.pk)
    assert Release.objects.count() == 1 and NoisePoint.objects.count() == 1
    purchase.refresh_from_db()
    assert purchase.status == "released"


def test_the_sweeper_requeues_a_lost_task(listing, buyer, fund, eager_celery, django_capture_on_commit_callbacks):
    fund(buyer, 100)
    with django_capture_on_commit_callbacks(execute=False):
        purchase, *_ = purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="1")
    from datetime import timedelta

    assert purchases_sweep(older_than=timedelta(hours=1)) == 0  # too recent to be lost
    assert purchases_sweep(older_than=timedelta(0)) == 1
    purchase.refresh_from_db()
    assert purchase.status == "released"


def test_a_release_that_cannot_be_made_is_refunded(
    listing, buyer, fund, eager_celery, django_capture_on_commit_callbacks
):
    fund(buyer, 100)
    buy(buyer, listing, "0.5", django_capture_on_commit_callbacks)
    type(listing).objects.filter(pk=listing.pk).update(answer=b"broken")
    p = buy(buyer, listing, "1", django_capture_on_commit_callbacks)
    assert p.status == "failed" and "refunded" in p.failure_reason
    assert wallet_balance(user=buyer) == Decimal("95.00")  # only the first step is paid
    assert Holding.objects.get(buyer=buyer, listing=listing).purchased == Decimal("0.5")
    refund = Transfer.objects.get(purchase=p, kind="refund")
    assert sorted(refund.legs.values_list("amount", flat=True)) == [Decimal("-5.00"), Decimal("5.00")]
    assert ledger_is_balanced()


def test_idempotency_key_returns_the_first_purchase_and_charges_once(
    listing, buyer, fund, eager_celery, django_capture_on_commit_callbacks
):
    fund(buyer, 100)
    with django_capture_on_commit_callbacks(execute=True):
        first, created, _ = purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="1", idempotency_key="k-1")
        again, created_again, _ = purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="1", idempotency_key="k-1")
    assert created and not created_again and first.pk == again.pk
    assert wallet_balance(user=buyer) == Decimal("90.00")
    with pytest.raises(Conflict):
        purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="2", idempotency_key="k-1")


def test_a_repeat_whose_step_could_be_taken_again_answers_the_first_purchase(
    listing, buyer, fund, eager_celery, django_capture_on_commit_callbacks
):
    """A purchase that failed (refunded: the holding is back where it was) repeated with its key: the
    step could be taken again, so the purchase is written without reading for the key first; the
    key's unique constraint stops it, and the answer is the first purchase, nothing charged."""
    fund(buyer, 100)
    type(listing).objects.filter(pk=listing.pk).update(answer=b"broken")
    with django_capture_on_commit_callbacks(execute=True):
        failed, created, _ = purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="1", idempotency_key="k-9")
    failed.refresh_from_db()
    assert created and failed.status == "failed"
    assert wallet_balance(user=buyer) == Decimal("100.00")
    again, created_again, _ = purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="1", idempotency_key="k-9")
    assert not created_again and again.pk == failed.pk and again.status == "failed"
    # the same, with a max_price the step's price is now above: still the first purchase, not a new price
    again, created_again, _ = purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="1", idempotency_key="k-9",
                                              max_price="0.01")
    assert not created_again and again.pk == failed.pk
    assert wallet_balance(user=buyer) == Decimal("100.00") and Purchase.objects.filter(buyer=buyer).count() == 1
    with pytest.raises(Conflict):  # the same key for another step
        purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="2", idempotency_key="k-9")
    assert Purchase.objects.filter(buyer=buyer).count() == 1 and ledger_is_balanced()


@pytest.mark.parametrize(
    "eps,error,message",
    [
        ("0", InvalidInput, "greater than 0"),
        ("-1", InvalidInput, "greater than 0"),
        ("5.0001", InvalidInput, "ceiling"),
        ("abc", InvalidInput, "not a number"),
        ("NaN", InvalidInput, "finite"),
        ("1e400", InvalidInput, "at most"),
        ("0.123456", InvalidInput, "decimal places"),
        ("", InvalidInput, "required"),
        ("0.5", InvalidInput, "already hold level 1"),
        ("1", InvalidInput, "already hold level 1"),
    ],
)
def test_bad_levels_are_refused_and_change_nothing(
    eps, error, message, listing, buyer, fund, eager_celery, django_capture_on_commit_callbacks
):
    fund(buyer, 100)
    buy(buyer, listing, "1", django_capture_on_commit_callbacks)
    before = (Purchase.objects.count(), Leg.objects.count(), wallet_balance(user=buyer), NoisePoint.objects.count())
    with pytest.raises(error, match=message):
        purchase_create(buyer=buyer, listing_id=listing.pk, epsilon=eps)
    after = (Purchase.objects.count(), Leg.objects.count(), wallet_balance(user=buyer), NoisePoint.objects.count())
    assert before == after
    assert Holding.objects.get(buyer=buyer, listing=listing).purchased == Decimal("1")


def test_not_enough_credits_changes_nothing(listing, buyer, fund):
    fund(buyer, 4)
    with pytest.raises(InsufficientFunds, match="not enough credits"):
        purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="0.5")
    assert Purchase.objects.count() == 0 and wallet_balance(user=buyer) == Decimal("4.00")
    assert not Holding.objects.filter(purchased__gt=0).exists()


def test_unknown_closed_and_own_listings(listing, owner, buyer, fund):
    fund(buyer, 100)
    with pytest.raises(NotFound):
        purchase_create(buyer=buyer, listing_id=listing.pk + 999, epsilon="1")
    with pytest.raises(InvalidInput, match="you own this listing"):
        purchase_create(buyer=owner, listing_id=listing.pk, epsilon="1")
    type(listing).objects.filter(pk=listing.pk).update(is_open=False)
    with pytest.raises(NotFound):
        purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="1")
    assert Purchase.objects.count() == 0


def test_one_purchase_in_flight_per_buyer_and_listing(listing, buyer, fund, django_capture_on_commit_callbacks):
    fund(buyer, 100)
    with django_capture_on_commit_callbacks(execute=False):
        purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="1")
    with pytest.raises(Conflict, match="still being released"):
        purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="2")
    assert wallet_balance(user=buyer) == Decimal("90.00")


def test_released_values_are_rounded_clamped_and_near_the_truth(
    listing, buyer, fund, eager_celery, seeded_noise, django_capture_on_commit_callbacks
):
    fund(buyer, 100)
    top = listing.ceiling  # the highest level sold: the ceiling 5 less the size release's 0.5
    p = buy(buyer, listing, str(top), django_capture_on_commit_callbacks)
    release = Release.objects.get(purchase=p)
    values, scales = np.array(release.values), np.array(release.noise_scales)
    # each value has the scale of its group: weight / eps
    assert scales.tolist() == pytest.approx([w / float(top) for w in listing.weights])
    # a lattice listing releases whole steps of each value's grid (not of grid_step(scale), the
    # float path's snapping grid: a lattice sum on a grid of 1 is odd as often as even)
    steps = np.array([float(g) for g in listing.grids])
    assert listing.release_mechanism.on_grid and steps.size == values.size
    assert np.all(values / steps == np.round(values / steps))
    assert np.all(values >= np.array(listing.lower)) and np.all(values <= np.array(listing.upper))
    err = np.abs(values - listing.true_answer())
    assert np.mean(err <= scales * np.log(20) + steps) > 0.8


def test_the_budget_is_split_over_statistics_not_paid_at_the_largest_range(listing):
    """The count (sensitivity 1) is not drowned by the age sum's range (100):
    three groups (count, sum(age), histogram) each get eps/3."""
    weights = dict(zip(listing.labels, listing.weights))
    assert weights["count"] == 3.0 and weights["sum(age)"] == 300.0
    assert weights["age in [0, 2)"] == 3.0
