"""Forms of the owner's pages: upload a dataset, create a listing.

The forms only read the inputs into Python values; the services
(``market.catalog.services``) decide what is acceptable. What a service
rejects comes back as a ``DomainError`` whose ``fields`` name the inputs at
fault: :func:`add_domain_errors` and :func:`add_statistics_errors` put those
messages next to the inputs that caused them.
"""

from __future__ import annotations

import math
import re

from django import forms

from market.catalog.statistics import MAX_STATISTICS
from market.core import visibility

#: Empty statistic rows shown on a new listing form.
DEFAULT_ROWS = 4

KIND_CHOICES = [("", "(unused)"), ("count", "count"), ("sum", "sum"), ("mean", "mean"), ("histogram", "histogram")]
# The inputs each kind of statistic needs (see market.catalog.statistics).
_NEEDS = {
    "count": (),
    "sum": ("column", "lower", "upper"),
    "mean": ("column", "lower", "upper"),
    "histogram": ("column", "bins"),
}

# "statistic 3 (sum): lower must be below upper": the service numbers the
# statistics it was given from 1, unused rows skipped.
_STATISTIC_PREFIX = re.compile(r"^statistic (\d+)(?: \([a-z]+\))?: ")
_STATISTIC_NUMBER = re.compile(r"\bstatistic (\d+)\b")


def add_domain_errors(form: forms.Form, error, *, elsewhere=frozenset()) -> None:
    """Show a service's ``DomainError`` on ``form``: each message at the field it
    names, messages about inputs the form does not have at the top. Fields in
    ``elsewhere`` are shown by the caller (e.g. on a formset)."""
    if not error.fields:
        form.add_error(None, error.message)
    for name, messages in error.fields.items():
        if name in elsewhere:
            continue
        for message in messages:
            form.add_error(name if name in form.fields else None, message)


class DatasetUploadForm(forms.Form):
    name = forms.CharField(max_length=200)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    file = forms.FileField(
        label="CSV file",
        help_text="A header line of column names, then one record per line; every cell a number.",
        widget=forms.ClearableFileInput(attrs={"accept": ".csv,text/csv"}),
    )
    total_budget = forms.DecimalField(
        label="Total privacy budget (ε)",
        required=False,
        max_digits=9,
        decimal_places=4,
        widget=forms.NumberInput(attrs={"step": "0.0001", "min": "0"}),
        help_text="The ceilings of all listings on this dataset may not add up to more. Leave empty for no limit.",
    )
    publish_size = forms.BooleanField(
        label="Publish the approximate number of records",
        required=False,
        help_text="Buyers then see the record count rounded to two significant figures. "
        "The exact count stays private.",
    )


class ListingForm(forms.Form):
    """A listing's own fields. The dataset is chosen on the page (the column
    inputs depend on it) and travels in a hidden input, checked against the
    owner's datasets."""

    dataset = forms.ModelChoiceField(
        queryset=None,
        widget=forms.HiddenInput,
        error_messages={"invalid_choice": "Choose one of your datasets.", "required": "Choose one of your datasets."},
    )
    title = forms.CharField(max_length=200)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    ceiling = forms.DecimalField(
        label="Ceiling (ε)",
        max_digits=9,
        decimal_places=4,
        widget=forms.NumberInput(attrs={"step": "0.0001", "min": "0"}),
        help_text="The highest privacy level ever sold on this listing: "
        "your privacy spent on it never exceeds this.",
    )
    price_per_epsilon = forms.DecimalField(
        label="Price per ε (credits)",
        max_digits=16,
        decimal_places=2,
        widget=forms.NumberInput(attrs={"step": "0.01", "min": "0"}),
        help_text="c in the price curve P(ε) = c · ε: a buyer pays c · ε to reach level ε, "
        "whether in one step or in several.",
    )

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["dataset"].queryset = visibility.owned_datasets(user).only("pk")


