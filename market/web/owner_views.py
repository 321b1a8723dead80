"""The owner's pages: the dashboard, uploading a dataset, creating a listing, a listing's figures.

Thin views: writes go through ``market.catalog.services``, reads through
``market.trading.dashboard``. A signed-in user who is not an owner gets a page
saying how to become one (403); another owner's datasets and listings do not
exist (404).
"""

from __future__ import annotations

from functools import wraps

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from market.trading import dashboard as figures
from market.catalog.composition import delta_text
from market.catalog.privacy import profile_chart
from market.catalog.risk import budget_chart
from market.catalog import selectors as catalog_selectors
from market.catalog import whatif
from market.catalog.spec.columns import MISSING as MISSING_POLICIES
from market.catalog.spec.columns import NUMERIC as NUMERIC_TYPES
from market.catalog.spec.columns import TYPES as COLUMN_TYPES
from market.catalog.spec.columns import Column
from market.catalog.ingest import TOP_CATEGORIES, markers_text
from market.catalog.uploads import too_large_message
from market.catalog.services import (
    dataset_budget_set,
    dataset_columns_set,
    dataset_create,
    dataset_remove,
    listing_check,
    listing_close,
    listing_compare,
    listing_create,
    listing_create_microdata,
    listing_reopen,
    listing_update,
    same_content_notice,
)
from market.catalog import microdata
from market.catalog.spec import MAX_STATISTICS, SpecError
from market.core import visibility
from market.core.errors import DomainError, NotFound
from market.ledger import selectors as ledger

from .owner_forms import (
    BudgetForm,
    FitsForm,
    CompositionForm,
    SampledSensitivityForm,
    DatasetUploadForm,
    ListingCloseForm,
    ListingEditForm,
    ListingForm,
    ListingPriceForm,
    MicrodataForm,
    StatisticForm,
    add_domain_errors,
    add_statistics_errors,
    statistic_formset,
)
from .listing_builder import builder_kinds
from . import svg
from .templatetags.levels import level


