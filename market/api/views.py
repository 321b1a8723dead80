"""The buyer API (and the owner's upload endpoints). Views only translate
HTTP to service and selector calls; errors take the shape of ``errors.py``."""

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from market.accounts.roles import require_role
from market.accounts.signin import signin_authenticate
from market.catalog import selectors as catalog
from market.catalog import whatif
from market.catalog.services import (
    dataset_budget_set,
    dataset_columns_set,
    dataset_create,
    dataset_remove,
    listing_close,
    listing_compare,
    listing_create,
    listing_create_microdata,
    listing_reopen,
    listing_update,
)
from market.core.errors import Forbidden, NotFound
from market.ledger import selectors as ledger
from market.ledger.payments import payout_provider, provider
from market.trading import selectors as trading
from market.trading.records import records_response, rows_response
from market.trading.services import QUEUE_DOWN_NOTE, purchase_create, purchase_quote
from market.trading.waits import MAX_WAIT, parse_prefer_wait, wait_slot
from market.trust.selectors import buyer_caps

from . import serializers as s
from .errors import documented, documented_purchase
from .keys import ApiKeySerializer, SignInSerializer, sign_in_key
from .parsers import LimitedMultiPartParser, StrictJSONParser
from .scoping import ScopedListView

#: ``Prefer: wait=N`` (RFC 7240): answer once the purchase is released or failed, or after N seconds.
#: Any text: the RFC has a server ignore the preferences it does not honour, and so this one does
#: (a pattern of ``wait=N`` alone documented less than the server rightly takes).
PREFER_WAIT = OpenApiParameter(
    "Prefer",
    {"type": "string"},
    OpenApiParameter.HEADER,
    description=(
        f"`wait=N`: hold the answer until the purchase is released (or failed), at most N seconds "
        f"(cut to {MAX_WAIT}); the answer says `Preference-Applied: wait=N`. Without it the answer is immediate. "
        f"The server may not wait when many waits are open (more than a few of yours, or many on the server): "
        f"then it answers at once, without `Preference-Applied` and with `Retry-After: 1`, the pace to ask again at. "
        f"Other preferences (RFC 7240), and a wait that is not a number, are ignored."
    ),
)


class TokenView(APIView):
    """Exchange a username and password for a new API key (``token``: shown once; ``key``: its
    details). Each exchange makes a new key, which expires after ``API_KEY_SIGN_IN_DAYS`` days."""

    permission_classes = [AllowAny]
    throttle_scope = "auth"
    parser_classes = [StrictJSONParser]  # JSON only, as every body but the upload: one content type each

    @extend_schema(request=s.TokenRequestSerializer, responses={200: SignInSerializer, **documented(400, 403, 413, 415)})
    def post(self, request):
        form = s.TokenRequestSerializer(data=request.data)  # exactly the documented fields
        form.is_valid(raise_exception=True)
        user = signin_authenticate(request=request, **form.validated_data)  # limited per account (429)
        if user is None:
            raise ValidationError({"non_field_errors": ["Unable to log in with provided credentials."]}, code="authorization")
        key, secret = sign_in_key(user)
        return Response({"token": secret, "key": ApiKeySerializer(key).data})


