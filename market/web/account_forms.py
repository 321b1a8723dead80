from django import forms

from market.accounts.services import EXPIRY_MAX, ROTATION_GRACE_MAX
from market.webhooks.events import EVENT_TYPES, allowed_events


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


class WebhookForm(forms.Form):
    """A new webhook endpoint: its address and the events it receives (those the account's roles allow)."""

    url = forms.CharField(max_length=2000, label="Address", help_text="Where we send each event, e.g. https://example.com/hooks/gradual.")
    events = forms.MultipleChoiceField(choices=[], widget=forms.CheckboxSelectMultiple, label="Send me")
    description = forms.CharField(max_length=200, required=False, label="Note")

    def __init__(self, *args, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["events"].choices = [(kind, f"{kind}: {EVENT_TYPES[kind][1]}") for kind in allowed_events(user)]
