from decimal import Decimal

from django import forms
from django.contrib.auth.forms import UserCreationForm

from market.accounts.models import User
from market.catalog.selectors import KINDS
from market.catalog.spec import MICRODATA_CURVE_NAME


class SignupForm(UserCreationForm):
    ROLES = [("buyer", "Buy data"), ("owner", "List my data"), ("both", "Both")]
    email = forms.EmailField(required=False, help_text="Optional: for receipts.")
    role = forms.ChoiceField(choices=ROLES, initial="buyer", widget=forms.RadioSelect, label="I want to")

    class Meta(UserCreationForm.Meta):
        model = User
        fields = ("username", "email")

    def save(self, commit=True):
        user = super().save(commit=False)
        role = self.cleaned_data["role"]
        user.is_buyer = role in ("buyer", "both")
        user.is_owner = role in ("owner", "both")
        if commit:
            user.save()
        return user


class CatalogueFilterForm(forms.Form):
    q = forms.CharField(required=False, label="Search", widget=forms.TextInput(attrs={"type": "search", "placeholder": "title or description"}))
    kind = forms.ChoiceField(required=False, label="Statistic", choices=[("", "any")] + [(k, k) for k in KINDS])
    max_price = forms.DecimalField(required=False, min_value=0, decimal_places=2, label="Average price per ε at most (credits)")
    min_ceiling = forms.DecimalField(required=False, min_value=0, decimal_places=4, label="Ceiling at least (ε)")
    sort = forms.ChoiceField(
        required=False,
        label="Sort by",
        choices=[("newest", "newest"), ("price", "cheapest"), ("-price", "most expensive"), ("ceiling", "highest ceiling"), ("title", "title")],
    )


def _records_field():
    return forms.IntegerField(
        required=False, min_value=1, max_value=10**9, label="Records in each mean's cell (assumed)",
        widget=forms.NumberInput(attrs={"inputmode": "numeric", "autocomplete": "off"}),
    )


def assume_records(form, default: int) -> None:
    """Show a form's records field with the default the figures assume when it is left empty."""
    field = form.fields["records"]
    field.widget.attrs["placeholder"] = str(default)
    if getattr(form, "records_help", None):
        field.help_text = form.records_help(default)


class BuyForm(forms.Form):
    @staticmethod
    def records_help(default: int) -> str:
        """The records field's help, built when the default is known (never a template left unfilled)."""
        return ("A mean's bound depends on how many records its cell holds, which stays private: "
                f"the figures assume this many (default {default:,}).")

    epsilon = forms.CharField(label="Buy up to ε", widget=forms.TextInput(attrs={"inputmode": "decimal", "autocomplete": "off"}))
    records = _records_field()
    #: the price the Confirm button showed: the purchase pays at most this (a higher price asks again)
    max_price = forms.DecimalField(required=False, min_value=0, max_digits=14, decimal_places=2,
                                   widget=forms.HiddenInput)


class TargetForm(forms.Form):
    """Buy by accuracy: the 95% error bound needed, for one statistic or for all of them."""

    EVERY = ""
    within = forms.DecimalField(
        label="Error at most ±", max_digits=30, decimal_places=12,
        help_text="at 95%: the quote is for the cheapest level that meets it",
        widget=forms.TextInput(attrs={"inputmode": "decimal", "autocomplete": "off"}),
    )
    statistic = forms.ChoiceField(label="For", required=False)
    records = _records_field()

    def __init__(self, *args, names: list[str] = (), **kwargs):
        kwargs.setdefault("auto_id", "target_%s")
        super().__init__(*args, **kwargs)
        if list(names) == [MICRODATA_CURVE_NAME]:  # microdata: one bound, the same for every bit
            self.fields["statistic"].choices = [(self.EVERY, names[0])]
        else:
            self.fields["statistic"].choices = [(self.EVERY, "every statistic")] + [(n, n) for n in names]

    def clean_within(self):
        within = self.cleaned_data["within"]
        if within <= 0:
            raise forms.ValidationError("An error bound is a positive number, such as 0.5.")
        return within

    def target(self) -> list[tuple[str | None, Decimal]]:
        name = self.cleaned_data["statistic"] or None
        return [(name, self.cleaned_data["within"])]


class TopUpForm(forms.Form):
    amount = forms.DecimalField(min_value=Decimal("0.01"), max_value=Decimal("100000"), decimal_places=2, initial=Decimal("100"), label="Amount (credits)")