class ListingListView(ScopedListView):
    """Every open listing (anyone may read); owners create listings here."""

    serializer_class = s.ListingSerializer
    search = ""  # this request's ?search= (checked in get)

    def scoped_queryset(self, user):
        return catalog.listing_list(user=user, search=self.search)

    @extend_schema(
        parameters=[s.ListingQuerySerializer],
        responses={200: s.ListingSerializer(many=True), **documented(400, 404)},
    )
    def get(self, request):
        query = s.ListingQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        self.search = query.validated_data["search"]
        page = self.scoped_page()
        held = catalog.levels_held(user=request.user, listing_ids=[l.pk for l in page]) if request.user.is_authenticated else None
        caps = buyer_caps(listings=page, buyer=request.user) if request.user.is_authenticated else None
        spent = catalog.listing_spent(user=request.user, listing_ids=[l.pk for l in page])
        return self.get_paginated_response(
            s.ListingSerializer(page, many=True, context={"levels_held": held, "caps": caps, "spent": spent}).data
        )

    @extend_schema(
        request={"application/json": s.ListingCreateSerializer},
        responses={201: s.ListingSerializer, 202: s.ListingSerializer, **documented(400, 403, 404, 409, 413, 415)},
        description="201: the listing is made and open to buyers. 202: its dataset is large (or computed by Spark): "
        "the listing is made with status preparing, its budget reserved, while a worker computes its answer; "
        "poll GET listings/{id}/ or subscribe to listing.ready and listing.failed.",
        examples=[
            OpenApiExample(
                "a count and a mean, linear price",
                request_only=True,
                value={
                    "dataset": "ds_4mGz2QpXk8RbT1vLwYc7Na",
                    "title": "Clinic visits",
                    "statistics": [{"kind": "count"}, {"kind": "mean", "column": "age", "lower": 0, "upper": 100}],
                    "ceiling": "5",
                    "price_per_epsilon": "10.00",
                },
            )
        ],
    )
    def post(self, request):
        form = s.ListingCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        d = form.validated_data
        listing = listing_create(
            owner=request.user,
            dataset_id=d["dataset"],
            title=d["title"],
            description=d["description"],
            statistics=d["statistics"],
            ceiling=d["ceiling"],
            size_level=d.get("size_level"),
            price_per_epsilon=d.get("price_per_epsilon"),
            price_curve=d.get("price_curve"),
            compensation=d.get("compensation"),
            mechanism=d.get("mechanism", "lattice"),
            delta=d.get("delta"),
        )
        spent = catalog.listing_spent(user=request.user, listing_ids=[listing.pk])
        made = status.HTTP_201_CREATED if listing.is_ready else status.HTTP_202_ACCEPTED
        return Response(s.ListingSerializer(listing, context={"spent": spent}).data, status=made)


class ListingCompareView(APIView):
    """Before listing: the error bounds your statistics would have at the ceiling on each mechanism a new
    listing may use on the dataset (the lattice path; the Skellam path on a dataset with a δ), and the one
    proposed (the smaller bounds). Nothing is created."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request={"application/json": s.ListingCompareSerializer},
                   responses={200: s.ComparisonSerializer, **documented(400, 403, 404, 413, 415)})
    def post(self, request):
        form = s.ListingCompareSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        d = form.validated_data
        found = listing_compare(owner=request.user, dataset_id=d["dataset"], statistics=d["statistics"],
                                ceiling=d["ceiling"], delta=d.get("delta"))
        return Response(s.ComparisonSerializer(found).data)


class MicrodataCreateView(APIView):
    """Owners list a dataset's records as bit-report microdata (the dataset's size must be public)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        request={"application/json": s.MicrodataCreateSerializer},
        responses={201: s.ListingSerializer, **documented(400, 403, 404, 413, 415)},
        examples=[
            OpenApiExample(
                "island and sex as one-hot bits, three levels",
                request_only=True,
                value={
                    "dataset": "ds_4mGz2QpXk8RbT1vLwYc7Na",
                    "title": "Penguins, record by record",
                    "microdata": {"columns": [{"column": "island", "categories": ["Biscoe", "Dream", "Torgersen"],
                                               "categories_public": True},
                                              {"column": "sex", "categories": ["female", "male"], "categories_public": True}],
                                  "levels": ["1", "2", "4"]},
                    "price_per_epsilon": "10.00",
                },
            )
        ],
    )
    def post(self, request):
        form = s.MicrodataCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        d = form.validated_data
        listing = listing_create_microdata(
            owner=request.user,
            dataset_id=d["dataset"],
            title=d["title"],
            description=d["description"],
            microdata_spec=d["microdata"],
            price_per_epsilon=d.get("price_per_epsilon"),
            price_curve=d.get("price_curve"),
            compensation=d.get("compensation"),
        )
        spent = catalog.listing_spent(user=request.user, listing_ids=[listing.pk])
        return Response(s.ListingSerializer(listing, context={"spent": spent}).data, status=status.HTTP_201_CREATED)


