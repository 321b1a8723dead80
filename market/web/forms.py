from decimal import Decimal

from django import forms
from django.contrib.auth.forms import UserCreationForm

from market.accounts.models import User
from market.catalog.selectors import KINDS


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


class BuyForm(forms.Form):
    epsilon = forms.CharField(label="Buy up to ε", widget=forms.TextInput(attrs={"inputmode": "decimal", "autocomplete": "off"}))


class TopUpForm(forms.Form):
    amount = forms.DecimalField(min_value=Decimal("0.01"), max_value=Decimal("100000"), decimal_places=2, initial=Decimal("100"), label="Amount (credits)")
