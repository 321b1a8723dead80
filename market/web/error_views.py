"""The site's 500 and 503 pages (``handler500`` in ``market/urls.py``). Its 404 is Django's own handler
rendering ``templates/404.html`` with the request's context. With DEBUG off, as in production and
the demo (``scripts/run.sh``), no visitor sees Django's debug pages."""

import logging
import sys

from django.http import HttpResponse, HttpResponseServerError
from django.template import loader

from market.core.errors import ServiceUnavailable
from market.core.outages import is_outage

log = logging.getLogger(__name__)

#: the last resort when even the 500 template cannot render (no styles, no scripts: the CSP allows it)
PLAIN_500 = (
    "<!doctype html><html lang=\"en\"><meta charset=\"utf-8\"><title>Server error · Gradual data market</title>"
    "<h1>Something went wrong on our side</h1><p><a href=\"/\">Back to the catalogue</a></p></html>"
)


#: the same, for an outage (the database or Redis did not answer)
PLAIN_503 = (
    "<!doctype html><html lang=\"en\"><meta charset=\"utf-8\"><title>Try again in a moment · Gradual data market"
    "</title><h1>Try again in a moment</h1><p>The marketplace could not reach its database just now.</p>"
    "<p><a href=\"/\">Back to the catalogue</a></p></html>"
)


def server_error(request):
    """The 500 page, rendered without the request's context: the context processors read the
    database and the session, which may be what failed. Plain HTML if even that cannot render.
    An outage that escaped a view (``market.core.outages``: e.g. in a middleware) is the 503 page."""
    exc = sys.exc_info()[1]  # Django calls this handler while handling the exception
    if exc is not None and is_outage(exc):
        return unavailable_page()
    try:
        return HttpResponseServerError(loader.get_template("500.html").render())
    except Exception:
        log.exception("the 500 page could not be rendered")
        return HttpResponseServerError(PLAIN_500)


def unavailable_page() -> HttpResponse:
    """503 with ``Retry-After``: the database or the cache did not answer (rendered without the
    request's context, which would read them)."""
    try:
        response = HttpResponse(loader.get_template("503.html").render(), status=503)
    except Exception:
        log.exception("the 503 page could not be rendered")
        response = HttpResponse(PLAIN_503, status=503)
    response["Retry-After"] = str(ServiceUnavailable.retry_after)
    return response
