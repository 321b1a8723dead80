from decimal import Decimal

import numpy as np
from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from market.core import crypto, ids
from market.core.fields import DeltaField, LevelField, MoneyField
from releases.engine.mechanisms import mechanism


class Dataset(models.Model):
    """An owner's uploaded table. Its data is never shown to anyone else.

    The table lives in files (``market.catalog.files``: sealed, in Django's
    storage), never in a row: ``upload_file`` (the upload as the owner sent
    it, kept as the dataset's source: a change of column types reads it again),
    ``raw_file`` (the cells' text, Parquet: the source of datasets read before
    the upload was kept; empty since) and ``typed_file`` (the confirmed column
    types, Parquet). ``status`` is
    ``processing`` while a task reads the upload or rebuilds the typed file
    (``progress`` says how far), then ``ready`` or ``failed`` (``failure``
    lists the reasons). ``columns`` is a list of ``{"name", "type", "missing",
    ...}`` objects (``market.catalog.spec.columns.columns_from``) with per-column
    summaries for the owner only (``inferred``, ``missing_count``, ``markers``,
    ``min``, ``max``, ``distinct``, ``categories``, ``fits``).

    ``relation`` says whom its releases protect (docs/mathematics.md section 12):
    with a private size, any one record, whether or not it is in the data (a
    neighbour has one record more or fewer); with a public size, any one
    record's values, while the number of records is public (a neighbour has
    one record replaced). Every sensitivity follows from it.
    """

    class Status(models.TextChoices):
        PROCESSING = "processing", "Processing"
        READY = "ready", "Ready"
        FAILED = "failed", "Failed"

    class Relation(models.TextChoices):
        PRIVATE_SIZE = "private_size", "Private size: protect any one record, whether or not it is in the data"
        PUBLIC_SIZE = "public_size", "Public size: protect any one record's values; the number of records is public"

    public_id = models.CharField(
        max_length=ids.MAX_LENGTH, unique=True, editable=False, default=ids.new_dataset_id,
        help_text="the opaque id URLs and answers use (ds_...); the integer pk stays internal",
    )
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="datasets")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    columns = models.JSONField(default=list, help_text="[{name, type, missing, ...summaries}] (owner only)")
    row_count = models.PositiveIntegerField(null=True, blank=True, help_text="known once processed")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PROCESSING)
    progress = models.JSONField(default=dict, blank=True, help_text="{phase, rows, percent} while processing")
    failure = models.JSONField(default=list, blank=True, help_text="why processing failed, one reason a line")
    progress_at = models.DateTimeField(
        default=timezone.now,
        help_text="when progress last moved: a processing dataset standing still past DATASET_SWEEP_AFTER is re-queued",
    )
    attempts = models.PositiveSmallIntegerField(
        default=1, help_text="processing runs handed out (the first, and each re-queue): failed past DATASET_MAX_ATTEMPTS",
    )
    starts = models.PositiveSmallIntegerField(
        default=0, help_text="processing runs that began (a worker that died mid-run has its task delivered again): "
        "failed past DATASET_MAX_ATTEMPTS",
    )
    source = models.CharField(max_length=500, blank=True, help_text="where the data comes from")
    licence = models.CharField(max_length=200, blank=True)
    format = models.CharField(max_length=10, blank=True, help_text="csv or parquet: the upload's format")
    upload_size = models.BigIntegerField(null=True, blank=True, help_text="bytes uploaded")
    upload_file = models.CharField(max_length=300, blank=True, help_text="storage name of the sealed upload")
    raw_file = models.CharField(max_length=300, blank=True, help_text="storage name of the sealed text Parquet")
    typed_file = models.CharField(max_length=300, blank=True, help_text="storage name of the sealed typed Parquet")
    total_budget = LevelField(
        help_text="The dataset's privacy budget: its listings' ceilings (point listings aside) may not add up "
        "to more. Changed only through market.catalog.services.dataset_budget_set (audited)."
    )
    delta_budget = DeltaField(
        null=True, blank=True,
        help_text="The dataset's delta (none: every listing is pure eps-DP and their ceilings add up to at most "
        "total_budget). With a delta, its listings compose by privacy-loss distributions: together, at their "
        "ceilings, they must be (total_budget, delta_budget)-DP (market.catalog.composition). At most 1e-6",
    )
    content_hash = models.CharField(
        max_length=64, db_index=True, editable=False,
        help_text="sha256 of the uploaded bytes: the same people twice",
    )
    relation = models.CharField(
        max_length=20, choices=Relation.choices, default=Relation.PRIVATE_SIZE,
        help_text="the neighbouring relation: is the number of records private or public?",
    )
    record_name = models.CharField(
        max_length=60, default="record", help_text="what one record is about, e.g. 'patient'"
    )
    record_name_plural = models.CharField(max_length=60, default="records", help_text="e.g. 'patients'")
    created_at = models.DateTimeField(auto_now_add=True)
    removed_at = models.DateTimeField(
        null=True, blank=True,
        help_text="when its owner removed it (market.catalog.services.dataset_remove): hidden from the owner's "
        "pages, its listings closed, its stored files deleted; kept as a row for what the ledger, the releases and "
        "the budget's history refer to",
    )
    version = models.PositiveBigIntegerField(
        default=0, editable=False,
        help_text="bumped by every change of what a listing's answer or budget check reads (the typed file, the "
        "columns, the status, the budget): a listing computed outside the dataset's lock is created only if the "
        "version is still the one it read (market.catalog.services.listing_create)",
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [  # the sweeper's query (market.catalog.processing.datasets_sweep)
            models.Index(fields=["progress_at"], condition=Q(status="processing"), name="dataset_processing_since"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(total_budget__gt=0), name="dataset_budget_positive"
            ),
            models.CheckConstraint(
                condition=Q(delta_budget__isnull=True) | Q(delta_budget__gt=0, delta_budget__lte=Decimal("1e-6")),
                name="dataset_delta_at_most_1e-6",
            ),
            models.CheckConstraint(
                condition=Q(relation__in=["private_size", "public_size"]), name="dataset_relation_known"
            ),
        ]

    def __str__(self):
        return self.name

    @property
    def is_ready(self) -> bool:
        """Processed and typed: only a ready dataset can be listed."""
        return self.status == self.Status.READY and bool(self.typed_file)

    @property
    def column_names(self) -> list[str]:
        return [c if isinstance(c, str) else c["name"] for c in self.columns or []]

    @property
    def kept_column_names(self) -> list[str]:
        """The columns buyers may read about: every column but those the owner set to "ignored"
        (left out of the typed file, named by no statistic)."""
        return [c if isinstance(c, str) else c["name"] for c in self.columns or []
                if isinstance(c, str) or c.get("type") != "ignored"]

    @property
    def numeric_column_names(self) -> list[str]:
        """The complete integer and decimal columns: the ones today's statistics read (TEMPORARY, until
        listing creation computes over the typed file with missing-value policies)."""
        return [
            c if isinstance(c, str) else c["name"] for c in self.columns or []
            if isinstance(c, str) or (c.get("type") in ("integer", "decimal") and not c.get("missing_count"))
        ]

    @property
    def size_is_public(self) -> bool:
        return self.relation == self.Relation.PUBLIC_SIZE

    @property
    def public_size(self) -> int | None:
        """The number of records, when the owner declared it public; None when it is private."""
        return self.row_count if self.size_is_public else None

    def neighbours(self):
        """The relation as the statistics read it (``market.catalog.spec.Neighbours``)."""
        from .spec import Neighbours

        return Neighbours(self.relation, size=self.public_size, max_rows=settings.UPLOAD_MAX_ROWS)

    @property
    def protects(self) -> str:
        """Whom a release protects, in one plain sentence."""
        one, many = self.record_name, self.record_name_plural
        if self.size_is_public:
            size = f" ({self.row_count:,})" if self.row_count is not None else ""
            return f"Protects any one {one}'s values; the number of {many}{size} is public."
        return f"Protects any one {one}, whether or not they are in the data; the number of {many} stays private."


class DatasetBudgetChange(models.Model):
    """One change of a dataset's budget: who, from what to what, and why. Append-only (a trigger)."""

    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="budget_changes")
    old = LevelField()
    new = LevelField()
    old_delta = DeltaField(null=True, blank=True, help_text="the dataset's delta before (null: none)")
    new_delta = DeltaField(null=True, blank=True, help_text="the dataset's delta after (null: none)")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    reason = models.CharField(max_length=500)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-at", "-id"]
        constraints = [models.CheckConstraint(condition=Q(new__gt=0), name="budget_change_positive")]

    def __str__(self):
        return f"{self.dataset_id}: {self.old} -> {self.new}"


