"""The demo (``manage.py seed_demo``) as a visitor, its buyer and its owner see it: no page shows a raw
``{...}`` placeholder of a format string that was never filled in."""

import html
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse

from market.catalog.models import Dataset, Listing
from market.catalog.pricing import curve_of
from market.web.forms import BuyForm, assume_records

pytestmark = pytest.mark.django_db

#: a format placeholder left in the text: ``{default:,}``, ``{name}``, ``{0}`` (not JSON, not CSS, not a set)
PLACEHOLDER = re.compile(r"\{[A-Za-z_][A-Za-z_0-9]*(?:![rsa])?(?::[^{}\s]*)?\}|\{\d+\}")


def visible_text(page: str) -> str:
    """What a reader sees: the page without its scripts, styles and tags."""
    page = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S | re.I)
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def placeholders(page: str) -> list[str]:
    text = visible_text(page)
    return [text[max(0, m.start() - 60):m.end() + 20] for m in PLACEHOLDER.finditer(text)]


def test_the_check_catches_a_raw_placeholder():
    for text in ("(default {default:,})", "hello {name}", "<p>{0} people</p>", "{x!r}"):
        assert placeholders(text), text
    for text in ('<script>var a = {b: 1};</script>', "{ 'a': 1 }", "P(ε) = 10.00 × ε", "<style>p {color: red}</style>"):
        assert not placeholders(text), text


def test_no_page_of_the_demo_shows_a_raw_placeholder(client):
    call_command("seed_demo")
    User = get_user_model()
    listings = list(Listing.objects.all())
    everyone = ["/", reverse("web:how-it-works")] + [f"/listings/{l.pk}/" for l in listings]
    found = []

    def read(who, address):
        answer = client.get(address)
        assert answer.status_code in (200, 400), (who, address, answer.status_code)
        found.extend(f"{who} {address}: …{bad}…" for bad in placeholders(answer.content.decode()))

    for address in everyone:
        read("visitor", address)
    client.force_login(User.objects.get(username="demo-buyer"))
    for address in [*everyone, *(f"/listings/{l.pk}/?epsilon=1" for l in listings), reverse("web:library"),
                    reverse("web:account")]:
        read("buyer", address)
    client.force_login(User.objects.get(username="demo-owner"))
    mine = [reverse("web:owner-listing", args=[l.pk]) for l in listings]
    for d in Dataset.objects.all():
        mine += [reverse("web:owner-dataset-columns", args=[d.public_id]),
                 reverse("web:owner-dataset-budget", args=[d.public_id])]
    for address in [*mine, reverse("web:owner"), reverse("web:owner-dataset-new"), reverse("web:owner-listing-new"),
                    reverse("web:owner-listing-new-microdata"), reverse("web:owner-earnings")]:
        read("owner", address)
    assert not found, "\n".join(found)


def test_the_buy_forms_records_help_is_filled_in():
    form = BuyForm()
    assume_records(form, 13557)
    assert "(default 13,557)" in form["records"].help_text and not placeholders(str(form))
    assert not placeholders(str(BuyForm()))  # not even before the default is known


def test_the_demos_prices_are_written_plainly(client):
    """Every demo listing's price, on its page and its owner's page and in the API, is the one formula text:
    no exponent (4E+3), money with two places, no "0 +" term."""
    call_command("seed_demo")
    client.force_login(get_user_model().objects.get(username="demo-owner"))
    for listing in Listing.objects.all():
        formula = curve_of(listing).formula()
        assert not re.search(r"\dE[+-]?\d|\(0 \+", formula), formula
        assert re.search(r"P\(ε\) = ", formula)
        for address in (f"/listings/{listing.pk}/", reverse("web:owner-listing", args=[listing.pk])):
            assert formula in visible_text(client.get(address).content.decode()), address
        assert client.get(f"/api/v1/listings/{listing.pk}/").json()["price_curve"]["formula"] == formula
