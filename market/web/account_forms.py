from django import forms

from market.accounts.services import EXPIRY_MAX, ROTATION_GRACE_MAX


class ApiKeyForm(forms.Form):
    name = forms.CharField(max_length=100, label="Name", help_text="What the key is for, e.g. “nightly report”.")
    expires_in_days = forms.IntegerField(
        required=False, min_value=1, max_value=EXPIRY_MAX.days, label="Expires after (days)",
        help_text="Leave empty for a key that works until you revoke it.",
    )


class RotateForm(forms.Form):
    grace_hours = forms.IntegerField(
        required=False, min_value=0, max_value=int(ROTATION_GRACE_MAX.total_seconds() // 3600), initial=0,
        label="Old key keeps working for (hours)",
    )


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=[("buyer", "buyer"), ("owner", "owner")])
