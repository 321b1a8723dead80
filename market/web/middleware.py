import logging

from django.shortcuts import render
from django.views.defaults import page_not_found

from market.core.errors import Busy, NotFound, ServiceUnavailable
from market.core.locks import lost_race
from market.core.outages import is_outage, note

from .error_views import unavailable_page

log = logging.getLogger(__name__)


class NotFoundMiddleware:
    """A selector's NotFound (missing, or someone else's) is the pages' ordinary 404; a step
    that cannot be taken right now (``Busy``, or a lock race no service ran again) is a 409
    page that says to try again; the database or Redis not answering is the 503 page; never a 500."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if isinstance(exception, NotFound):
            return page_not_found(request, exception)
        if isinstance(exception, ServiceUnavailable) or is_outage(exception):
            log.warning("a dependency did not answer: %s: %s", type(exception).__name__, exception)
            note(request, exception)  # a read is run once more on a fresh connection
            return unavailable_page()
        if isinstance(exception, Busy) or lost_race(exception):
            response = render(request, "web/busy.html", status=409)
            response["Retry-After"] = "1"
            return response
        return None
