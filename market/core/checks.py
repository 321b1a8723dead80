"""System checks of the core app: the encryption keys, and demo mode kept out of production."""

from django.conf import settings
from django.core import checks

from . import crypto


@checks.register(checks.Tags.security)
def encryption_keys_valid(app_configs, **kwargs):
    """GRADUAL_ENCRYPTION_KEYS must parse (always checked: a malformed ring opens nothing)."""
    try:
        crypto.keyring()
    except crypto.KeyConfigError as exc:
        return [checks.Error(str(exc), id="gradual.E001", hint="id:base64-32-bytes, comma-separated, current first")]
    return []


@checks.register(checks.Tags.security, deploy=True)
def encryption_key_not_derived(app_configs, **kwargs):
    """Production seals with a key of its own, not the one derived from SECRET_KEY."""
    try:
        derived = crypto.uses_derived_key()
    except crypto.KeyConfigError:
        return []  # reported by encryption_keys_valid
    if derived:
        return [
            checks.Warning(
                "Data files, true answers and stored noise are encrypted with a key derived from SECRET_KEY.",
                hint="Set GRADUAL_ENCRYPTION_KEYS (e.g. 'k1:' + 32 random bytes in base64, first), keep 'dev' after "
                "it until `manage.py rotate_encryption_keys` has run, then remove 'dev'.",
                id="gradual.W001",
            )
        ]
    return []


@checks.register(checks.Tags.security, deploy=True)
def demo_mode_off_in_production(app_configs, **kwargs):
    """DEMO_MODE in production is an error: buyers would top up their own wallets and owners be paid out
    at once, without staff (and it used to turn on private webhook addresses too)."""
    if getattr(settings, "PRODUCTION", False) and getattr(settings, "DEMO_MODE", False):
        return [
            checks.Error(
                "DEMO_MODE is on in production: any buyer can add credits to their own wallet, and payouts are "
                "marked paid without staff.",
                hint="Unset DEMO_MODE (or set it to 0) where DJANGO_ENV=production.",
                id="gradual.E002",
            )
        ]
    return []
