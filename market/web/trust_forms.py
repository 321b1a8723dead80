"""Forms of the owner's trust page (``market.web.trust_views``).

As on the other owner pages, the forms only read the inputs into Python
values; ``market.trust.services`` decides what is acceptable, and its
``DomainError`` comes back at the inputs it names (``add_domain_errors``;
``add_tier_errors`` for the tier rows).
"""

from __future__ import annotations

import re

from django import forms

from market.core import visibility
from market.trust.edgelist import MAX_BYTES, MAX_EDGES
from market.trust.graph import plain
from market.trust.models import TrustNetwork
from market.trust.services import MAX_TIERS

#: Empty tier rows shown below the owner's tiers.
EXTRA_TIER_ROWS = 3

_TIER_PREFIX = re.compile(r"^tier (\d+): ")


def _number_field(label: str, help_text: str) -> forms.DecimalField:
    return forms.DecimalField(
        label=label,
        max_digits=9,
        decimal_places=4,
        widget=forms.NumberInput(attrs={"step": "0.0001", "min": "0"}),
        help_text=help_text,
    )


class TrustSettingsForm(forms.Form):
    mode = forms.ChoiceField(
        label="How buyers stand from you",
        choices=TrustNetwork.Mode.choices,
        widget=forms.RadioSelect,
        help_text="Tiers: you name a few tiers, each at a distance, and put buyers in them. "
        "Graph: you upload who is connected to whom, and a buyer's distance is measured in that graph.",
    )
    metric = forms.ChoiceField(
        label="Distance in the graph",
        choices=TrustNetwork.Metric.choices,
        widget=forms.RadioSelect,
        help_text="Effective resistance brings two organisations closer the more paths join them; "
        "the shortest path counts only the best one.",
    )
    home = forms.CharField(
        label="Your organisation's node",
        required=False,
        max_length=100,
        help_text="Its name in the edge list: distances are measured from it. Required for the graph mode.",
    )
    map_kind = forms.ChoiceField(
        label="From distance d to cap",
        choices=TrustNetwork.MapKind.choices,
        widget=forms.RadioSelect,
        help_text="Both equal the ceiling at distance 0 and fall as d grows; "
        "caps are rounded down to 4 decimal places.",
    )
    lam = _number_field("λ (for ceiling × e^(−λ·d))", "Greater than 0: the larger, the faster caps fall with distance.")
    unknown_distance = _number_field(
        "Distance of an unknown buyer",
        "Buyers you did not place, or placed at an organisation not connected to yours, count at this distance.",
    )


class TierForm(forms.Form):
    """One tier row: a name and a distance; a row left empty is unused."""

    name = forms.CharField(required=False, max_length=50)
    distance = forms.DecimalField(
        required=False, max_digits=9, decimal_places=4, widget=forms.NumberInput(attrs={"step": "0.0001", "min": "0"})
    )

    def clean(self):
        data = super().clean()
        name, distance = (data.get("name") or "").strip(), data.get("distance")
        if name and distance is None and "distance" not in self.errors:
            self.add_error("distance", "Give this tier a distance.")
        if distance is not None and not name:
            self.add_error("name", "Give this tier a name, or clear the row.")
        data["tier"] = (name, distance) if name and distance is not None else None
        return data


class BaseTierFormSet(forms.BaseFormSet):
    def tiers(self) -> tuple[list[tuple], list[int]]:
        """The used rows' ``(name, distance)``, in order, and each one's row index."""
        used = [(i, form.cleaned_data.get("tier")) for i, form in enumerate(self.forms)]
        used = [(i, tier) for i, tier in used if tier]
        return [tier for _, tier in used], [i for i, _ in used]


def tier_formset(*, data=None, initial=None):
    formset_class = forms.formset_factory(
        TierForm,
        formset=BaseTierFormSet,
        extra=EXTRA_TIER_ROWS,
        max_num=MAX_TIERS,
        absolute_max=MAX_TIERS,
        validate_max=True,
    )
    return formset_class(data=data, initial=initial, prefix="tiers")


def add_tier_errors(formset, rows: list[int], messages: list[str]) -> None:
    """The service's tier errors: one about "tier N" at the row it came from
    (``rows[N - 1]``; the service numbers used rows only), any other above the rows."""
    for message in messages:
        prefix = _TIER_PREFIX.match(message)
        number = int(prefix.group(1)) if prefix else 0
        if 1 <= number <= len(rows):
            formset.forms[rows[number - 1]].add_error(None, message[prefix.end():])
        else:
            formset.non_form_errors().append(message)


class MembersForm(forms.Form):
    """Where buyers stand: one ``username,place`` per line."""

    members = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "false"}))

    def __init__(self, *args, label: str, help_text: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["members"].label = label
        self.fields["members"].help_text = help_text


def tier_members_form(data=None, initial: str = "") -> MembersForm:
    return MembersForm(
        data,
        prefix="tier",
        initial={"members": initial},
        label="Buyers in tiers",
        help_text="One buyer per line: username,tier (e.g. bob,partner). Buyers not listed count as unknown.",
    )


def node_members_form(data=None, initial: str = "") -> MembersForm:
    return MembersForm(
        data,
        prefix="node",
        initial={"members": initial},
        label="Buyers at organisations",
        help_text="One buyer per line: username,organisation (a node of your edge list, or your own). "
        "Buyers not listed count as unknown.",
    )


class EdgeListForm(forms.Form):
    file = forms.FileField(
        label="Edge list (CSV)",
        help_text=f"One edge per line, no header: a,b or a,b,weight (weight > 0, default 1); "
        f"at most {MAX_EDGES:,} edges and {MAX_BYTES // 2**20} MB. It replaces the graph you have.",
        widget=forms.ClearableFileInput(attrs={"accept": ".csv,text/csv,text/plain"}),
    )


class _ListingChoices(forms.ModelMultipleChoiceField):
    def label_from_instance(self, listing):
        return f"{listing.title} (ceiling ε {plain(listing.ceiling)})"


class CappedListingsForm(forms.Form):
    listings = _ListingChoices(
        queryset=None,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Your listings",
        help_text="On a ticked listing each buyer may buy at most their cap; on the others, up to the ceiling. "
        "Buyers keep levels they already hold above their cap, but cannot buy further.",
        error_messages={
            "invalid_choice": "Choose among your listings.",
            "invalid_pk_value": "Choose among your listings.",
        },
    )

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["listings"].queryset = (
            visibility.owned_listings(user).defer("answer").order_by("-created_at", "-id")
        )