class ListingDetailView(APIView):
    @extend_schema(responses={200: s.ListingSerializer, **documented(404)})
    def get(self, request, listing_id: int):
        listing = catalog.listing_get(user=request.user, listing_id=listing_id)
        held = catalog.levels_held(user=request.user, listing_ids=[listing.pk]) if request.user.is_authenticated else None
        caps = buyer_caps(listings=[listing], buyer=request.user) if request.user.is_authenticated else None
        spent = catalog.listing_spent(user=request.user, listing_ids=[listing.pk])
        return Response(s.ListingSerializer(listing, context={"levels_held": held, "caps": caps, "spent": spent}).data)

    @extend_schema(
        request=s.ListingUpdateSerializer,
        responses={200: s.ListingSerializer, **documented(400, 401, 403, 404, 413, 415)},
        description="Your listing: change its title, description or price. A new price applies to purchases from "
        "now on; what was sold keeps its recorded price, and a buyer holding level a pays P_new(b) - P_new(a) "
        "to go on to b. Anyone else's listing is 404.",
    )
    def patch(self, request, listing_id: int):
        form = s.ListingUpdateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        listing = listing_update(owner=request.user, listing_id=listing_id, **form.validated_data)
        return _owner_listing(request, listing)


def _owner_listing(request, listing) -> Response:
    spent = catalog.listing_spent(user=request.user, listing_ids=[listing.pk])
    return Response(s.ListingSerializer(listing, context={"spent": spent}).data)


class ListingCloseView(APIView):
    """Close your listing: nothing more is sold on it; its buyers keep their releases and see the reason.
    Closing a closed listing keeps its reason."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=s.ListingCloseSerializer, responses={200: s.ListingSerializer, **documented(400, 401, 403, 404, 413, 415)})
    def post(self, request, listing_id: int):
        form = s.ListingCloseSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        return _owner_listing(request, listing_close(owner=request.user, listing_id=listing_id, **form.validated_data))


class ListingReopenView(APIView):
    """Open your closed listing again, as it was. 409 when it could not be created today (its statistics
    are no longer offered on its dataset, or the dataset's budget does not cover its listings' ceilings)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses={200: s.ListingSerializer, **documented(401, 403, 404, 409)})
    def post(self, request, listing_id: int):
        return _owner_listing(request, listing_reopen(owner=request.user, listing_id=listing_id))


class QuoteView(APIView):
    """What going up to a level costs you now, and the noise it comes with; or, given target, the cheapest
    level meeting the accuracy you need."""

    @extend_schema(
        parameters=[s.QuoteQuerySerializer],
        responses={200: s.QuoteSerializer, **documented(400, 404)},
    )
    def get(self, request, listing_id: int):
        query = s.QuoteQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        listing = catalog.listing_get(user=request.user, listing_id=listing_id, with_owner=False)
        data = query.validated_data
        quote = purchase_quote(buyer=request.user, listing=listing, epsilon=data.get("epsilon"),
                               target=data.get("target"), records=data.get("records"))
        return Response(s.QuoteSerializer(quote).data)


class PrivacyProfileView(APIView):
    """The exact privacy-loss profile of a release of this listing at a level: for every eps' below the
    level, the delta with which the release is (eps', delta)-DP. It depends on the statistics, the dataset's
    relation and the level only, never on the data."""

    @extend_schema(parameters=[s.ProfileQuerySerializer], responses={200: s.PrivacyProfileSerializer, **documented(400, 404)})
    def get(self, request, listing_id: int):
        query = s.ProfileQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        listing = catalog.listing_get(user=request.user, listing_id=listing_id)
        level = query.validated_data.get("epsilon") or listing.ceiling
        return Response(s.PrivacyProfileSerializer(catalog.listing_profile(listing=listing, epsilon=level)).data)