class Listing(models.Model):
    """Statistics over a dataset, sold at privacy levels up to a ceiling.

    The statistics form one vector; its true value ``answer`` is computed
    once, at creation, and is as secret as the data. ``mechanism`` says how it
    is released (an object of ``releases.engine.mechanisms``, ``release_mechanism``):

    * ``laplace`` and ``laplace_l2`` (the float paths, retired: every listing made before the lattice;
      ``laplace_l2`` old vectors, with noise on the whole vector):
      value ``i`` at level eps is ``answer[i] + weights[i] * V_eps[i]``, then
      rounded and clamped to ``[lower[i], upper[i]]``;
    * ``lattice`` (the exact path, docs/mathematics.md section 11): ``answer``
      is in whole grid steps (int64), ``weights`` are whole numbers (steps),
      ``lower`` / ``upper`` the range in steps and ``grids`` each value's grid
      (decimal strings); value ``i`` at level eps is
      ``clamp(answer[i] + N[i]) * grids[i]`` with ``N[i]`` discrete Laplace at
      level ``eps / weights[i]``;
    * ``bits`` (microdata, ``market.catalog.microdata``): ``statistics`` holds
      one object of kind ``microdata``, ``labels`` one label per bit,
      ``weights`` the most bits one record change flips (each bit runs at
      ``eps / weight``) and ``answer`` the records' true bits, packed
      (``releases.engine.bitreport.pack_bits``), shuffled once, sealed.
    """

    class Engine(models.TextChoices):
        """The engine the API and the owner's dashboard show for a listing (``engine``)."""

        LAPLACE = "laplace", mechanism("laplace").label
        LATTICE = "lattice", mechanism("lattice").label
        SKELLAM = "skellam", mechanism("skellam").label
        BITS = "bits", mechanism("bits").label

    class Status(models.TextChoices):
        """Where a listing stands: its answer being computed (``preparing``: its budget reserved,
        hidden from buyers, by a task on the ``ingest`` queue), sold (``ready``), or never made
        (``failed``: its answer could not be computed; it holds no budget, ``failure`` says why)."""

        PREPARING = "preparing", "Preparing"
        READY = "ready", "Ready"
        FAILED = "failed", "Failed"

    class Mechanism(models.TextChoices):
        LAPLACE = "laplace", mechanism("laplace").label
        LAPLACE_L2 = "laplace_l2", mechanism("laplace_l2").label
        LATTICE = "lattice", mechanism("lattice").label
        SKELLAM = "skellam", mechanism("skellam").label
        BITS = "bits", mechanism("bits").label

    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="listings")
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    statistics = models.JSONField(help_text="the validated statistics spec")
    counted_in_budget = models.BooleanField(
        default=True,
        help_text="whether the listing counts in its dataset's eps budget: every kind it offers is eps-DP for a record "
        "(market.catalog.budget.counts; the withdrawn point kind is not). Set when the listing is made; cleared "
        "when its preparation fails (it released nothing)",
    )
    mechanism = models.CharField(
        max_length=12, choices=Mechanism.choices, default=Mechanism.LATTICE,
        help_text="how the values are released (releases.engine.mechanisms): the exact lattice path, bit reports, "
        "or the float paths of older listings. Fixed when the listing is made",
    )
    plan = models.JSONField(
        help_text="the statistics' plan, one versioned document (Listing.plan_document): {version: 2, labels (one per "
        "released value), weights (per value: noise multiplier, scale = weight / eps), lower, upper (each value's "
        "declared range, for clamping; lattice: in grid steps), grids (lattice only: each value's grid as a decimal "
        "string), sensitivity (l1 of the whole vector), layout (the rest of the plan as laid out at creation, "
        "market.catalog.spec.plan_layout; absent: laid out on each read)}",
    )
    answer = models.BinaryField(
        help_text="the true answer (float64), encrypted for this row (market.core.crypto): secret. "
        "Read and written only through true_answer() and set_true_answer()"
    )
    delta = DeltaField(
        null=True, blank=True,
        help_text="the delta of every level the listing sells ((eps, delta)-DP): set on the Skellam path only, whose "
        "plan holds the calibration that meets it (plan.calibration)",
    )
    ceiling = LevelField(help_text="the highest eps ever sold on this listing (with a size release, the owner's "
                         "ceiling less size_level: the listing's total is total_level)")
    size_level = LevelField(
        default=Decimal(0),
        help_text="eps_p of the listing's size release (0: none): carved out of the owner's ceiling and charged "
        "to the dataset once; market.catalog.sizes",
    )
    size_release = models.JSONField(
        null=True, blank=True,
        help_text="the size release, public (null: none, e.g. a listing made before them): {level, weight, "
        "cells: [{index, label, value}]}, the noisy count of each cell a mean divides by (market.catalog.sizes)",
    )
    price_curve = models.JSONField(default=dict, help_text="see market.catalog.pricing: linear, power or compensation")
    compensation = models.JSONField(
        null=True, blank=True, help_text="the owner's compensation model: E, rate, E_min, people (optional)"
    )
    price_per_epsilon = MoneyField(help_text="P(ceiling) / ceiling: the average price per eps, for sorting and filtering")
    is_open = models.BooleanField(default=True)
    closed_reason = models.TextField(
        blank=True, help_text="why the listing was closed, shown to its buyers (empty while open)"
    )
    status = models.CharField(
        max_length=12, choices=Status.choices, default=Status.READY,
        help_text="preparing (the answer being computed by a task: the budget reserved, closed to buyers), ready, or "
        "failed (never sold; it holds no budget: counted_in_budget is false); market.catalog.services.listing_prepare",
    )
    failure = models.TextField(blank=True, help_text="why the listing's answer could not be computed (status failed)")
    prepared_from = models.PositiveBigIntegerField(
        null=True, blank=True, editable=False,
        help_text="the dataset's version the listing was judged on (Dataset.version), while it is prepared: its "
        "answer is stored only if the dataset is still at that version",
    )
    prepare_attempts = models.PositiveSmallIntegerField(
        default=0, help_text="how many times the listing's preparation was handed to a worker (the sweeper's count)")
    prepare_at = models.DateTimeField(
        null=True, blank=True,
        help_text="when the listing was last handed to a worker: one preparing past LISTING_PREPARE_SWEEP_AFTER is "
        "handed out again",
    )
    trust_capped = models.BooleanField(
        default=False,
        help_text="Cap each buyer's level by their distance in the owner's trust network (see market.trust).",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [  # the sweeper's query (market.catalog.services.listings_prepare_sweep)
            models.Index(fields=["prepare_at"], condition=Q(status="preparing"), name="listing_preparing_since"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(ceiling__gt=0), name="listing_ceiling_positive"),
            models.CheckConstraint(condition=Q(size_level__gte=0), name="listing_size_level_nonnegative"),
            models.CheckConstraint(  # drawn with the answer: absent until the listing is ready
                condition=Q(size_level=0, size_release__isnull=True) | Q(size_level__gt=0, size_release__isnull=False)
                | Q(size_level__gt=0, size_release__isnull=True, status__in=["preparing", "failed"]),
                name="listing_size_release_has_level",
            ),
            models.CheckConstraint(condition=Q(status__in=["preparing", "ready", "failed"]), name="listing_status_known"),
            models.CheckConstraint(  # buyers see a listing only once its answer is stored
                condition=Q(status="ready") | Q(is_open=False), name="listing_open_only_when_ready",
            ),
            models.CheckConstraint(  # a failed listing released nothing and never will: it holds no budget
                condition=~Q(status="failed") | Q(counted_in_budget=False), name="listing_failed_not_counted",
            ),
            models.CheckConstraint(condition=Q(price_per_epsilon__gte=0), name="listing_price_nonnegative"),
            models.CheckConstraint(
                condition=Q(mechanism__in=["laplace", "laplace_l2", "lattice", "skellam", "bits"]),
                name="listing_mechanism_known",
            ),
            models.CheckConstraint(
                condition=Q(mechanism__in=["laplace", "laplace_l2", "bits"]) | Q(plan__grids__isnull=False),
                name="listing_lattice_has_grids",
            ),
            models.CheckConstraint(  # a delta exactly when the mechanism states one, and it is calibrated
                condition=(Q(mechanism="skellam", delta__gt=0, delta__lte=Decimal("1e-6"),
                             plan__calibration__isnull=False)
                           | (~Q(mechanism="skellam") & Q(delta__isnull=True))),
                name="listing_delta_on_skellam",
            ),
        ]

    def __str__(self):
        return self.title

    #: the version of the plan document this code writes (``plan_document``)
    PLAN_VERSION = 2

    @classmethod
    def plan_document(cls, *, labels, weights, lower, upper, sensitivity: float, grids=None, layout=None) -> dict:
        """The listing's plan as stored (``Listing.plan``): the one way it is written. ``grids`` and
        ``layout`` are left out when None, so a lattice listing is one whose document has grids."""
        document = {"version": cls.PLAN_VERSION, "labels": list(labels), "weights": list(weights),
                    "lower": list(lower), "upper": list(upper), "sensitivity": sensitivity}
        if grids is not None:
            document["grids"] = list(grids)
        if layout is not None:
            document["layout"] = layout
        return document

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds of statistic the listing offers, by name, sorted (``ListingKind``; prefetch
        ``kind_rows`` when reading many)."""
        return tuple(sorted(row.kind for row in self.kind_rows.all()))

    def kinds_record(self, names) -> None:
        """Store the kinds the listing offers (once, when it is made, in its transaction)."""
        ListingKind.objects.bulk_create([ListingKind(listing=self, kind=name) for name in sorted(set(names))])

    @property
    def labels(self) -> list[str]:
        """One label per released value."""
        return self.plan["labels"]

    @property
    def weights(self) -> list:
        """Per value: the noise multiplier (scale = weight / eps; lattice: whole steps)."""
        return self.plan["weights"]

    @property
    def lower(self) -> list:
        """Each value's declared lower end, for clamping (lattice: in grid steps)."""
        return self.plan["lower"]

    @property
    def upper(self) -> list:
        return self.plan["upper"]

    @property
    def grids(self) -> list[str] | None:
        """Lattice only: each value's grid as a decimal string (1 for counts); None otherwise."""
        return self.plan.get("grids")

    @property
    def sensitivity(self) -> float:
        """The l1-sensitivity of the whole vector."""
        return self.plan["sensitivity"]

    @property
    def layout(self) -> dict | None:
        """The rest of the statistics' plan as laid out at creation (``market.catalog.spec.plan_layout``):
        read back with the figures above, never laid out again (None: laid out on each read, as before)."""
        return self.plan.get("layout")

    @property
    def owner(self):
        return self.dataset.owner

    @property
    def is_ready(self) -> bool:
        """Whether the listing's answer is stored (not preparing, not failed): only then is it sold."""
        return self.status == self.Status.READY

    @property
    def total_level(self) -> Decimal:
        """The most privacy the listing can ever cost: its ceiling (the highest level sold) plus its
        size release's level. What its dataset's budget counts; every page and answer shows this."""
        return self.ceiling + self.size_level

    @property
    def dim(self) -> int:
        return len(self.labels)

    def answer_context(self) -> bytes:
        """The associated data the answer is sealed with: this row's, so it cannot be moved to another."""
        if self.pk is None:
            raise ValueError("a listing's answer is sealed for its row: save the listing first")
        return crypto.answer_context(self.pk)

    @property
    def release_mechanism(self):
        """How the listing's values are released: its mechanism (``releases.engine.mechanisms``), bound to
        the listing's plan (a calibrated mechanism carries its calibration)."""
        return mechanism(self.mechanism).bound(self.plan)

    @property
    def engine(self) -> str:
        """The mechanism's engine as the owner's dashboard and ``build_plan`` name it
        (``laplace``, ``lattice`` or ``bits``)."""
        return self.release_mechanism.engine

    def microdata(self):
        """The listing's microdata spec (``market.catalog.microdata.Microdata``), read back as stored."""
        from .spec.microdata import restore

        return restore(self.statistics, records=int(self.upper[0]))

    def truth_bits(self) -> np.ndarray:
        """A microdata listing's true bits (bool, records x bits), decrypted."""
        return self.release_mechanism.answer.decode(crypto.unseal(bytes(self.answer), context=self.answer_context()),
                                                    (int(self.upper[0]), len(self.labels)))

    def set_truth_bits(self, bits) -> None:
        """Pack and encrypt a microdata listing's true bits into ``answer``; the caller saves."""
        self.answer = crypto.seal(self.release_mechanism.answer.encode(bits), context=self.answer_context())

    def true_answer(self) -> np.ndarray:
        """The true answer, decrypted (float64; int64 grid steps on the lattice), or
        market.core.crypto.CryptoError if it does not open."""
        codec = self.release_mechanism.answer
        try:
            return codec.decode(crypto.unseal(bytes(self.answer), context=self.answer_context()))
        except ValueError:
            raise crypto.CryptoError(f"encrypted value is not {codec.name}") from None

    def set_true_answer(self, values) -> None:
        """Encrypt ``values`` (float64; int64 grid steps on the lattice) into ``answer``; the caller saves."""
        self.answer = crypto.seal(self.release_mechanism.answer.encode(values), context=self.answer_context())

    def grid_steps(self) -> list[Decimal]:
        """Each value's grid (lattice), as exact decimals."""
        return [Decimal(g) for g in self.grids or ()]

    def noise_scales(self, eps: Decimal) -> np.ndarray:
        """The noise scale of each released value at level ``eps``, in the value's units: the
        Laplace scale, or on the lattice the same ``weight * grid / eps`` (its discrete
        Laplace noise is ``DLap(e^{-eps / weight})`` steps)."""
        return self.release_mechanism.scales(eps, self.weights, self.grids)


class ListingKind(models.Model):
    """One kind of statistic a listing offers (a name of ``market.catalog.spec.KINDS``), one row per
    kind: the catalogue's search by kind reads it."""

    listing = models.ForeignKey(Listing, on_delete=models.CASCADE, related_name="kind_rows")
    kind = models.CharField(max_length=20)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["listing", "kind"], name="listing_kind_once")]
        indexes = [models.Index(fields=["kind", "listing"], name="listing_kind_by_kind")]

    def __str__(self):
        return f"{self.listing_id}: {self.kind}"


