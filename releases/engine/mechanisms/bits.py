"""Bit reports (microdata): every record, each bit on its own exact lattice path
(``releases.engine.bitreport``), sold on a ladder of levels sampled from its top down.

Its per-listing figures (the ladder, the rates, a decoded count's bound, a record's loss law)
are the listing's microdata spec's (``market.catalog.microdata.Microdata``), handed in lazily
as ``records()``.
"""

from __future__ import annotations

import numpy as np

from .. import bitreport
from .. import guarantee as _guarantee
from .base import Base, Packed, Refusal, level_text

#: The records' true bits (bool, records x bits), packed along each row.
TRUTH = Packed("packed bits", bitreport.pack_bits, bitreport.unpack_bits)
#: Each record's and bit's integer noise, packed in the fewest bytes that hold it.
NOISE = Packed("packed noise", bitreport.pack_noise, bitreport.unpack_noise)


class BitReports(Base):
    name = "bits"
    engine = "bits"
    label = "Bit reports: every record, each bit on its own exact lattice path (eps-DP per record)"
    store = "ladder"
    answer = TRUTH
    noise = NOISE
    sells_records = True
    no_risk_reason = "randomised records (bit reports): the paper's formula is for Laplace noise on statistics"
    gamma_applies = False

    def words(self) -> str:
        return _guarantee.engine_words(self.engine)

    def guarantee(self, values: int) -> str:
        return _guarantee.bits_statement()

    def refusal(self, level, *, released, ladder) -> Refusal | None:
        levels = ladder()
        if level in levels:
            return None
        shown = ", ".join(level_text(at) for at in levels)
        return Refusal(f"this microdata listing sells the levels {shown}; {level_text(level)} is not one of them",
                       f"One of {shown}.", f"level {level_text(level)} is not on the listing's ladder ({shown})")

    def level_sold(self, level, *, ladder, ceiling):
        """The lowest ladder level at or above ``level`` (the ceiling above the ladder)."""
        return next((at for at in ladder() if at >= level), None) or ceiling

    def next_level(self, held, cap, *, ladder):
        """The next level up the ladder, within the cap."""
        return next((eps for eps in ladder() if held < eps <= cap), None)

    def gain(self, held, target, now, then) -> float:
        # a decoded count's bound does not fall like 1/eps: the ratio of the bounds themselves
        return now / then

    def accuracy(self, level, *, labels, scales, plan, records) -> list[dict]:
        md = records()
        return [{"label": label, "noise_scale": md.weight / float(level), "error_bound": md.bound(level)}
                for label in md.labels]

    def profile(self, level, at, *, plan, records, cached, point_method) -> tuple:
        md = records()
        method = f"exact law of a record's loss over the {md.weight} bits a change can flip, summed in floating point"
        return md.deltas(level, at), method, self.guarantee(1)

    def scales(self, level, weights, grids) -> np.ndarray:
        return np.asarray(weights[:1] or [1.0], dtype=np.float64) / float(level)

    def layout(self, *, labels, upper) -> dict:
        """Its bits as the coordinates of its one "statistic", under the public number of records."""
        bits, records = len(labels), int(upper[0])
        return {"norm": "l1", "neighbours": {"relation": "public_size", "size": records, "max_rows": records},
                "indices": [list(range(bits))], "loss_cases": None, "unit_cases": None}

    def step(self, level, *, dim, weights, rng, below=None, above=None):
        raise ValueError("a bit-report path is sampled down its ladder (releases.bitpaths), never stepped")

    def values(self, answer, noise, *, level, weights, lower, upper, grids) -> list:
        raise ValueError("a bit-report release is its reports (releases.bitpaths)")
