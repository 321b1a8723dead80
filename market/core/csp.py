"""A Content-Security-Policy on every response (pages, the API, static files, errors).

No 'unsafe-inline' and no 'unsafe-eval': scripts and styles come only from this
site's own files, so an injected <script> or style="..." does nothing. Pages
embed data as <script type="application/json"> (not executed, so allowed) and
set styles from script through the CSSOM, which the policy permits.
(Django 5.2 has no CSP support of its own; 6.0 adds it.)
"""

from django.conf import settings

POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
)


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response
        self.policy = getattr(settings, "CONTENT_SECURITY_POLICY", POLICY)

    def __call__(self, request):
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", self.policy)
        return response
