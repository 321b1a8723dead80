"""Noise paths and releases, stored.

One :class:`NoisePath` per listing, shared by all its buyers; its row is the
lock under which the path is extended. An l2 (vector) path also keeps its jump
list, sampled from the listing's ceiling down and extended on demand. Each released level is one
:class:`NoisePoint` (unique per path and level, never updated): a level is
sampled once. A :class:`Release` is what one purchase delivered.
"""

import numpy as np
from django.conf import settings
from django.db import models
from django.db.models import Q

from market.core import crypto, ids
from market.core.fields import LevelField

from .engine.mechanisms import mechanism
from .engine.path import l2_from_bytes, l2_to_bytes


class NoisePath(models.Model):
    listing = models.OneToOneField("catalog.Listing", on_delete=models.PROTECT, related_name="noise_path")
    dim = models.PositiveIntegerField()
    mechanism = models.CharField(
        max_length=12, default="lattice",
        help_text="the listing's mechanism (releases.engine.mechanisms): lattice, the exact integer path "
        "(releases.engine.lattice); skellam, the exact Skellam path (a pair of counts per value, releases.engine.skellam); "
        "laplace and laplace_l2, the retired float paths (releases.engine.path; l2: one "
        "vector path kept as a jump list); bits, one exact lattice path per record and bit of a microdata listing "
        "(releases.engine.bitreport), sampled from the ladder's top down. Fixed when the path is made",
    )
    jumps = models.BinaryField(
        null=True, blank=True,
        help_text="l2 only: the path's jump list from the ceiling down (releases.engine.path.l2_to_bytes), encrypted "
        "for this row; read and written only through jump_list() and set_jump_list()",
    )
    released_max = LevelField(default=0, help_text="the largest level released: the privacy spent")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(released_max__gte=0), name="path_released_nonnegative"),
            models.CheckConstraint(condition=Q(mechanism__in=["laplace", "laplace_l2", "lattice", "skellam", "bits"]),
                                   name="path_mechanism_known"),
        ]

    @property
    def release_mechanism(self):
        """How the path's noise is made and kept: its mechanism (``releases.engine.mechanisms``)."""
        return mechanism(self.mechanism)

    def jumps_context(self) -> bytes:
        return crypto.jumps_context(self.pk)

    def jump_list(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The l2 path's (levels, values), decrypted; None before its first release."""
        if self.jumps is None:
            return None
        return l2_from_bytes(crypto.unseal(bytes(self.jumps), context=self.jumps_context()))

    def set_jump_list(self, levels, values) -> None:
        """Encrypt the jump list into ``jumps`` under the current key; the caller saves."""
        self.jumps = crypto.seal(l2_to_bytes(levels, values), context=self.jumps_context())


class NoisePoint(models.Model):
    """The path's noise (unit sensitivity) at one level. Secret: owner-only."""

    path = models.ForeignKey(NoisePath, on_delete=models.PROTECT, related_name="points")
    level = LevelField()
    noise = models.BinaryField(
        help_text="float64 (int64 on a lattice path), little-endian, one per released value, encrypted for this "
        "path and level; read and written only through vector() / set_vector() or integers() / set_integers()"
    )
    method = models.CharField(max_length=16, help_text="initial, relax, tighten or bridge")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["level"]
        constraints = [
            models.UniqueConstraint(fields=["path", "level"], name="one_point_per_path_and_level"),
            models.CheckConstraint(condition=Q(level__gt=0), name="point_level_positive"),
        ]

    def noise_context(self) -> bytes:
        """This point's associated data: its path and level (unique together, known before the insert)."""
        return crypto.noise_context(self.path_id, self.level)

    def vector(self) -> np.ndarray:
        """The noise, decrypted (raises market.core.crypto.CryptoError if it does not open)."""
        return crypto.unseal_floats(self.noise, context=self.noise_context())

    def set_vector(self, values) -> None:
        """Encrypt ``values`` (float64) into ``noise`` under the current key; the caller saves."""
        self.noise = crypto.seal_floats(values, context=self.noise_context())

    def packed_noise(self) -> bytes:
        """A bit-report path's noise at this level, decrypted but still packed
        (``releases.engine.bitreport.unpack_noise`` opens it)."""
        return crypto.unseal(bytes(self.noise), context=self.noise_context())

    def set_packed_noise(self, data: bytes) -> None:
        """Encrypt a bit-report path's packed noise (``releases.engine.bitreport.pack_noise``); the caller saves."""
        self.noise = crypto.seal(data, context=self.noise_context())

    def noise_of(self, codec, shape=None) -> np.ndarray:
        """The noise, decrypted and decoded by its mechanism's codec (``shape``: a packed codec's,
        records x bits); market.core.crypto.CryptoError if it does not open or decode."""
        try:
            return codec.decode(crypto.unseal(bytes(self.noise), context=self.noise_context()), shape)
        except ValueError:
            raise crypto.CryptoError(f"encrypted value is not {codec.name}") from None

    def set_noise_of(self, codec, values) -> None:
        """Encode ``values`` by the mechanism's codec and encrypt them into ``noise``; the caller saves."""
        self.noise = crypto.seal(codec.encode(values), context=self.noise_context())

    def integers(self) -> np.ndarray:
        """A lattice path's integer noise, decrypted (int64)."""
        return crypto.unseal_ints(self.noise, context=self.noise_context())

    def set_integers(self, values) -> None:
        """Encrypt a lattice path's integer noise (int64) into ``noise``; the caller saves."""
        self.noise = crypto.seal_ints(values, context=self.noise_context())


class BitReport(models.Model):
    """What a bit-report (microdata) path releases at one level, made once and read by every buyer
    of that level: one reported bit per record and bit, packed (``releases.engine.bitreport.pack_bits``)
    and encrypted for its point, and the number of reports saying 1 for each bit (what the decoded
    counts are read from). Append-only (a trigger)."""

    point = models.OneToOneField(NoisePoint, on_delete=models.PROTECT, related_name="report")
    bits = models.BinaryField(help_text="the reports, packed and encrypted; read through reports()")
    ones = models.JSONField(help_text="per bit, the number of records whose report says 1")
    created_at = models.DateTimeField(auto_now_add=True)

    def report_context(self) -> bytes:
        return crypto.report_context(self.point_id)

    def reports(self, shape) -> np.ndarray:
        """The reported bits (bool, records x bits), decrypted."""
        from .engine.bitreport import unpack_bits

        return unpack_bits(crypto.unseal(bytes(self.bits), context=self.report_context()), shape)

    def packed(self) -> bytes:
        """The reported bits, decrypted but packed (rows of bits, ``numpy.packbits`` along each row)."""
        return crypto.unseal(bytes(self.bits), context=self.report_context())

    def set_reports(self, reports) -> None:
        from .engine.bitreport import pack_bits

        self.bits = crypto.seal(pack_bits(reports), context=self.report_context())


class Release(models.Model):
    public_id = models.CharField(
        max_length=ids.MAX_LENGTH, unique=True, editable=False, default=ids.new_release_id,
        help_text="the opaque id URLs and answers use (rel_...); the integer pk stays internal",
    )
    purchase = models.OneToOneField("trading.Purchase", on_delete=models.PROTECT, related_name="release")
    listing = models.ForeignKey("catalog.Listing", on_delete=models.PROTECT, related_name="releases")
    buyer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="releases")
    point = models.ForeignKey(NoisePoint, on_delete=models.PROTECT, related_name="releases")
    level = LevelField()
    values = models.JSONField(help_text="the released vector: rounded and clamped (lattice: whole steps times grid)")
    noise_scales = models.JSONField(help_text="the Laplace scale of each released value")
    privacy_at_risk = models.JSONField(
        null=True, blank=True,
        help_text="the privacy-at-risk figures at this level, computed once when the release was made "
        "(null: not applicable, or a release made before they were stored)",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.CheckConstraint(condition=Q(level__gt=0), name="release_level_positive")]