def owner_required(view):
    """Let owners through; anyone else signed in gets the page on becoming one (403)."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not request.user.is_owner:
            return render(request, "owner/not_owner.html", status=403)
        return view(request, *args, **kwargs)

    return wrapped


@login_required
@owner_required
def dashboard(request):
    overview = figures.owner_overview(user=request.user)
    return render(request, "owner/dashboard.html", {**overview, "earnings_balance": ledger.earnings_balance(user=request.user)})


def _owned_dataset(request, dataset_id: str):
    try:
        return catalog_selectors.dataset_get(user=request.user, dataset_id=dataset_id)
    except NotFound:
        raise Http404("no such dataset among yours") from None


def _numeric_columns(dataset) -> list[str]:
    return [c["name"] for c in dataset.columns or [] if isinstance(c, dict) and c.get("type") in NUMERIC_TYPES]


def _budget_page(request, dataset, form, *, status: int = 200, sensitivity_form=None, sensitivity=None):
    """The budget page: the budget form, the figures, the history, and the two what-ifs (composition,
    from the address's ``delta`` and ``eps``; the sampled sensitivity, when one was asked for)."""
    composition_form = CompositionForm(request.GET or None)
    composition = None
    try:
        composition = whatif.dataset_composition(user=request.user, dataset_id=dataset.public_id,
                                                 delta=request.GET.get("delta"), eps=request.GET.get("eps"))
    except DomainError as exc:
        composition_form.is_valid()
        add_domain_errors(composition_form, exc)
        status = 400 if status == 200 else status
    fits_form, fits = FitsForm(request.GET or None), None
    if request.GET.get("fit_ceiling") is not None:
        try:
            fits = whatif.dataset_fits(user=request.user, dataset_id=dataset.public_id,
                                       mechanism=request.GET.get("fit_mechanism") or "lattice",
                                       ceiling=request.GET.get("fit_ceiling"), values=request.GET.get("fit_values"))
        except DomainError as exc:
            fits_form.is_valid()
            add_domain_errors(fits_form, exc)
            status = 400 if status == 200 else status
    context = {
        "fits_form": fits_form, "fits": fits, "composed": catalog_selectors.dataset_composed(dataset),
        "dataset": dataset, "form": form, "history": catalog_selectors.dataset_budget_history(user=request.user, dataset=dataset),
        "composition_form": composition_form, "composition": composition,
        "sensitivity_form": sensitivity_form or SampledSensitivityForm(numeric=_numeric_columns(dataset)),
        "sensitivity": sensitivity, "definitions": whatif.DEFINITIONS, "what_if": whatif.WHAT_IF,
    }
    return render(request, "owner/dataset_budget.html", context, status=status)


@login_required
@owner_required
def dataset_budget(request, dataset_id: str):
    """Change one of the owner's datasets' budget, with the reason kept; its past changes below;
    the what-ifs on how its listings compose and on a query's sampled sensitivity."""
    dataset = _owned_dataset(request, dataset_id)
    posted = request.method == "POST"
    form = BudgetForm(request.POST) if posted else BudgetForm(
        initial={"total_budget": dataset.total_budget, "delta": delta_text(dataset.delta_budget) or ""})
    if posted and form.is_valid():
        try:
            dataset_budget_set(
                actor=request.user, dataset_id=dataset.public_id, budget=form.cleaned_data["total_budget"],
                reason=form.cleaned_data["reason"], delta=form.cleaned_data["delta"].strip() or None,
            )
        except DomainError as exc:
            add_domain_errors(form, exc)
        else:
            messages.success(request, f"The budget of “{dataset.name}” is now ε {form.cleaned_data['total_budget'].normalize():f}.")
            return redirect("web:owner")
    return _budget_page(request, dataset, form)


@require_POST
@login_required
@owner_required
def dataset_sampled_sensitivity(request, dataset_id: str):
    """The sampled-sensitivity what-if: shown on the budget page (400 with the reasons when the inputs are wrong)."""
    dataset = _owned_dataset(request, dataset_id)
    form = SampledSensitivityForm(request.POST, numeric=_numeric_columns(dataset))
    result, status = None, 400
    if form.is_valid():
        d = form.cleaned_data
        try:
            result = whatif.dataset_sampled_sensitivity(
                user=request.user, dataset_id=dataset.public_id, kind=d["kind"], column=d["column"] or None,
                target=d["target"] or None, features=d["features"], lam=d["lam"], gamma2=d["gamma2"],
                pairs=d["pairs"], subsample=d["subsample"])
        except DomainError as exc:
            add_domain_errors(form, exc)
        else:
            status = 200
    budget_form = BudgetForm(initial={"total_budget": dataset.total_budget})
    return _budget_page(request, dataset, budget_form, status=status, sensitivity_form=form, sensitivity=result)


@login_required
@owner_required
def dataset_new(request):
    posted = request.method == "POST"
    form = DatasetUploadForm(request.POST, request.FILES) if posted else DatasetUploadForm()
    if posted and getattr(request, "upload_too_large", None):  # stopped at the limit (market.catalog.uploads)
        form.is_valid()
        form.errors["file"] = form.error_class([too_large_message(request.upload_too_large)])
        context = {"form": form, "max_mb": settings.UPLOAD_MAX_BYTES / 2**20}
        return render(request, "owner/dataset_new.html", context, status=413)
    if posted and form.is_valid():
        d = form.cleaned_data
        try:
            dataset = dataset_create(
                owner=request.user,
                name=d["name"],
                description=d["description"],
                upload=d["file"],
                source=d.get("source", ""),
                licence=d.get("licence", ""),
                total_budget=d["total_budget"],
                relation=d["relation"],
                record_name=d["record_name"],
                record_name_plural=d["record_name_plural"],
            )
        except DomainError as exc:
            add_domain_errors(form, exc)
            if exc.retry_after is not None:  # too many of the owner's datasets being read: try again later
                context = {"form": form, "max_mb": settings.UPLOAD_MAX_BYTES / 2**20}
                page = render(request, "owner/dataset_new.html", context, status=exc.status)
                page["Retry-After"] = str(exc.retry_after)
                return page
        else:
            messages.success(
                request,
                f"Dataset “{dataset.name}” uploaded ({dataset.upload_size:,} bytes), privacy budget "
                f"ε {dataset.total_budget.normalize():f}. It is being read now; then confirm its columns.",
            )
            if dataset.same_content_as:
                messages.warning(request, same_content_notice(dataset.same_content_as))
            return redirect("web:owner-dataset-columns", dataset_id=dataset.public_id)
    return render(request, "owner/dataset_new.html", {"form": form, "max_mb": settings.UPLOAD_MAX_BYTES / 2**20})


def _dataset_context(request, dataset_id: str) -> dict:
    try:
        dataset = catalog_selectors.dataset_get(user=request.user, dataset_id=dataset_id)
    except NotFound:
        raise Http404("no such dataset") from None
    progress = dataset.progress or {}
    return {
        "dataset": dataset,
        "progress": {"phase": progress.get("phase", "queued"), "rows": progress.get("rows", 0),
                     "percent": progress.get("percent", 0)},
        "types": COLUMN_TYPES,
        "policies": MISSING_POLICIES,
    }


@login_required
@owner_required
def dataset_status(request, dataset_id: str):
    """The small fragment the column page polls while the dataset is processed (htmx)."""
    context = _dataset_context(request, dataset_id)
    response = render(request, "owner/_dataset_status.html", context)
    if context["dataset"].status != "processing" and request.headers.get("HX-Request"):
        response["HX-Refresh"] = "true"  # done: the whole page shows the columns or the reasons
    return response


@login_required
@owner_required
def dataset_columns(request, dataset_id: str):
    """A dataset's progress while it is processed; then its column review: a row per column
    (name, inferred type, summary, a type and a missing policy to choose), or why it failed."""
    context = _dataset_context(request, dataset_id)
    dataset = context["dataset"]
    errors: list[str] = []
    if request.method == "POST" and dataset.status == "ready":
        changes = [
            {"name": c["name"], "type": request.POST.get(f"type-{i}", c["type"]),
             "missing": request.POST.get(f"missing-{i}", c["missing"])}
            for i, c in enumerate(dataset.columns)
        ]
        try:
            after = dataset_columns_set(owner=request.user, dataset_id=dataset.public_id, columns=changes)
        except DomainError as exc:
            errors = [m for ms in (exc.fields or {}).values() for m in ms] or [str(exc)]
        else:
            if after.status == "ready":
                messages.success(request, f"The columns of “{dataset.name}” are confirmed. Now offer statistics over it.")
                return redirect(f"{reverse('web:owner-listing-new')}?dataset={dataset.public_id}")
            messages.success(request, "Columns saved: the typed file is being rebuilt.")
            return redirect("web:owner-dataset-columns", dataset_id=dataset.public_id)
    rows = []
    for i, column in enumerate(dataset.columns if dataset.status == "ready" else []):
        column = column if isinstance(column, dict) else {"name": column, "type": "decimal", "missing": "none"}
        seen = [{"value": _value_text(c["value"] if isinstance(c, dict) else c),
                 "count": c.get("count") if isinstance(c, dict) else None} for c in column.get("categories") or []]
        rows.append({"index": i, **column, "top": [c["value"] for c in seen[:8]], "seen": seen,
                     "markers_text": markers_text(column.get("markers")),
                     # a large distinct count is an estimate (datasets read before the flag: above 500 values)
                     "distinct_about": not column.get("distinct_exact", (column.get("distinct") or 0) <= 10 * TOP_CATEGORIES)})
    seen = [row for row in rows if row["seen"] or row.get("min") is not None]
    return render(request, "owner/dataset_columns.html", {**context, "rows": rows, "errors": errors, "seen": seen})


@require_POST
@login_required
@owner_required
def dataset_remove_view(request, dataset_id: str):
    """Remove the dataset (the page's "Remove" button, after its confirm): back to the dashboard."""
    dataset = _dataset_context(request, dataset_id)["dataset"]  # 404 for one that is not the owner's
    try:
        dataset_remove(owner=request.user, dataset_id=dataset.public_id)
    except DomainError as exc:
        messages.error(request, f"“{dataset.name}” was not removed: {exc.message}.")
        return redirect("web:owner-dataset-columns", dataset_id=dataset.public_id)
    messages.success(request, f"“{dataset.name}” is removed: its listings are closed (their buyers keep what they "
                              "bought) and its stored files are deleted.")
    return redirect("web:owner")


def _value_text(value) -> str:
    """A value seen in the data as the listing's inputs take it: true/false for a boolean, else text."""
    return "true" if value is True else "false" if value is False else str(value)


def _as_id(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _chosen_dataset(request, options: list[dict]) -> dict | None:
    """The summary of the dataset a new listing is for: the posted one (None if it
    is not the owner's: the form says so), else ``?dataset=<public id>`` (404 if it is not
    the owner's), else the newest."""
    if request.method == "POST":
        dataset_id = request.POST.get("dataset")
    else:
        chosen = request.GET.get("dataset")
        dataset_id = options[0]["id"] if chosen is None else chosen
    try:
        return figures.dataset_summary(user=request.user, dataset_id=dataset_id)
    except NotFound:
        if request.method == "POST":
            return None
        raise Http404("no such dataset among yours") from None


def _create_listing(request, form, formset) -> int | None:
    """Call the service with the validated forms; its errors go to the inputs at fault."""
    d = form.cleaned_data
    statistics, rows = formset.specs()
    try:
        listing = listing_create(
            owner=request.user,
            dataset_id=d["dataset"].public_id,
            title=d["title"],
            description=d["description"],
            statistics=statistics,
            ceiling=d["ceiling"],
            size_level=d.get("size_level"),
            price_curve=d["price_curve"],
            compensation=d["compensation"],
            mechanism=d.get("mechanism") or "lattice",
            delta=d.get("delta") or None,
        )
    except DomainError as exc:
        if "c" in exc.fields:  # the curve's c is the form's price scale
            exc.fields["price_per_epsilon"] = exc.fields.pop("c")
        add_statistics_errors(formset, rows, exc.fields.get("statistics", []))
        add_domain_errors(form, exc, elsewhere={"statistics"})
        return None
    if listing.is_ready:
        messages.success(request, f"Listing “{listing.title}” created. Buyers can buy it from now on.")
    else:
        messages.success(request, f"Listing “{listing.title}” is being prepared: its answer is computed over the whole "
                                  "table, its budget reserved meanwhile. It opens to buyers when it is ready.")
    return listing.pk


def _compare(request, form, formset) -> dict | None:
    """Both mechanisms' error bounds at the ceiling for the statistics as posted (``listing_compare``),
    or None with the service's reasons on the inputs at fault."""
    d = form.cleaned_data
    statistics, rows = formset.specs()
    try:
        found = listing_compare(owner=request.user, dataset_id=d["dataset"].public_id, statistics=statistics,
                                ceiling=d["ceiling"], delta=d.get("delta") or None)
    except DomainError as exc:
        add_statistics_errors(formset, rows, exc.fields.get("statistics", []))
        add_domain_errors(form, exc, elsewhere={"statistics"})
        return None
    columns = [[v["error_bound"] for v in entry["values"]] or [None] * len(found["mechanisms"][0]["values"])
               for entry in found["mechanisms"]]
    labels = [v["label"] for v in found["mechanisms"][0]["values"]]
    return {**found, "rows": [(label, [column[i] for column in columns]) for i, label in enumerate(labels)]}


def _check_the_rest(request, form, formset) -> None:
    """With some inputs wrong, what the service would say about the others (the ceiling against
    the budget, the price, the statistics of the rows that are filled in well), so that the
    page shows every error at once rather than one more on each attempt."""
    d = form.cleaned_data
    if d.get("dataset") is None:
        return
    statistics, rows = formset.specs()
    curve = d.get("price_curve")
    problems = listing_check(
        owner=request.user,
        dataset_id=d["dataset"].public_id,
        statistics=statistics or None,
        ceiling=d.get("ceiling"),
        price_curve=curve if curve and curve["kind"] != "compensation" else None,  # its model is judged with the rest
    )
    if "c" in problems:  # the curve's c is the form's price scale
        problems["price_per_epsilon"] = problems.pop("c")
    add_statistics_errors(formset, rows, problems.pop("statistics", []))
    for name, texts in problems.items():
        if name not in form.errors:
            for text in texts:
                form.add_error(name if name in form.fields else None, text)


def _with_another_row(request, columns):
    """The forms as posted, unbound (no errors yet), with one more statistic row. Nothing is
    filled in that the owner did not type: no categories, no bounds from the data."""
    post = request.POST
    total = min(_as_id(post.get("stats-TOTAL_FORMS")) or 0, MAX_STATISTICS)
    names = list(StatisticForm(columns=columns).fields)
    rows = [{name: post.get(f"stats-{i}-{name}", "") for name in names} for i in range(total)]
    for row in rows:
        row["categories_public"] = bool(row["categories_public"])
    form = ListingForm(user=request.user, initial={name: post.get(name, "") for name in ListingForm.base_fields})
    return form, statistic_formset(columns=columns, initial=rows, extra=1)


def _builder(columns) -> dict:
    """What the page's script reads: each kind's inputs and the columns' types. Nothing derived
    from the data's values (no categories, no minimum or maximum): the script must not offer them
    as defaults of what is published."""
    return {
        "kinds": {name: list(kind.inputs) for name, kind in builder_kinds().items()},
        "types": {column.name: column.type for column in columns},
    }


@login_required
@owner_required
def listing_new(request):
    """Create a listing on one of the owner's datasets, chosen by ``?dataset=<id>``
    (default: the newest). The "Add a statistic row" button posts the form to get it back with
    one more row. Categories and bounds are what the owner types: nothing derived from the data
    is a default of what is published (the data's values and ranges are on the dataset's review
    page, with what choosing from them publishes)."""
    options = figures.dataset_options(user=request.user)
    if not options:
        return render(request, "owner/listing_new.html", {"options": options})
    summary = _chosen_dataset(request, options)
    columns = (
        [Column(column["name"], column["type"], column["missing"]) for column in summary["columns"]] if summary else []
    )
    comparison = None
    if request.method != "POST":
        form = ListingForm(user=request.user, initial={"dataset": summary["id"]})
        formset = statistic_formset(columns=columns)
    elif request.POST.get("action") == "add-row" and summary:
        form, formset = _with_another_row(request, columns)
    else:
        data = request.POST.copy()
        form = ListingForm(data, user=request.user)
        formset = statistic_formset(columns=columns, data=data)
        form_valid, rows_valid = form.is_valid(), formset.is_valid()  # both: every input's errors at once
        if form_valid and rows_valid and request.POST.get("action") == "compare":
            comparison = _compare(request, form, formset)
            if comparison is not None:  # the proposal chosen, for the owner to keep or change
                form = ListingForm({**data.dict(), "mechanism": comparison["proposed"]}, user=request.user)
                form.is_valid()
        elif form_valid and rows_valid:
            listing_id = _create_listing(request, form, formset)
            if listing_id is not None:
                return redirect("web:owner-listing", listing_id=listing_id)
        else:
            _check_the_rest(request, form, formset)
    context = {"options": options, "summary": summary, "form": form, "formset": formset,
               "builder": _builder(columns), "comparison": comparison}
    return render(request, "owner/listing_new.html", context)


def _microdata_datasets(user) -> tuple[list[dict], list[dict]]:
    """The owner's ready datasets a microdata listing may use (public size) and the others, newest first."""
    ready = [d for d in visibility.owned_datasets(user).order_by("-created_at", "-id") if d.is_ready]
    public = [{"id": d.public_id, "name": d.name, "records": d.row_count} for d in ready if d.size_is_public]
    private = [{"id": d.public_id, "name": d.name} for d in ready if not d.size_is_public]
    return public, private


def _check_microdata(request, form) -> None:
    """With some inputs wrong, what the service would say about the others (the columns and the
    ladder against the dataset, the top level against the budget, the price): every error at once."""
    d = form.cleaned_data
    dataset = d.get("dataset")
    if dataset is None:
        return
    top = None
    try:
        md = microdata.build(d["spec"], dataset.columns, records=dataset.public_size, public=dataset.size_is_public)
        top = md.ceiling
    except SpecError as exc:
        form.add_service_errors({"microdata": [str(exc)]})
    curve = d.get("price_curve")
    form.add_service_errors(listing_check(
        owner=request.user, dataset_id=dataset.public_id, ceiling=top,
        price_curve=curve if curve and curve["kind"] != "compensation" else None,
    ))


@login_required
@owner_required
def listing_new_microdata(request):
    """Create a microdata listing (``market.catalog.microdata``) on one of the owner's ready datasets
    whose number of records is public, chosen by ``?dataset=<id>`` (default: the newest): its
    categorical and true/false columns to include (categories, or a Bloom filter), the ladder of
    levels and the price. A dataset of private size is refused with the reason."""
    public, private = _microdata_datasets(request.user)
    chosen = request.POST.get("dataset") if request.method == "POST" else request.GET.get("dataset")
    if chosen is None and public:
        chosen = public[0]["id"]
    summary, refused = None, None
    if chosen is not None:
        try:
            summary = figures.dataset_summary(user=request.user, dataset_id=chosen)
        except NotFound:
            if request.method != "POST":
                raise Http404("no such dataset among yours") from None
    if summary is not None and not any(option["id"] == summary["id"] for option in public):
        refused, summary = summary, None  # private size (or not ready): the page says why
    columns = [Column(c["name"], c["type"], c["missing"]) for c in summary["columns"]] if summary else []
    options = {"user": request.user, "columns": columns}
    status = 200
    if request.method == "POST":
        form = MicrodataForm(request.POST, **options)
        if form.is_valid() and refused is None:
            d = form.cleaned_data
            try:
                listing = listing_create_microdata(
                    owner=request.user, dataset_id=d["dataset"].public_id, title=d["title"],
                    description=d["description"], microdata_spec=d["spec"], price_curve=d["price_curve"],
                    compensation=d["compensation"],
                )
            except NotFound:
                form.add_error(None, "Choose one of your datasets.")
            except DomainError as exc:
                form.add_service_errors(exc.fields or {None: [exc.message]})
            else:
                messages.success(request, f"Listing “{listing.title}” created. Buyers can buy its levels from now on.")
                return redirect("web:owner-listing", listing_id=listing.pk)
        elif refused is None:
            _check_microdata(request, form)
        status = 400
    else:
        form = MicrodataForm(initial={"dataset": summary["id"] if summary else None, "levels": "0.5, 1, 2, 4"},
                             **options)
    context = {"public": public, "private": private, "summary": summary, "refused": refused, "form": form,
               "rows": form.column_rows(), "refusal": microdata.PUBLIC_SIZE_NEEDED}
    return render(request, "owner/listing_new_microdata.html", context, status=status)


def _revenue_chart(days: list[dict]):
    """Revenue per day as bars (the page has the same numbers in a table)."""
    return svg.bar_chart([row["day"].strftime("%-d %b") for row in days], [row["revenue"] for row in days],
                         x_title="day", y_title="credits", label="Revenue per day in credits; the table below has the same numbers")


def _drawn(chart: dict | None, label: str):
    return svg.line_chart(chart, label=label) if chart else None


def _privacy_gauge(spent, ceiling):
    """The privacy spent against the ceiling, as a filled bar."""
    return svg.meter(spent, ceiling, text=f"ε {level(spent)} spent of ε {level(ceiling)}",
                     label=f"Privacy spent: ε {level(spent)} of the ceiling ε {level(ceiling)}")


def _price_initial(curve: dict) -> dict:
    """The price form's inputs as the listing's curve has them."""
    return {"price_kind": curve.get("kind", "linear"), "price_per_epsilon": curve.get("c"), "p": curve.get("p"),
            "margin": curve.get("margin")}


def _listing_page(request, listing_id: int, *, status: int = 200, **forms):
    """A listing's figures and the forms that manage it (``forms``: those posted, with their errors)."""
    try:
        shown = figures.listing_dashboard(user=request.user, listing_id=listing_id)
    except NotFound:
        raise Http404("no such listing among yours") from None
    listing = shown["listing"]
    context = {
        **shown,
        "revenue_chart": _revenue_chart(shown["revenue_by_day"]),
        "gauge": _privacy_gauge(shown["spent"], shown["ceiling"]),
        "budget_chart": _drawn(budget_chart(visibility.owned_listings(request.user).get(pk=listing_id), shown["spent"]),
                               "Compensation budget against the finer privacy level for the largest level released, with its minimum marked"),
        "profile_chart": _drawn(profile_chart(shown["profiles"]), "δ against ε′ for each level released"),
        "edit_form": forms.get("edit_form")
        or ListingEditForm(initial={"title": listing["title"], "description": listing["description"]}),
        "price_form": forms.get("price_form") or ListingPriceForm(initial=_price_initial(listing["price_curve"])),
        "close_form": forms.get("close_form") or ListingCloseForm(),
        "reopen_error": forms.get("reopen_error"),
        "quality": catalog_selectors.listing_delivered_quality(user=request.user, listing_id=listing_id),
    }
    return render(request, "owner/listing.html", context, status=status)


@login_required
@owner_required
def listing_view(request, listing_id: int):
    return _listing_page(request, listing_id)


def _managed(request, listing_id: int, form_name: str, form, action, done: str):
    """Run ``action(form.cleaned_data)`` (a service) for a valid ``form``, then back to the listing
    with ``done``; else the listing's page again with the form's errors (400), nothing changed."""
    if form.is_valid():
        try:
            action(form.cleaned_data)
        except NotFound:
            raise Http404("no such listing among yours") from None
        except DomainError as exc:
            add_domain_errors(form, exc)
        else:
            messages.success(request, done)
            return redirect("web:owner-listing", listing_id=listing_id)
    return _listing_page(request, listing_id, status=400, **{form_name: form})


@require_POST
@login_required
@owner_required
def listing_edit(request, listing_id: int):
    """Change the listing's title and description."""
    return _managed(
        request, listing_id, "edit_form", ListingEditForm(request.POST),
        lambda d: listing_update(owner=request.user, listing_id=listing_id, title=d["title"],
                                 description=d["description"]),
        "Saved: buyers see the new title and description.",
    )


@require_POST
@login_required
@owner_required
def listing_price(request, listing_id: int):
    """Change the listing's price curve, for purchases from now on."""
    return _managed(
        request, listing_id, "price_form", ListingPriceForm(request.POST),
        lambda d: listing_update(owner=request.user, listing_id=listing_id, price_curve=d["price_curve"]),
        "The new price applies to purchases from now on; what was sold keeps its price.",
    )


@require_POST
@login_required
@owner_required
def listing_close_view(request, listing_id: int):
    """Close the listing: nothing more is sold; its buyers keep their releases."""
    return _managed(
        request, listing_id, "close_form", ListingCloseForm(request.POST),
        lambda d: listing_close(owner=request.user, listing_id=listing_id, reason=d["reason"]),
        "Listing closed: nothing more is sold on it. Its buyers keep their releases.",
    )


@require_POST
@login_required
@owner_required
def listing_reopen_view(request, listing_id: int):
    """Open the listing again, as it was; the page says why when it cannot be."""
    try:
        listing_reopen(owner=request.user, listing_id=listing_id)
    except NotFound:
        raise Http404("no such listing among yours") from None
    except DomainError as exc:
        return _listing_page(request, listing_id, status=exc.status, reopen_error=exc.message)
    messages.success(request, "Listing reopened: buyers can buy it again, from the level they hold.")
    return redirect("web:owner-listing", listing_id=listing_id)