def _bin_edges(text: str) -> list[float]:
    """``"0, 18, 65, 100"`` -> ``[0.0, 18.0, 65.0, 100.0]``, or ValidationError."""
    edges = []
    for piece in text.split(","):
        piece = piece.strip()
        try:
            edge = float(piece)
        except ValueError:
            edge = math.nan
        if not math.isfinite(edge):
            shown = repr(piece[:20]) if piece else "an empty edge"
            raise forms.ValidationError(f"{shown} is not a number: give edges such as 0, 18, 65, 100.")
        edges.append(edge)
    return edges


class StatisticForm(forms.Form):
    """One row of the statistics: a kind and what that kind needs.

    Every input is optional on its own: a row without a kind is unused (and
    must then be empty); a kind requires its own inputs (sum and mean: column,
    lower, upper; histogram: column, bin edges). ``cleaned_data["spec"]`` is
    the row's statistic as the service reads it, or None for an unused row.
    """

    kind = forms.ChoiceField(choices=KIND_CHOICES, required=False)
    column = forms.ChoiceField(choices=(), required=False)
    lower = forms.FloatField(required=False, widget=forms.NumberInput(attrs={"step": "any"}))
    upper = forms.FloatField(required=False, widget=forms.NumberInput(attrs={"step": "any"}))
    bins = forms.CharField(label="Bin edges", required=False, max_length=2000)

    def __init__(self, *args, columns=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["column"].choices = [("", "(none)")] + [(name, name) for name in columns]

    def clean_bins(self) -> list[float] | None:
        text = self.cleaned_data["bins"].strip()
        return _bin_edges(text) if text else None

    def clean(self):
        data = super().clean()
        kind = data.get("kind")
        if not kind:
            if any(data.get(name) not in (None, "") for name in ("column", "lower", "upper", "bins")):
                self.add_error("kind", "Choose a kind for this row, or clear it.")
            data["spec"] = None
            return data
        missing = [name for name in _NEEDS[kind] if data.get(name) in (None, "") and name not in self.errors]
        for name in missing:
            self.add_error(name, f"Required for a {kind}.")
        if not self.errors:
            data["spec"] = {"kind": kind, **{name: data[name] for name in _NEEDS[kind]}}
        return data


class BaseStatisticFormSet(forms.BaseFormSet):
    def specs(self) -> tuple[list[dict], list[int]]:
        """The statistics of the used rows, in order, and each one's row index
        (the service numbers the statistics it is given, unused rows skipped)."""
        # an untouched extra row is not cleaned at all: no "spec"
        used = [(i, form.cleaned_data.get("spec")) for i, form in enumerate(self.forms)]
        used = [(i, spec) for i, spec in used if spec]
        return [spec for _, spec in used], [i for i, _ in used]


def statistic_formset(*, columns, data=None, initial=None, extra: int = DEFAULT_ROWS):
    """The statistics rows, with the chosen dataset's columns to pick from."""
    formset_class = forms.formset_factory(
        StatisticForm,
        formset=BaseStatisticFormSet,
        extra=extra,
        max_num=MAX_STATISTICS,
        absolute_max=MAX_STATISTICS,
        validate_max=True,
    )
    return formset_class(data=data, initial=initial, prefix="stats", form_kwargs={"columns": columns})


def add_statistics_errors(formset, rows: list[int], messages: list[str]) -> None:
    """Show the service's statistics errors: one about "statistic N" at the row
    it came from (``rows[N - 1]``), any other above all rows.

    The service counts used rows only, so a number in the message is turned
    into the row's number on the page ("same as statistic 1" -> "same as
    statistic 2" when the first row was left unused)."""

    def on_page(match: re.Match) -> str:
        number = int(match.group(1))
        return f"statistic {rows[number - 1] + 1}" if 1 <= number <= len(rows) else match.group(0)

    for message in messages:
        prefix = _STATISTIC_PREFIX.match(message)
        number = int(prefix.group(1)) if prefix else 0
        if 1 <= number <= len(rows):
            rest = message[prefix.end():]
            formset.forms[rows[number - 1]].add_error(None, _STATISTIC_NUMBER.sub(on_page, rest))
        else:
            formset.non_form_errors().append(message)
