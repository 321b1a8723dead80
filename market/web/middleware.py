from django.views.defaults import page_not_found

from market.core.errors import NotFound


class NotFoundMiddleware:
    """A selector's NotFound (missing, or someone else's) is the pages' ordinary 404."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if isinstance(exception, NotFound):
            return page_not_found(request, exception)
        return None
