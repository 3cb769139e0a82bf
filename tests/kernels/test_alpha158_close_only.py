"""The plugin pack `alpha158_close` (kernels.alpha158.close_only) on close-only bars."""

import numpy as np


def test_on_close_only_bars_alpha158_close_has_a_value_where_alpha158s_volume_correlations_have_none():
    """open = high = low = close and a constant volume (a close-only source such as the S&P 500
    file of benchmarks/honesty_cross_section.py): Alpha158's 10 CORR/CORD columns are NaN on
    every row, so the meta model (complete rows only) has no row to train on; the plugin pack
    alpha158_close keeps the other 148, finite after warm-up."""
    from kernels.registry.features import compute_features
    from domain.feature_packs import select

    n = 300
    close = (50 * np.exp(np.cumsum(np.random.default_rng(1).normal(0, 0.02, n)))).astype(np.float32)
    arrays = {c: close for c in ("open", "high", "low", "close", "vwap")} | {"volume": np.full(n, 1e6, np.float32)}
    offsets = np.array([0, n])
    full = select(("alpha158",))
    out = compute_features(arrays, offsets, backend="cpu", dtype=np.float32, entries=full.features)
    no_value = [c for c in full.feature_columns if np.isnan(out[c]).all()]
    assert no_value == [f"a158_{k}{d}" for k in ("CORR", "CORD") for d in (5, 10, 20, 30, 60)]
    close_only = select(("core",), ("kernels.alpha158.close_only",))
    cols = [c for c in close_only.feature_columns if c.startswith("a158_")]
    assert len(cols) == 148 and not set(cols) & set(no_value)
    out = compute_features(arrays, offsets, backend="cpu", dtype=np.float32, entries=close_only.features)
    warm = close_only.warmups()
    assert all(np.isfinite(out[c][warm[c]:]).all() for c in cols)
