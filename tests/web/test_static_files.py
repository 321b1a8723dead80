"""Static files as production and the demo serve them, and the server's time on every response."""

import json
import re

import pytest
from django.test.utils import override_settings
from whitenoise.storage import CompressedManifestStaticFilesStorage

from market.core.static import CollectedStaticFiles


@pytest.mark.django_db
def test_every_response_states_the_servers_time(client):
    for path in ("/", "/accounts/login/", "/no-such-page/", "/api/v1/listings/"):
        timing = client.get(path)["Server-Timing"]
        wall, cpu = re.fullmatch(r"app;dur=(\d+\.\d), cpu;dur=(\d+\.\d)", timing).groups()
        assert 0 < float(cpu) <= float(wall) + 1  # CPU time of the thread: within the wall time (rounding aside)


def test_collected_files_are_linked_by_their_hashed_names_even_with_debug_on(tmp_path):
    """The demo runs with DEBUG on: its pages must still link the names WhiteNoise caches for years."""
    (tmp_path / "staticfiles.json").write_text(json.dumps(
        {"version": "1.1", "paths": {"css/site.css": "css/site.0123456789ab.css"}, "hash": "x"}))
    with override_settings(DEBUG=True):
        assert CollectedStaticFiles(location=tmp_path).url("css/site.css") == "/static/css/site.0123456789ab.css"
        assert CompressedManifestStaticFilesStorage(location=tmp_path).url("css/site.css") == "/static/css/site.css"
    with override_settings(DEBUG=False):
        assert CollectedStaticFiles(location=tmp_path).url("css/site.css") == "/static/css/site.0123456789ab.css"