class ListingQualityView(APIView):
    """Your synthetic-data listing's delivered quality: for each level released, its rows' average two-way
    total-variation distance from your data. Owners only (it reads the data's true tables); 404 for
    anyone else's listing, or a listing that does not sell rows."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses={200: s.QualitySerializer, **documented(404)})
    def get(self, request, listing_id: int):
        found = catalog.listing_delivered_quality(user=request.user, listing_id=listing_id)
        if found is None:
            raise NotFound("no synthetic rows: this listing sells statistics")
        return Response(s.QualitySerializer({"listing": listing_id, "levels": found}).data)


class DatasetListView(ScopedListView):
    """The owner's datasets; upload a CSV or Parquet file (multipart), processed in the background."""

    permission_classes = [IsAuthenticated]
    serializer_class = s.DatasetSerializer
    parser_classes = [LimitedMultiPartParser]  # a file: multipart only (a resumable upload: uploads.py)

    def scoped_queryset(self, user):
        return catalog.dataset_list(user=user)

    @extend_schema(responses={200: s.DatasetSerializer(many=True), **documented(400, 404)})
    def get(self, request):
        page = self.scoped_page()
        return self.get_paginated_response(s.DatasetSerializer(page, many=True).data)

    @extend_schema(
        request={"multipart/form-data": s.DatasetUploadSerializer},  # a file: multipart only
        responses={202: s.DatasetCreatedSerializer, **documented(400, 403, 413, 415)},
        description="Accepted (202): the file is stored and read in the background. Poll GET datasets/{id}/: "
        "status processing (with progress), then ready (with columns) or failed (with the reasons). A CSV file "
        "may be gzip-compressed. An owner who already has INGEST_MAX_PROCESSING_PER_OWNER datasets being read "
        "gets 429 too_many_processing with Retry-After, and nothing is stored. A large file may be sent in parts "
        "instead (POST uploads/, then POST uploads/{id}/dataset/).",
    )
    def post(self, request):
        form = s.DatasetCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        d = form.validated_data
        dataset = dataset_create(
            owner=request.user, name=d["name"], description=d.get("description", ""), upload=d["file"],
            total_budget=d["total_budget"], relation=d["relation"], source=d.get("source", ""),
            licence=d.get("licence", ""), record_name=d.get("record_name", ""),
            record_name_plural=d.get("record_name_plural", ""),
        )
        created = catalog.dataset_get(user=request.user, dataset_id=dataset.public_id)  # with its budget figures
        body = s.dataset_answer(created, dataset.same_content_as)
        return Response(body, status=status.HTTP_202_ACCEPTED)


