"""Forms of the owner's pages: upload a dataset, create a listing.

The forms only read the inputs into Python values; the services
(``market.catalog.services``) decide what is acceptable. What a service
rejects comes back as a ``DomainError`` whose ``fields`` name the inputs at
fault: :func:`add_domain_errors` and :func:`add_statistics_errors` put those
messages next to the inputs that caused them.
"""

from __future__ import annotations

import re
from decimal import Decimal

from django import forms

from market.catalog.budget import default_budget
from market.catalog.models import Dataset
from market.catalog.spec.columns import CATEGORICAL, NUMERIC, TEMPORAL, TYPES, Column, columns_from
from market.catalog.spec import CONFIRM_PUBLIC, MAX_STATISTICS
from market.web.listing_builder import (
    CONFIRM_CATEGORIES, FILTER_SLOTS, OPERATORS, SPEC_INPUTS, builder_kinds, statistic_spec, used_filters,
)
from market.core import visibility

#: Empty statistic rows shown on a new listing form.
DEFAULT_ROWS = 4

# "statistic 3 (sum): lower must be below upper": the service numbers the
# statistics it was given from 1, unused rows skipped.
_STATISTIC_PREFIX = re.compile(r"^statistic (\d+)(?: \([a-z_]+\))?(?:, condition (\d+))?: ")
# "categories lists 'x' twice": a message that starts with a spec field names its input
_SPEC_FIELD = re.compile(r"^'?([a-z_]+)'?\b")
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
    source = forms.CharField(max_length=500, required=False, help_text="Where the data comes from (optional).")
    licence = forms.CharField(max_length=200, required=False, help_text="e.g. CC0-1.0 (optional).")
    file = forms.FileField(
        label="CSV or Parquet file",
        help_text="A header line of column names, then one record per line (or a Parquet file).",
        widget=forms.ClearableFileInput(attrs={"accept": ".csv,.tsv,.txt,.gz,.parquet,text/csv"}),
    )
    total_budget = forms.DecimalField(
        label="Privacy budget (ε)",
        max_digits=9,
        decimal_places=4,
        widget=forms.NumberInput(attrs={"step": "0.0001", "min": "0"}),
        help_text="The most this dataset's listings may ever reveal: their ceilings may not add up to more "
        "(each listing's releases add to the dataset's spent privacy). The suggested value may be kept.",
    )
    relation = forms.ChoiceField(
        label="Whom do releases protect?",
        choices=Dataset.Relation.choices,
        initial=Dataset.Relation.PRIVATE_SIZE,
        required=False,  # left out: a private size, the safer default
        widget=forms.RadioSelect,
        help_text="Private size: buyers cannot tell whether any one person is in the data; the number of records "
        "is never shown (you can sell it as a noisy count). Public size: buyers learn the exact number of records, "
        "and cannot tell any one person's values; sums and histograms then need about twice the noise.",
    )
    record_name = forms.CharField(
        label="One record is about a…", max_length=60, required=False, initial="record",
        help_text="e.g. patient, household, trip: it names who is protected on your listings' pages.",
    )
    record_name_plural = forms.CharField(label="Plural", max_length=60, required=False, initial="records",
                                         help_text="e.g. patients.")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["total_budget"].initial = default_budget()


DatasetUploadForm.base_fields["relation"].has_default = True  # a choice already made (a private size)


class BudgetForm(forms.Form):
    total_budget = forms.DecimalField(
        label="New budget (ε)", max_digits=9, decimal_places=4,
        widget=forms.NumberInput(attrs={"step": "0.0001", "min": "0"}),
        help_text="At least what the listings' ceilings add up to. A larger budget lets you list more on the "
        "same people: it is the most all the dataset's listings may ever reveal together.",
    )
    delta = forms.CharField(
        label="δ (optional)", required=False, max_length=40,
        help_text="Empty: none, and every listing is exactly ε-differentially private, their ceilings adding up to at most "
        "the budget. A δ (at most 1e-6) lets listings use the Skellam path and composes them by their privacy-loss "
        "distributions, which fits more listings in the same budget: together they are (ε, δ)-differentially private.",
    )
    reason = forms.CharField(max_length=500, help_text="Why: it is kept with the change, for the dataset's record.")


