"""``Server-Timing: app;dur=<ms>`` on every response: how long the server took to answer.

Browsers show it in their developer tools and give it to pages (``PerformanceNavigationTiming.
serverTiming``); the page-weight tests read it. It states a duration only, nothing a client could
not time for itself.
"""

import time


class ServerTimingMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        start = time.perf_counter()
        response = self.get_response(request)
        response.headers.setdefault("Server-Timing", f"app;dur={(time.perf_counter() - start) * 1000:.1f}")
        return response