class DatasetDetailView(APIView):
    """One of your datasets: its status (processing with progress, ready with columns, failed with
    the reasons); PATCH confirms or changes column types and missing-value policies."""

    permission_classes = [IsAuthenticated]
    parser_classes = [StrictJSONParser]

    @extend_schema(responses={200: s.DatasetCreatedSerializer, **documented(404)})
    def get(self, request, dataset_id: str):
        dataset = catalog.dataset_get(user=request.user, dataset_id=dataset_id)
        return Response(s.dataset_answer(dataset, catalog.dataset_same_content(user=request.user, dataset=dataset)))

    @extend_schema(
        request=s.DatasetColumnsSerializer,
        responses={200: s.DatasetSerializer, **documented(400, 404, 413, 415)},
        description="Change columns: each {name, type, missing}; the columns not named keep theirs. A type the "
        "values do not fit, missing none on a column with missing values, or an unknown name is 400 with one "
        "reason per column; so is any change once the dataset has listings. Otherwise the typed file is rebuilt "
        "(status processing, then ready).",
    )
    def patch(self, request, dataset_id: str):
        dataset = catalog.dataset_get(user=request.user, dataset_id=dataset_id)  # 404 before judging the body
        form = s.DatasetColumnsSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        dataset_columns_set(owner=request.user, dataset_id=dataset.public_id, columns=form.validated_data["columns"])
        return Response(s.DatasetSerializer(catalog.dataset_get(user=request.user, dataset_id=dataset_id)).data)

    @extend_schema(
        operation_id="datasets_remove", request=None, responses={204: None, **documented(404, 409)},
        description="Remove the dataset: its listings close (buyers see why), no listing can be made on it, and its "
        "stored files are deleted; every purchase, release, ledger row and budget change stays on record. A dataset "
        "that failed to process goes entirely. Removing it again is a 204; another owner's is a 404; one still "
        "being processed is a 409.",
    )
    def delete(self, request, dataset_id: str):
        dataset_remove(owner=request.user, dataset_id=dataset_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class DatasetBudgetView(APIView):
    """Change your dataset's privacy budget. It never drops below what its listings' ceilings add
    up to; every change is recorded with who made it and why."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=s.BudgetChangeSerializer, responses={200: s.DatasetSerializer, **documented(400, 404, 413, 415)})
    def post(self, request, dataset_id: str):
        form = s.BudgetChangeSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        d = form.validated_data
        dataset = catalog.dataset_get(user=request.user, dataset_id=dataset_id)
        extra = {"delta": d["delta"]} if "delta" in d else {}
        dataset_budget_set(actor=request.user, dataset_id=dataset.public_id, budget=d["budget"], reason=d["reason"], **extra)
        return Response(s.DatasetSerializer(catalog.dataset_get(user=request.user, dataset_id=dataset_id)).data)


class DatasetFitsView(APIView):
    """A what-if on your dataset: how many more listings of one shape fit beside its listings (a lattice
    listing at a ceiling; a Skellam listing of some counts one record moves), by the sum rule without a δ
    and by composing privacy-loss distributions with one. Nothing changes."""

    permission_classes = [IsAuthenticated]

    @extend_schema(parameters=[s.FitsQuerySerializer], responses={200: s.FitsSerializer, **documented(400, 404)})
    def get(self, request, dataset_id: str):
        query = s.FitsQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        d = query.validated_data
        found = whatif.dataset_fits(user=request.user, dataset_id=dataset_id, mechanism=d.get("mechanism", "lattice"),
                                    ceiling=d.get("ceiling"), values=d.get("values"))
        return Response(s.FitsSerializer(found).data)


class DatasetCompositionView(APIView):
    """A what-if on your dataset: its released listings composed by the sum of their levels (what the
    marketplace enforces), by advanced composition at delta, and with the privacy-at-risk paper's model at
    delta and the finer level eps. Nothing changes."""

    permission_classes = [IsAuthenticated]

    @extend_schema(parameters=[s.CompositionQuerySerializer], responses={200: s.CompositionSerializer, **documented(400, 404)})
    def get(self, request, dataset_id: str):
        query = s.CompositionQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        d = query.validated_data
        figures = whatif.dataset_composition(user=request.user, dataset_id=dataset_id, delta=d.get("delta"),
                                             eps=d.get("eps"))
        return Response(s.CompositionSerializer(figures).data)


class DatasetSampledSensitivityView(APIView):
    """A what-if on your dataset: the sampled sensitivity of a mean or of a ridge regression's coefficients on
    a random subsample of its records. It depends on the data, so it is not differential privacy; it is never
    stored and never used to price or release anything."""

    permission_classes = [IsAuthenticated]
    parser_classes = [StrictJSONParser]

    @extend_schema(request=s.SampledSensitivityRequestSerializer,
                   responses={200: s.SampledSensitivitySerializer, **documented(400, 404, 413, 415)})
    def post(self, request, dataset_id: str):
        catalog.dataset_get(user=request.user, dataset_id=dataset_id)  # 404 before judging the body
        form = s.SampledSensitivityRequestSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        return Response(s.SampledSensitivitySerializer(
            whatif.dataset_sampled_sensitivity(user=request.user, dataset_id=dataset_id, **form.validated_data)).data)


class PurchaseListView(ScopedListView):
    """Your purchases; buy a listing up to a level (answered 202: the release follows)."""

    permission_classes = [IsAuthenticated]
    serializer_class = s.PurchaseSerializer

    throttle_scope = "purchases"

    def scoped_queryset(self, user):
        return trading.purchase_list(user=user)

    @extend_schema(responses={200: s.PurchaseSerializer(many=True), **documented(400, 404)})
    def get(self, request):
        page = self.scoped_page()
        return self.get_paginated_response(s.PurchaseSerializer(page, many=True).data)

    @extend_schema(
        request=s.PurchaseCreateSerializer,
        parameters=[
            OpenApiParameter(
                "Idempotency-Key",
                {"type": "string", "minLength": 1, "maxLength": 255, "pattern": r"\S"},
                OpenApiParameter.HEADER,
                description="repeat-safe key: a repeat answers 200 with the first purchase and charges nothing",
            ),
            PREFER_WAIT,
        ],
        responses={
            201: OpenApiResponse(s.PurchaseAnswerSerializer, description="bought and released within the `Prefer: wait`"),
            202: OpenApiResponse(s.PurchaseAnswerSerializer, description="bought: the release follows (wait for it with `Prefer: wait=N`)"),
            200: OpenApiResponse(s.PurchaseAnswerSerializer, description="a repeated Idempotency-Key: the first purchase"),
            **documented_purchase(400, 402, 403, 404, 409, 413, 415),
        },
    )
    def post(self, request):
        form = s.PurchaseCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        wait = parse_prefer_wait(request.headers.get("Prefer"))
        result = purchase_create(
            buyer=request.user,
            listing_id=form.validated_data["listing"],
            epsilon=form.validated_data["epsilon"],
            idempotency_key=request.headers.get("Idempotency-Key"),
            max_price=form.validated_data.get("max_price"),
        )
        purchase = result.purchase
        with wait_slot(buyer_id=request.user.pk, seconds=wait, needed=purchase.in_flight) as granted:
            if granted is not None:
                purchase = trading.purchase_wait(user=request.user, purchase_id=purchase.pk, seconds=granted, purchase=purchase)
        code = status.HTTP_200_OK
        if result.created:
            code = status.HTTP_202_ACCEPTED if purchase.in_flight else status.HTTP_201_CREATED
        body = s.PurchaseSerializer(purchase).data
        if result.queued is False:
            body["note"] = QUEUE_DOWN_NOTE
        return _waited(Response(body, status=code), wait, granted, in_flight=purchase.in_flight)


class PurchaseDetailView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(parameters=[PREFER_WAIT], responses={200: s.PurchaseSerializer, **documented(404)})
    def get(self, request, purchase_id):
        wait = parse_prefer_wait(request.headers.get("Prefer"))
        purchase = trading.purchase_get(user=request.user, purchase_id=purchase_id)  # 404 before any waiting
        with wait_slot(buyer_id=request.user.pk, seconds=wait, needed=purchase.in_flight) as granted:
            if granted is not None:
                purchase = trading.purchase_wait(user=request.user, purchase_id=purchase_id, seconds=granted, purchase=purchase)
        return _waited(Response(s.PurchaseSerializer(purchase).data), wait, granted, in_flight=purchase.in_flight)


def _waited(response: Response, wait: float | None, granted: float | None, *, in_flight: bool) -> Response:
    """``Preference-Applied`` when the wait was held; when it was asked but not held (too many
    open: ``market.trading.waits.wait_slot``), ``Retry-After: 1`` instead."""
    if wait is not None:
        response["Vary"] = "Prefer"
        if granted is not None:
            response["Preference-Applied"] = f"wait={granted:g}"
        elif in_flight:
            response["Retry-After"] = "1"
    return response


class ReleaseListView(ScopedListView):
    permission_classes = [IsAuthenticated]
    serializer_class = s.ReleaseSerializer
    filters: dict = {}  # set from the query by get

    def scoped_queryset(self, user):
        return trading.release_list(user=user, **self.filters)

    @extend_schema(parameters=[s.ReleaseQuerySerializer],
                   responses={200: s.ReleaseSerializer(many=True), **documented(400, 404)})
    def get(self, request):
        query = s.ReleaseQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        self.filters = {"listing_id": query.validated_data.get("listing"), "since": query.validated_data.get("since")}
        page = self.scoped_page()
        return self.get_paginated_response(s.ReleaseSerializer(page, many=True).data)


class ReleaseDetailView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(responses={200: s.ReleaseSerializer, **documented(404)})
    def get(self, request, release_id: str):
        return Response(s.ReleaseSerializer(trading.release_get(user=request.user, release_id=release_id)).data)


def _file_answers(csv_description: str) -> dict:
    """A file download's documented answers: CSV described as given, the same as Parquet, or 404."""
    return {(200, "text/csv"): OpenApiResponse(response=OpenApiTypes.STR, description=csv_description),
            (200, "application/vnd.apache.parquet"): OpenApiResponse(response=OpenApiTypes.BINARY,
                                                                     description="the same as Parquet"),
            **documented(404)}


class ReleaseRecordsView(APIView):
    """A microdata release's records as a file: one row per record, one column per bit."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses=_file_answers("CSV: record, then one 0/1 column per bit"))
    def get(self, request, release_id: str, fmt: str):
        return records_response(trading.release_get(user=request.user, release_id=release_id), fmt)


class ReleaseRowsView(APIView):
    """A synthetic-data release's rows as a file: one row per synthetic record, one column per declared
    column; the same file for every buyer of the level and every download."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses=_file_answers("CSV: a header, then one line per row"))
    def get(self, request, release_id: str, fmt: str):
        return rows_response(trading.release_get(user=request.user, release_id=release_id), fmt)


def _wallet(user) -> dict:
    return {"balance": ledger.wallet_balance(user=user), "currency": "credits"}


class WalletView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(responses={200: s.WalletSerializer, **documented()})
    def get(self, request):
        return Response(s.WalletSerializer(_wallet(request.user)).data)


class StatementView(ScopedListView):
    """Every movement of your wallet, newest first."""

    permission_classes = [IsAuthenticated]
    serializer_class = s.LegSerializer

    def scoped_queryset(self, user):
        return ledger.wallet_statement(user=user)

    @extend_schema(responses={200: s.LegSerializer(many=True), **documented(400, 404)})
    def get(self, request):
        page = self.scoped_page()
        return self.get_paginated_response(s.LegSerializer(page, many=True).data)


class TopUpView(APIView):
    """Demo mode only: add credits to your own wallet."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=s.TopUpSerializer, responses={201: s.WalletSerializer, **documented(400, 403, 413, 415)})
    def post(self, request):
        if not settings.DEMO_MODE:
            raise Forbidden("top-ups are made by staff; the demo button is off on this marketplace")
        form = s.TopUpSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        provider().fund(user=request.user, amount=form.validated_data["amount"], memo="demo top-up")
        return Response(s.WalletSerializer(_wallet(request.user)).data, status=status.HTTP_201_CREATED)


def _earnings(user) -> dict:
    return {"balance": ledger.earnings_balance(user=user), **ledger.payout_totals(user=user), "currency": "credits"}


class EarningsView(APIView):
    """Owners: your earnings not yet paid out, and your payouts' totals."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses={200: s.EarningsSerializer, **documented(403)})
    def get(self, request):
        require_role(request.user, "owner")
        return Response(s.EarningsSerializer(_earnings(request.user)).data)


class EarningsStatementView(ScopedListView):
    """Owners: every movement of your earnings (sales, refunds, payouts), newest first, with the running balance."""

    permission_classes = [IsAuthenticated]
    serializer_class = s.LegSerializer

    def scoped_queryset(self, user):
        return ledger.earnings_statement(user=user)

    @extend_schema(responses={200: s.LegSerializer(many=True), **documented(400, 403, 404)})
    def get(self, request):
        require_role(request.user, "owner")
        page = self.scoped_page()
        return self.get_paginated_response(s.LegSerializer(page, many=True).data)


class PayoutListView(ScopedListView):
    """Owners: your payouts; ask for one (paid at once in demo mode, else requested for staff)."""

    permission_classes = [IsAuthenticated]
    serializer_class = s.PayoutSerializer

    def scoped_queryset(self, user):
        return ledger.payout_list(user=user)

    @extend_schema(responses={200: s.PayoutSerializer(many=True), **documented(400, 403, 404)})
    def get(self, request):
        require_role(request.user, "owner")
        page = self.scoped_page()
        return self.get_paginated_response(s.PayoutSerializer(page, many=True).data)

    @extend_schema(
        request=s.PayoutCreateSerializer,
        parameters=[
            OpenApiParameter(
                "Idempotency-Key",
                {"type": "string", "minLength": 1, "maxLength": 255, "pattern": r"\S"},
                OpenApiParameter.HEADER,
                description="repeat-safe key: a repeat answers 200 with the first payout and moves nothing",
            ),
        ],
        responses={
            201: OpenApiResponse(s.PayoutSerializer, description="recorded: paid (demo mode) or requested"),
            200: OpenApiResponse(s.PayoutSerializer, description="a repeated Idempotency-Key: the first payout"),
            **documented(400, 402, 403, 413, 415),
        },
    )
    def post(self, request):
        form = s.PayoutCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        payout, created = payout_provider().pay_out(
            user=request.user, amount=form.validated_data["amount"], idempotency_key=request.headers.get("Idempotency-Key"),
        )
        return Response(s.PayoutSerializer(payout).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)
