"""The site's 500 page (``handler500`` in ``market/urls.py``). Its 404 is Django's own handler
rendering ``templates/404.html`` with the request's context. With DEBUG off, as in production and
the demo (``scripts/run.sh``), no visitor sees Django's debug pages."""

import logging

from django.http import HttpResponseServerError
from django.template import loader

log = logging.getLogger(__name__)

#: the last resort when even the 500 template cannot render (no styles, no scripts: the CSP allows it)
PLAIN_500 = (
    "<!doctype html><html lang=\"en\"><meta charset=\"utf-8\"><title>Server error · Gradual data market</title>"
    "<h1>Something went wrong on our side</h1><p><a href=\"/\">Back to the catalogue</a></p></html>"
)


def server_error(request):
    """The 500 page, rendered without the request's context: the context processors read the
    database and the session, which may be what failed. Plain HTML if even that cannot render."""
    try:
        return HttpResponseServerError(loader.get_template("500.html").render())
    except Exception:
        log.exception("the 500 page could not be rendered")
        return HttpResponseServerError(PLAIN_500)
