"""The site's own pages: how it works, and the favicon's old address."""

from fractions import Fraction

from django.conf import settings
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.templatetags.static import static
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_safe

from releases.engine import lattice

#: the levels of the worked example on the how-it-works page
EXAMPLE_LEVELS = ("0.5", "1", "2")


@require_safe
def how_it_works(request):
    """What a level buys, what "± at 95%" means, buying step by step, and whom a release protects,
    for people who have not met differential privacy. Its one worked example is computed, not
    typed: the 95% bound of a count sold alone on the exact integer path at a few levels."""
    example = [{"epsilon": eps, "bound": lattice.error_bound(Fraction(eps))} for eps in EXAMPLE_LEVELS]
    return render(request, "web/how_it_works.html", {"example": example})


@require_safe
@cache_control(max_age=86400, public=True)
def favicon(request):
    """``/favicon.ico``, which browsers ask for by themselves: the site's SVG icon."""
    return redirect(static("img/favicon.svg"), permanent=True)


@require_safe
def run_token(request):
    """``/-/run-token``: the token scripts/run.sh gave this server process (``GRADUAL_RUN_TOKEN``), so the
    script says "ready" only when its own server answers, not another program on the port. A fresh random
    value each run, no secret; without one (any other way of serving the site) the path does not exist."""
    if not settings.RUN_TOKEN:
        raise Http404
    return HttpResponse(settings.RUN_TOKEN, content_type="text/plain; charset=utf-8",
                        headers={"Cache-Control": "no-store"})
