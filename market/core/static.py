"""The static files' storage once ``collectstatic`` has run (production and the demo)."""

from whitenoise.storage import CompressedManifestStaticFilesStorage


class CollectedStaticFiles(CompressedManifestStaticFilesStorage):
    """WhiteNoise's storage (gzip copies, names with a hash of the content), whose pages link the
    hashed names even with DEBUG on, as the demo runs: those are the names WhiteNoise sends with
    a ten-year, "immutable" cache lifetime, so a second visit downloads no static file again."""

    def url(self, name, force=False):
        return super().url(name, force=True)
