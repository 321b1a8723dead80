"""Querysets are scoped to who asks and fail closed (``market/api/scoping.py``,
``market/core/visibility.py``).

* No selector and no API module touches ``Model.objects`` (or a model's ``_default_manager``/
  ``_base_manager``) itself: rows come from ``market.core.visibility``, whose unscoped reads are
  named ``dangerously_...``. The check reads the source (an AST walk); a mutation shows it catches
  a bypass.
* Every API view that lists rows derives from ``ScopedListView``; one without ``scoped_queryset``
  refuses to read rows, and one that sets DRF's class-level ``queryset`` is refused at definition.
"""

import ast
import inspect
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.urls import get_resolver
from rest_framework.generics import GenericAPIView
from rest_framework.test import APIRequestFactory

from market.api.scoping import ScopedListView

ROOT = Path(__file__).resolve().parents[1]
MANAGERS = {"objects", "_default_manager", "_base_manager"}


def checked_files() -> list[Path]:
    """The selectors of every app and every module of the API."""
    return sorted([*ROOT.glob("market/*/selectors.py"), ROOT / "releases" / "selectors.py", *ROOT.glob("market/api/*.py")])


def bypasses(source: str, name: str = "<source>") -> list[str]:
    """``file:line`` of every manager access outside a function named ``dangerously_...``."""
    found = []

    def walk(node, escaped: bool):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            escaped = escaped or node.name.startswith("dangerously_")
        if isinstance(node, ast.Attribute) and node.attr in MANAGERS and not escaped:
            found.append(f"{name}:{node.lineno} .{node.attr}")
        for child in ast.iter_child_nodes(node):
            walk(child, escaped)

    walk(ast.parse(source), False)
    return found


def test_the_checked_files_include_every_selector_and_the_api():
    names = {str(p.relative_to(ROOT)) for p in checked_files()}
    assert {"market/catalog/selectors.py", "market/trading/selectors.py", "market/ledger/selectors.py",
            "releases/selectors.py", "market/api/views.py", "market/api/keys.py", "market/api/webhooks.py"} <= names


def test_no_selector_or_api_view_reads_a_model_manager_directly():
    found = [hit for path in checked_files() for hit in bypasses(path.read_text(), str(path.relative_to(ROOT)))]
    assert not found, "use market.core.visibility (or name an unscoped read dangerously_...):\n" + "\n".join(found)


@pytest.mark.parametrize(
    "source, caught",
    [
        ("def purchase_get(*, user, purchase_id):\n    return Purchase.objects.get(pk=purchase_id)\n", 1),
        ("def rows(model):\n    return model._default_manager.all()\n", 1),
        ("def dangerously_every_purchase():\n    return Purchase.objects.all()\n", 0),
        ("def purchase_get(*, user):\n    return visibility.purchases(user)\n", 0),
    ],
)
def test_the_check_catches_a_bypass(source, caught):
    assert len(bypasses(source)) == caught


def test_the_catalog_and_trading_selectors_bypass_nothing():
    for path in ("market/catalog/selectors.py", "market/trading/selectors.py"):
        assert bypasses((ROOT / path).read_text()) == []


def _api_views():
    seen = set()
    stack = list(get_resolver().url_patterns)
    while stack:
        entry = stack.pop()
        if hasattr(entry, "url_patterns"):
            stack.extend(entry.url_patterns)
            continue
        view = getattr(entry.callback, "view_class", None) or getattr(entry.callback, "cls", None)
        if view is not None and view.__module__.startswith("market.api"):
            seen.add(view)
    return seen


def test_every_api_view_that_lists_rows_is_scoped():
    views = _api_views()
    assert views, "no API views found"
    generic = [v for v in views if issubclass(v, GenericAPIView)]
    assert generic, "no list views found"
    unscoped = [v.__name__ for v in generic if not issubclass(v, ScopedListView)]
    assert not unscoped, f"list views not derived from ScopedListView: {unscoped}"
    missing = [v.__name__ for v in generic if not callable(getattr(v, "scoped_queryset", None))]
    assert not missing, f"ScopedListViews without scoped_queryset(user): {missing}"
    # nor does any view fall back on DRF's unscoped class-level queryset
    assert not [v.__name__ for v in views if getattr(v, "queryset", None) is not None]


def test_a_view_without_scoped_queryset_fails_closed(rf=APIRequestFactory()):
    class Forgetful(ScopedListView):
        pass

    view = Forgetful()
    view.request = rf.get("/")
    with pytest.raises(ImproperlyConfigured, match="without scoped_queryset"):
        view.get_queryset()
    with pytest.raises(ImproperlyConfigured, match="without scoped_queryset"):
        view.scoped_page()


def test_a_class_level_queryset_is_refused_at_definition():
    with pytest.raises(ImproperlyConfigured, match="sets queryset"):
        type("Everyone", (ScopedListView,), {"queryset": object()})


def test_a_scoped_view_reads_only_what_its_user_may_see():
    asked = []

    class Mine(ScopedListView):
        def scoped_queryset(self, user):
            asked.append(user)
            return ["row of " + str(user)]

    view = Mine()
    view.request = type("Request", (), {"user": "ann"})()
    assert view.get_queryset() == ["row of ann"] and asked == ["ann"]
    assert inspect.signature(Mine.scoped_queryset).parameters.keys() == {"self", "user"}
