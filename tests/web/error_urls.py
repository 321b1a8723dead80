"""The site's URLs plus one view that fails, for the 500 page's tests (tests/web/test_error_pages.py)."""

from django.urls import path

from market.urls import handler404, handler500, urlpatterns as site  # noqa: F401 - the handlers under test


def fails(request):
    raise RuntimeError("an internal detail: table secret_answers, row 42")


urlpatterns = [path("fails/", fails), *site]
