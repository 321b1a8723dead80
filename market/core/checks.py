"""System checks of the core app: the encryption keys."""

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
