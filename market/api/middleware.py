"""Headers the API adds to its answers after the view: rate limits (``throttling``) and
deprecations (``deprecation``), each set where the request was counted or routed."""

from __future__ import annotations

from .deprecation import deprecation_of
from .throttling import rate_limit_headers


class ApiHeadersMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        rate_limit_headers(request, response)
        deprecation = getattr(request, "gradual_deprecation", None)
        if deprecation is not None:
            for name, value in deprecation.headers().items():
                response[name] = value
        return response

    def process_view(self, request, view_func, view_args, view_kwargs):
        request.gradual_deprecation = deprecation_of(view_func, request.method)
