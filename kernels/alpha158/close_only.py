"""Plugin pack `alpha158_close`: Qlib's Alpha158 less the 10 columns that close-only bars
leave without a value (a close-only source: open = high = low = close, constant volume, such
as the real cross-section of benchmarks/honesty_cross_section.py).

On bars with open = high = low = close and a constant volume, CORR{5,10,20,30,60}
(Corr(close, log(volume + 1), d)) and CORD{5,10,20,30,60} (Corr of the close ratio with the
volume ratio) divide by a zero volume deviation: NaN on every row. The meta model keeps only
rows whose every input is finite (domain.learning.metamodel.complete_rows), so the full `alpha158`
pack leaves it no training row on such data. This pack computes the same kernels
(kernels.alpha158.compute_alpha158, the same `a158_<QlibName>` columns and warm-ups) and
keeps the other 148 columns. It is a plugin module, not a built-in pack: select it with
`features: {plugins: [kernels.alpha158.close_only]}` and
`meta: {inputs: [specialists, alpha158_close]}` (the `alpha158` pack must not be selected
with it: the two make the same column names).
"""

from __future__ import annotations

from kernels.registry.packs import BAR_INPUTS, Batch, Pack

NO_VALUE_ON_CLOSE_ONLY = tuple(f"{k}{d}" for k in ("CORR", "CORD") for d in (5, 10, 20, 30, 60))


def _pack() -> Pack:
    from kernels import alpha158 as A

    names = [n for n in A.ALPHA158_NAMES if n not in NO_VALUE_ON_CLOSE_ONLY]

    def fn(arrays, offsets, dtype):
        out = A.compute_alpha158(arrays, offsets, dtype)
        return {f"a158_{n}": out[n] for n in names}

    columns = tuple(f"a158_{n}" for n in names)
    warmup = {f"a158_{n}": int(A.ALPHA158_WARMUP[n]) for n in names}
    return Pack("alpha158_close", (Batch("alpha158_close", columns, fn, BAR_INPUTS, warmup),))


PACKS = [_pack()]