class UploadSession(models.Model):
    """A resumable upload (``market.catalog.chunks``): an owner sends a file of ``size`` bytes in
    parts, each sealed into storage as its own object (``parts``, in order), until ``received ==
    size``; then a dataset is made from it (``dataset``) and its ingest task joins the parts.
    Sessions never made into a dataset are swept after ``expires_at``."""

    public_id = models.CharField(
        max_length=ids.MAX_LENGTH, unique=True, editable=False, default=ids.new_upload_id,
        help_text="the opaque id URLs and answers use (up_...); the integer pk stays internal",
    )
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="upload_sessions")
    filename = models.CharField(max_length=255, blank=True)
    size = models.BigIntegerField(help_text="the whole file's bytes, announced when the session opens")
    received = models.BigIntegerField(default=0, help_text="bytes received so far, in order")
    parts = models.JSONField(default=list, help_text="[{name, size, sha256}]: the sealed parts, in order")
    dataset = models.OneToOneField(
        Dataset, null=True, blank=True, on_delete=models.CASCADE, related_name="upload_session",
        help_text="the dataset made from it (its ingest task joins the parts, then deletes the session)",
    )
    expires_at = models.DateTimeField(db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(size__gt=0), name="upload_size_positive"),
            models.CheckConstraint(condition=Q(received__gte=0) & Q(received__lte=models.F("size")),
                                   name="upload_received_within_size"),
        ]

    def __str__(self):
        return f"{self.public_id} ({self.received}/{self.size})"
