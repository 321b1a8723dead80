"""``Server-Timing: app;dur=<ms>, cpu;dur=<ms>`` on every response: how long the server took to
answer, and how much of that this process's thread spent computing (the rest is waiting: for the
database, or for a CPU that other work holds).

Browsers show it in their developer tools and give it to pages (``PerformanceNavigationTiming.
serverTiming``); the page-weight tests read it. It states durations only, nothing a client could
not time for itself.
"""

import time


class ServerTimingMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        start, start_cpu = time.perf_counter(), time.thread_time()
        response = self.get_response(request)
        wall, cpu = time.perf_counter() - start, time.thread_time() - start_cpu
        response.headers.setdefault("Server-Timing", f"app;dur={wall * 1000:.1f}, cpu;dur={cpu * 1000:.1f}")
        return response
