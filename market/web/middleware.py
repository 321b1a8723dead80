from django.shortcuts import render
from django.views.defaults import page_not_found

from market.core.errors import Busy, NotFound
from market.core.locks import lost_race


class NotFoundMiddleware:
    """A selector's NotFound (missing, or someone else's) is the pages' ordinary 404; a step
    that cannot be taken right now (``Busy``, or a lock race no service ran again) is a 409
    page that says to try again, never a 500."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if isinstance(exception, NotFound):
            return page_not_found(request, exception)
        if isinstance(exception, Busy) or lost_race(exception):
            response = render(request, "web/busy.html", status=409)
            response["Retry-After"] = "1"
            return response
        return None