class FitsForm(forms.Form):
    """The fit what-if's shape (read from the address: a GET form). The service judges the values."""

    fit_mechanism = forms.ChoiceField(label="Mechanism", required=False, initial="lattice",
                                      choices=[("lattice", "Exact lattice path"), ("skellam", "Skellam path")])
    fit_ceiling = forms.CharField(label="Ceiling (ε)", required=False, initial="1", max_length=40)
    fit_values = forms.CharField(label="Counts one record moves (Skellam)", required=False, initial="1", max_length=10,
                                 help_text="How many of the listing's counts one record changes by one.")


class CompositionForm(forms.Form):
    """The what-if's δ and finer level (read from the address: a GET form). The service judges the values."""

    delta = forms.CharField(label="δ", required=False, initial="1e-6", max_length=40,
                            help_text="Strictly between 0 and 1, e.g. 1e-6: the chance the combined guarantee may fail.")
    eps = forms.CharField(label="Finer privacy level ε", required=False, initial="0.1", max_length=40,
                          help_text="Above 0, e.g. 0.1: the level at which each listing's chance of stronger "
                          "protection is counted.")


class SampledSensitivityForm(forms.Form):
    """A query on the dataset's records and how to sample it (the service judges the values)."""

    kind = forms.ChoiceField(label="Query", choices=[("mean", "The mean of a column"),
                                                     ("ridge", "Ridge regression coefficients")])
    column = forms.ChoiceField(label="Column (for a mean)", required=False)
    target = forms.ChoiceField(label="Target column (for a regression)", required=False)
    features = forms.MultipleChoiceField(label="Feature columns (for a regression)", required=False,
                                         widget=forms.CheckboxSelectMultiple)
    lam = forms.CharField(label="Regularisation (for a regression)", required=False, initial="1", max_length=40,
                          help_text="Above 0: how strongly the coefficients are pulled towards zero.")
    gamma2 = forms.CharField(label="Risk", initial="0.9", max_length=40,
                             help_text="Above 0, at most 1: the share of neighbouring pairs the sensitivity should cover.")
    pairs = forms.CharField(label="Neighbouring pairs", initial="200", max_length=10, help_text="From 1 to 500.")
    subsample = forms.CharField(label="Records sampled", initial="1000", max_length=10,
                                help_text="From 3 to 5000, drawn at random from the records with a value in every "
                                "chosen column.")

    def __init__(self, *args, numeric: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        choices = [(name, name) for name in numeric]
        for name in ("column", "target", "features"):
            self.fields[name].choices = choices


#: the inputs each kind of price curve needs (``price_curve_of``)
CURVE_INPUTS = {"linear": ["price_per_epsilon"], "power": ["price_per_epsilon", "p"], "compensation": ["margin"]}


def price_curve_of(form: forms.Form, data: dict, *, needs: dict | None = None) -> dict | None:
    """The price curve the owner chose (``price_kind`` and its inputs), as the services read it; None,
    with "Required for this price curve." at each missing input, when one is missing."""
    kind = data.get("price_kind") or "linear"
    for name in (needs or {}).get(kind, CURVE_INPUTS.get(kind, [])):
        if data.get(name) is None and name not in form.errors:
            form.add_error(name, "Required for this price curve.")
    if any(name in form.errors for name in ("price_kind", *CURVE_INPUTS.get(kind, []))):
        return None
    curve = {"kind": kind}
    if kind in ("linear", "power"):
        curve["c"] = str(data["price_per_epsilon"])
    if kind == "power":
        curve["p"] = str(data["p"])
    if kind == "compensation":
        curve["margin"] = str(data["margin"])
    return curve


class ListingForm(forms.Form):
    """A listing's own fields. The dataset is chosen on the page (the column
    inputs depend on it) and travels in a hidden input, checked against the
    owner's datasets."""

    dataset = forms.ModelChoiceField(
        queryset=None,
        to_field_name="public_id",  # the page speaks in public ids ("ds_...")
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
        help_text="The most privacy this listing can ever cost: "
        "your privacy spent on it never exceeds this.",
    )
    mechanism = forms.ChoiceField(
        label="Noise",
        choices=[
            ("lattice", "Exact lattice path: Laplace-like integer noise, exactly ε-differentially private (δ = 0)"),
            ("skellam", "Skellam path: Gaussian-like integer noise, (ε, δ)-differentially private; on a dataset with a δ"),
        ],
        initial="lattice", required=False, widget=forms.RadioSelect,
        help_text="The Skellam path is calibrated to how far one record moves all the values together (their l2 size), "
        "so it adds less noise when a record moves many values a little. It sells a ladder of levels up to the ceiling. "
        "“Compare the mechanisms” shows the error bounds of both.",
    )
    delta = forms.CharField(
        label="δ (Skellam path)", required=False, max_length=40,
        help_text="The chance, at most, that a release's guarantee fails: e.g. 1e-9 (the default), at most the dataset's δ.",
    )
    size_level = forms.DecimalField(
        label="Size release level ε_p (optional)",
        required=False,
        max_digits=9,
        decimal_places=4,
        widget=forms.NumberInput(attrs={"step": "0.0001", "min": "0"}),
        help_text="Only for means that divide by a private count (a private number of records, a filter, a group-by, "
        "or a column with missing values): the listing publishes once, for everyone, a noisy count of each mean's cell "
        "at this level, so buyers see each mean's accuracy before buying. It is carved out of the ceiling (buyers may buy "
        "up to the ceiling less ε_p) and spent at once. Empty: a tenth of the ceiling.",
    )
    price_kind = forms.ChoiceField(
        label="Price curve",
        choices=[
            ("linear", "Linear: c × ε"),
            ("power", "Power: c × ε^p (p at most 2)"),
            ("compensation", "From the compensation you must hold: margin × (E_min + E·e^(−rate/ε)), per person × the public size if it is public"),
        ],
        initial="linear",
        required=False,
        widget=forms.RadioSelect,
        help_text="A buyer pays P(new level) − P(level held): buying in steps costs exactly what buying at once costs.",
    )
    price_per_epsilon = forms.DecimalField(
        label="Price scale c (credits)",
        required=False,
        max_digits=16,
        decimal_places=2,
        widget=forms.NumberInput(attrs={"step": "0.01", "min": "0"}),
        help_text="For a linear or power curve: a buyer pays c · ε (or c · ε^p) to reach level ε.",
    )
    p = forms.DecimalField(
        label="Power p", required=False, max_digits=6, decimal_places=3,
        widget=forms.NumberInput(attrs={"step": "0.1", "min": "0"}),
        help_text="For a power curve. At most 2: a price growing faster than ε² lets buyers average cheaper answers.",
    )
    margin = forms.DecimalField(
        label="Margin", required=False, max_digits=8, decimal_places=3,
        widget=forms.NumberInput(attrs={"step": "0.1", "min": "0"}),
        help_text="For a compensation-derived price: the price is this multiple of the compensation budget.",
    )
    E = forms.DecimalField(
        label="Compensation E (credits)", required=False, max_digits=14, decimal_places=2,
        help_text="What would be owed after a breach of unprotected data (the paper's E): per person when the "
        "dataset's size is public (the price multiplies by that size), else for everyone in the data together, "
        "so that the price does not reveal how many they are. "
        "Optional for linear and power prices: with it, your dashboard shows compensation budgets.",
    )
    rate = forms.DecimalField(label="Rate c of the cost model", required=False, initial=1, max_digits=8, decimal_places=3)
    E_min = forms.DecimalField(
        label="Unavoidable cost E_min (credits)", required=False, initial=0, max_digits=14, decimal_places=2,
        help_text="Per person or in total, as E.",
    )

    def clean(self):
        data = super().clean()
        data["price_curve"] = price_curve_of(self, data, needs={"compensation": ["margin", "E"]})
        if self.errors:
            return data
        data["compensation"] = compensation_of(data)
        return data

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["dataset"].queryset = visibility.owned_datasets(user).only("pk", "public_id")


def compensation_of(data: dict) -> dict | None:
    """The owner's compensation model (E, rate, E_min) as the services read it, or None without an E."""
    if data.get("E") is None:
        return None
    return {
        "E": str(data["E"]),
        "rate": str(data["rate"] if data.get("rate") is not None else 1),
        "E_min": str(data["E_min"] if data.get("E_min") is not None else 0),
    }


#: inputs that only some choices need: the page says when (``owner/_field.html``), not "(optional)"
INPUT_NEEDED_WHEN = {
    "price_per_epsilon": "for a linear or power price",
    "p": "for a power price",
    "margin": "for a compensation-derived price",
    "E": "for a compensation-derived price; optional otherwise",
}
for _name, _when in INPUT_NEEDED_WHEN.items():
    ListingForm.base_fields[_name].needed_when = _when
ListingForm.base_fields["price_kind"].has_default = True  # a choice already made: never left out


def _columns_of(columns) -> tuple[Column, ...]:
    return columns_from(columns)


def _choices(columns, types) -> list[tuple[str, str]]:
    return [("", "(none)")] + [(c.name, c.name) for c in columns if c.type in types]


class StatisticForm(forms.Form):
    """One row of the statistics: a kind and what that kind needs.

    Every input is optional on its own: a row without a kind is unused (and
    must then be empty); a kind requires its own inputs (see
    ``market.web.listing_builder``, which turns the row into a spec and names
    the inputs at fault). ``cleaned_data["spec"]`` is the row's statistic as the
    service reads it, or None for an unused row.

    The column inputs offer only the columns a kind may read there: numeric
    ones to sum, average or bin; categorical and true/false ones (and dates,
    when a kind bins them) to group by; any column in a filter.
    """

    kind = forms.ChoiceField(choices=(), required=False)
    column = forms.ChoiceField(choices=(), required=False, help_text="A numeric column.")
    points = forms.CharField(label="Columns", required=False, max_length=2000,
                             help_text="Numeric columns, comma-separated (e.g. x, y): each record is a point.")
    center = forms.CharField(label="Center", required=False, max_length=2000,
                             help_text="One number per column, comma-separated: where the ball is centred.")
    radius = forms.CharField(label="Radius", required=False, max_length=40, widget=forms.NumberInput(attrs={"step": "any"}),
                             help_text="Each point is pulled into the ball of this radius around the center.")
    synthetic_columns = forms.CharField(
        label="Columns and their codes", required=False, max_length=20000, widget=forms.Textarea(attrs={"rows": 5}),
        help_text="One per line: a categorical column and its categories (species: Adelie, Chinstrap, Gentoo), a "
        "number and its bin edges (body_mass_g: 3000, 4000, 5000, 6000; the first and last bins are open-ended), "
        "or a true/false column alone. Every one- and two-way table of them is measured; buyers get rows.")
    lower = forms.CharField(required=False, max_length=40, widget=forms.NumberInput(attrs={"step": "any"}))
    upper = forms.CharField(required=False, max_length=40, widget=forms.NumberInput(attrs={"step": "any"}))
    grid = forms.CharField(
        label="Rounding grid", required=False, max_length=40,
        widget=forms.NumberInput(attrs={"step": "any", "min": "0", "placeholder": "from the bounds"}),
        help_text="Optional. Each value is rounded to a multiple of this (e.g. 0.01) before summing; the sum is "
        "released as an exact whole number of grid steps. Left empty: a default from the bounds (a centroid's: the radius "
        "over 20 steps or fewer).",
    )
    bins = forms.CharField(label="Bin edges", required=False, max_length=2000)
    quantiles = forms.CharField(label="Quantiles", required=False, max_length=200,
                                help_text="Comma-separated, between 0 and 1: 0.5 is the median, 0.25, 0.5, 0.75 "
                                "the quartiles. Read off the noisy counts of the bins above.")
    by = forms.ChoiceField(label="Group by", choices=(), required=False,
                           help_text="One value per category, plus “other” for the rest. A table's rows.")
    categories = forms.CharField(
        required=False, max_length=20000, widget=forms.Textarea(attrs={"rows": 4}),
        help_text="One per line: values anyone may know (never filled in from your data).",
    )
    by2 = forms.ChoiceField(label="Table columns", choices=(), required=False, help_text="A two-way table's columns.")
    categories2 = forms.CharField(label="Its categories", required=False, max_length=20000,
                                  widget=forms.Textarea(attrs={"rows": 4}), help_text="One per line.")
    categories_public = forms.BooleanField(label="I confirm these categories are public", required=False)
    bin = forms.ChoiceField(label="Date bins", choices=[("", "(none)"), ("month", "month"), ("year", "year")],
                            required=False)
    date_from = forms.CharField(label="From", required=False, max_length=40,
                                help_text="A month (2024-01) or a year (2024), included.")
    date_to = forms.CharField(label="To", required=False, max_length=40, help_text="Included.")

    def __init__(self, *args, columns=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.columns = _columns_of(columns)
        self.kinds = builder_kinds()
        dated = any("bin" in kind.fields for kind in self.kinds.values())
        self.fields["kind"].choices = [("", "(unused)")] + [(k.name, k.title) for k in self.kinds.values()]
        self.fields["column"].choices = _choices(self.columns, NUMERIC + (TEMPORAL if dated else ()))
        self.fields["by"].choices = _choices(self.columns, CATEGORICAL + (TEMPORAL if dated else ()))
        self.fields["by2"].choices = _choices(self.columns, CATEGORICAL)
        anything = [t for t in TYPES if t != "ignored"]
        for i in range(FILTER_SLOTS):
            self.fields[f"where_{i}_column"] = forms.ChoiceField(
                label=f"Filter {i + 1}: column", choices=_choices(self.columns, anything), required=False)
            self.fields[f"where_{i}_op"] = forms.ChoiceField(
                label="operator", choices=[("", "")] + [(op, words) for op, words, _ in OPERATORS], required=False)
            self.fields[f"where_{i}_value"] = forms.CharField(
                label="value(s)", required=False, max_length=2000,
                help_text="Comma-separated for “is one of” and “is between”." if i == 0 else "")

    def filters(self):
        """The filter slots' bound fields, one (column, operator, value) triple per slot."""
        return [tuple(self[f"where_{i}_{part}"] for part in ("column", "op", "value")) for i in range(FILTER_SLOTS)]

    def clean(self):
        data = super().clean()
        spec, errors = statistic_spec(data, self.columns, self.kinds)
        for name, messages in errors.items():
            for message in messages:
                if name not in self.errors:  # a field's own error (an invalid choice) says enough
                    self.add_error(name if name in self.fields else None, message)
        data["spec"] = None if self.errors else spec
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
            rest = _STATISTIC_NUMBER.sub(on_page, message[prefix.end():])
            form = formset.forms[rows[number - 1]]
            form.add_error(_input_of(form, rest, prefix.group(2)), rest)
        else:
            formset.non_form_errors().append(message)


def _input_of(form, message: str, condition: str | None) -> str | None:
    """The row input a service message is about: the value of the filter it numbers (the
    conditions are the used filter slots, in order), the input of the spec field it starts
    with ("lower must be below upper"), else None (the row)."""
    if condition is not None:
        used = used_filters(form.cleaned_data)
        number = int(condition)
        return f"where_{used[number - 1]}_value" if 1 <= number <= len(used) else None
    field = _SPEC_FIELD.match(message)
    kind = form.kinds.get(form.cleaned_data.get("kind") or "")
    name = (kind.input_of(field.group(1)) if kind else SPEC_INPUTS.get(field.group(1))) if field else None
    return name if name in form.fields else None


class PayoutForm(forms.Form):
    """How much of their earnings an owner asks to be paid (the ledger decides whether they hold it)."""

    amount = forms.DecimalField(
        min_value=Decimal("0.01"), max_digits=18, decimal_places=2, label="Amount (credits)",
        help_text="At most your earnings balance.",
    )


class ListingEditForm(forms.Form):
    """A listing's title and description, as buyers read them."""

    title = forms.CharField(max_length=200)
    description = forms.CharField(required=False, max_length=5000, widget=forms.Textarea(attrs={"rows": 3}))


class ListingPriceForm(forms.Form):
    """A listing's new price curve, for purchases from now on (the curves of ``ListingForm``)."""

    price_kind = ListingForm.base_fields["price_kind"]
    price_per_epsilon = ListingForm.base_fields["price_per_epsilon"]
    p = ListingForm.base_fields["p"]
    margin = ListingForm.base_fields["margin"]

    def clean(self):
        data = super().clean()
        data["price_curve"] = price_curve_of(self, data)
        return data


class ListingCloseForm(forms.Form):
    reason = forms.CharField(
        max_length=500, required=False, widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Shown to the listing's buyers. Left empty: “Closed by its owner”.",
    )


def split_list(text: str) -> list[str]:
    """A list typed by people: one item per line, or comma-separated on one line; blanks dropped."""
    text = (text or "").strip()
    items = text.splitlines() if "\n" in text else text.split(",")
    return [item.strip() for item in items if item.strip()]


class MicrodataForm(forms.Form):
    """A microdata listing: its title, its columns (each included one-hot over its categories, or
    a categorical one hashed into a Bloom filter), the ladder of levels and the price. The inputs of
    each categorical or boolean column of the chosen dataset are named ``col_<i>_<input>``;
    ``cleaned_data["spec"]`` is the microdata spec as the service reads it and ``rows`` the index
    of the column each of its columns came from (the service numbers them from 1)."""

    dataset = ListingForm.base_fields["dataset"]
    title = ListingForm.base_fields["title"]
    description = ListingForm.base_fields["description"]
    levels = forms.CharField(
        label="Levels sold (ε)", max_length=200,
        help_text="Comma-separated, lowest first, e.g. 0.5, 1, 2, 4 (at most 8). Buyers buy only these levels; the highest "
        "is the ceiling, counted in the dataset's budget.",
    )
    price_kind = ListingForm.base_fields["price_kind"]
    price_per_epsilon = ListingForm.base_fields["price_per_epsilon"]
    p = ListingForm.base_fields["p"]
    margin = ListingForm.base_fields["margin"]
    E = ListingForm.base_fields["E"]
    rate = ListingForm.base_fields["rate"]
    E_min = ListingForm.base_fields["E_min"]

    def __init__(self, *args, user, columns=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["dataset"].queryset = visibility.owned_datasets(user).only("pk", "public_id")
        self.columns = [c for c in columns_from(columns) if c.type in CATEGORICAL]
        for i, column in enumerate(self.columns):
            boolean = column.type == "boolean"
            self.fields[f"col_{i}_include"] = forms.BooleanField(label=f"Include {column.name}", required=False)
            self.fields[f"col_{i}_categories"] = forms.CharField(
                label="Its categories", required=False, max_length=20000, widget=forms.Textarea(attrs={"rows": 3}),
                help_text="Left empty: true and false." if boolean else
                "One per line, or comma-separated: values anyone may know (never filled in from your data).",
            )
            self.fields[f"col_{i}_categories_public"] = forms.BooleanField(
                label="I confirm these categories are public", required=False)
            if boolean:
                continue
            self.fields[f"col_{i}_bloom"] = forms.BooleanField(label="Hash into a Bloom filter instead", required=False)
            self.fields[f"col_{i}_bits"] = forms.IntegerField(label="Bloom bits", required=False, initial=32,
                                                              min_value=1, max_value=100000)
            self.fields[f"col_{i}_hashes"] = forms.IntegerField(label="Hashes per value", required=False, initial=2,
                                                                min_value=1, max_value=100000)

    def column_rows(self):
        """Per categorical or boolean column: its name, type and bound inputs (None where it has none)."""
        return [{"name": c.name, "type": c.type, "index": i,
                 **{part: self[f"col_{i}_{part}"] if f"col_{i}_{part}" in self.fields else None
                    for part in ("include", "categories", "categories_public", "bloom", "bits", "hashes")}}
                for i, c in enumerate(self.columns)]

    def _spec(self, data: dict) -> tuple[dict, list[int]]:
        columns, rows = [], []
        for i, column in enumerate(self.columns):
            if not data.get(f"col_{i}_include"):
                continue
            if data.get(f"col_{i}_bloom"):
                size, hashes = data.get(f"col_{i}_bits"), data.get(f"col_{i}_hashes")
                for name, value in ((f"col_{i}_bits", size), (f"col_{i}_hashes", hashes)):
                    if value is None and name not in self.errors:
                        self.add_error(name, "Required for a Bloom filter.")
                columns.append({"column": column.name, "bloom": {"bits": size, "hashes": hashes}})
            else:
                categories = split_list(data.get(f"col_{i}_categories", ""))
                confirmed = bool(data.get(f"col_{i}_categories_public"))
                if categories and not confirmed:
                    self.add_error(f"col_{i}_categories_public", CONFIRM_CATEGORIES)
                columns.append({"column": column.name,
                                **({"categories": categories, CONFIRM_PUBLIC: confirmed} if categories else {})})
            rows.append(i)
        return {"columns": columns, "levels": split_list(data.get("levels", ""))}, rows

    def clean(self):
        data = super().clean()
        data["spec"], data["rows"] = self._spec(data)
        data["price_curve"] = price_curve_of(self, data, needs={"compensation": ["margin", "E"]})
        data["compensation"] = compensation_of(data)
        return data

    def add_service_errors(self, fields: dict) -> None:
        """A service's errors (``DomainError.fields`` or ``listing_check``) at the inputs at fault:
        a column's at its inputs, the ladder's and the budget's at the levels, the rest where named."""
        for name, messages in fields.items():
            for message in messages:
                if name == "ceiling":  # the ladder's top is the listing's ceiling
                    message = f"The highest level counts in the dataset's budget. {message}"
                self._add_service_error({"c": "price_per_epsilon", "ceiling": "levels"}.get(name, name), message)

    def _add_service_error(self, name: str, message: str) -> None:
        if name == "microdata":
            name = self._microdata_input(message)
        if name in self.errors and message in self.errors[name]:
            return
        self.add_error(name if name in self.fields else None, message)

    def _microdata_input(self, message: str) -> str | None:
        if message.startswith("levels"):
            return "levels"
        found = _MICRODATA_COLUMN.match(message)
        rows = self.cleaned_data.get("rows") or []
        if found and 1 <= int(found.group(1)) <= len(rows):
            i = rows[int(found.group(1)) - 1]
            return f"col_{i}_bits" if "bloom" in message and f"col_{i}_bits" in self.fields else f"col_{i}_categories"
        return None


_MICRODATA_COLUMN = re.compile(r"^column (\d+)\b")
