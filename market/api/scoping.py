"""Querysets scoped to who asks, failing closed (modelled on PostHog's ``posthog/api/routing.py``).

Every API view that lists rows derives from :class:`ScopedListView` and names its rows with
``scoped_queryset(user)``: a selector's queryset, itself built on ``market.core.visibility``,
so a row outside it does not exist for the user. ``get_queryset`` (what pagination and DRF's
generic machinery read) only ever returns that. A view that forgets it fails closed: it has no
rows to show (``ImproperlyConfigured``, a 500), never everyone's; a class-level ``queryset``
(DRF's unscoped default) is refused when the class is defined. ``tests/test_scoping.py`` checks
that every list view of the API derives from it and that no API view or selector touches
``Model.objects`` outside ``visibility.dangerously_unscoped``.
"""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured
from django.db.models import QuerySet
from rest_framework.generics import GenericAPIView


class ScopedListView(GenericAPIView):
    """A view whose rows are ``self.scoped_queryset(user)`` for the user who asks."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("queryset") is not None:
            raise ImproperlyConfigured(
                f"{cls.__name__} sets queryset: every user would read the same rows; define scoped_queryset(user)"
            )

    def get_queryset(self) -> QuerySet:
        scoped = getattr(self, "scoped_queryset", None)
        if scoped is None:
            raise ImproperlyConfigured(f"{type(self).__name__} reads rows without scoped_queryset(user): refused")
        return scoped(self.request.user)

    def scoped_page(self):
        """The current page of the scoped rows (``?cursor=``), as the view's paginator cuts it."""
        return self.paginate_queryset(self.get_queryset())
