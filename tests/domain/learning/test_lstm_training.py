"""LSTM specialist kernels (domain/learning/lstm_training.py): sequences never cross symbols or gaps, the
dataset slices lazily, the standardizer sees training rows only, CPU training is
deterministic and learns a toy problem, early stopping restores the best epoch, a NaN that
reaches the loss stops training, and out-of-fold scores come from models that never saw the
row (nor its purge window). Tiny models, CPU, a few seconds in all.

The tests marked `gpu` run on tests.gpu.torch_device(): the CPU in CI, the GPU in
`make gpu-check` (bf16/fp16 autocast, torch.compile)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from sklearn.metrics import roc_auc_score

from domain.learning import lstm_training as L
from tests.gpu import gpu, torch_device

TINY = {"hidden": 12, "layers": 1, "dropout": 0.0, "batch_size": 64, "lr": 1e-2, "device": "cpu"}


def toy(n_symbols: int = 3, n: int = 500, n_features: int = 3, seed: int = 0, sign: float = 1.0):
    """X, y, offsets, t (row position within its symbol): y = 1 when the mean of feature 0
    over the last 5 rows (same symbol) is positive (negative when sign = -1)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_symbols * n, n_features)).astype(np.float32)
    X[:, 1] = X[:, 1] * 10 + 50  # a feature far from standard scale
    off = np.arange(n_symbols + 1, dtype=np.int64) * n
    y = np.empty(n_symbols * n, dtype=np.float32)
    for s in range(n_symbols):
        f = X[off[s] : off[s + 1], 0]
        y[off[s] : off[s + 1]] = sign * np.convolve(f, np.ones(5) / 5)[:n] > 0
    return X, y, off, np.arange(n_symbols * n) % n


def brute_force_ends(X, off, seq_len, valid):
    ends = []
    for s in range(len(off) - 1):
        for e in range(off[s] + seq_len - 1, off[s + 1]):
            w = slice(e - seq_len + 1, e + 1)
            if np.isfinite(X[w]).all() and valid[w].all():
                ends.append(e)
    return np.array(ends, dtype=np.int64)


@pytest.mark.parametrize("seed", range(25))
def test_make_sequences_never_crosses_symbols_or_gaps(seed):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(0, 40, rng.integers(1, 7))  # empty symbols included
    off = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    rows = int(off[-1])
    X = rng.normal(size=(rows, 2)).astype(np.float32)
    X[rng.random((rows, 2)) < 0.03] = rng.choice([np.nan, np.inf, -np.inf])
    valid = rng.random(rows) > 0.05
    seq_len = int(rng.integers(1, 10))
    mask = valid if seed % 2 else None
    ends = L.make_sequences(X, off, seq_len, mask)
    np.testing.assert_array_equal(ends, brute_force_ends(X, off, seq_len, valid if mask is not None else np.ones(rows, bool)))
    sym = np.searchsorted(off, np.arange(rows), side="right") - 1
    for e in ends:
        assert sym[e - seq_len + 1] == sym[e]


def test_make_sequences_rejects_bad_offsets():
    X = np.zeros((10, 2), np.float32)
    with pytest.raises(ValueError):
        L.make_sequences(X, [0, 5, 9], 3)
    with pytest.raises(ValueError):
        L.make_sequences(X, [0, 6, 5, 10], 3)


def test_sequence_dataset_slices_views_of_the_inputs():
    X, y, off, _ = toy(n_symbols=2, n=50)
    ends = L.make_sequences(X, off, 8)
    ds = L.SequenceDataset(X, y, ends, 8)
    assert np.shares_memory(ds.features.numpy(), X) and np.shares_memory(ds.labels.numpy(), y)
    x, label = ds[5]
    e = ends[5]
    np.testing.assert_array_equal(x.numpy(), X[e - 7 : e + 1])
    assert label.item() == y[e]
    assert x.untyped_storage().data_ptr() == ds.features.untyped_storage().data_ptr()  # a view, not a copy
    idx = [0, 17, 3, len(ends) - 1]
    xb, yb = ds[idx]
    np.testing.assert_array_equal(xb.numpy(), np.stack([X[ends[i] - 7 : ends[i] + 1] for i in idx]))
    np.testing.assert_array_equal(yb.numpy(), y[ends[idx]])
    batches = list(L.sequence_loader(ds, 16, shuffle=True, seed=1))
    assert sum(len(b[1]) for b in batches) == len(ends) and batches[0][0].shape == (16, 8, X.shape[1])


def test_standardizer_fits_training_rows_only():
    X, y, off, t = toy()
    train, val = t < 300, t >= 320
    a = L.Standardizer.fit(X, train)
    X2 = X.copy()
    X2[val] = X2[val] * 100 + 7
    X2[~train & ~val] = np.nan
    b = L.Standardizer.fit(X2, train)
    np.testing.assert_array_equal(a.mean, b.mean)
    np.testing.assert_array_equal(a.std, b.std)
    np.testing.assert_allclose(a.mean, X[train].mean(axis=0), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(a.std, X[train].std(axis=0), rtol=1e-6)
    Z = a.transform(X)
    assert Z.dtype == np.float32 and abs(Z[train].mean()) < 1e-5
    c = L.Standardizer.from_dict(json.loads(json.dumps(a.to_dict())))
    np.testing.assert_array_equal(c.transform(X), Z)
    const = L.Standardizer.fit(np.ones((5, 1), np.float32))
    assert const.std[0] == 1e-6 and np.isfinite(const.transform(np.ones((2, 1)))).all()
    # through train_lstm: changing the validation rows' features leaves the fit unchanged
    kw = dict(TINY, seq_len=8, epochs=1, max_steps=2)
    r1 = L.train_lstm(X, y, off, train, val, **kw)
    r2 = L.train_lstm(np.where(val[:, None], X * 3 + 1, X), y, off, train, val, **kw)
    np.testing.assert_array_equal(r1.standardizer.mean, r2.standardizer.mean)
    np.testing.assert_array_equal(r1.standardizer.std, r2.standardizer.std)


def test_training_is_deterministic_on_cpu():
    X, y, off, t = toy(n=300)
    rng_before = torch.get_rng_state()
    det_before = torch.are_deterministic_algorithms_enabled()
    kw = dict(TINY, hidden=10, layers=2, dropout=0.2, seq_len=8, epochs=2, max_steps=12, seed=3)
    r1 = L.train_lstm(X, y, off, t < 200, t >= 210, **kw)
    r2 = L.train_lstm(X, y, off, t < 200, t >= 210, **kw)
    assert [h["train_loss"] for h in r1.history] == [h["train_loss"] for h in r2.history]
    assert [h["val_loss"] for h in r1.history] == [h["val_loss"] for h in r2.history]
    for k, v in r1.model.state_dict().items():
        assert torch.equal(v, r2.model.state_dict()[k])
    r3 = L.train_lstm(X, y, off, t < 200, t >= 210, **{**kw, "seed": 4})
    assert [h["train_loss"] for h in r3.history] != [h["train_loss"] for h in r1.history]
    assert torch.equal(torch.get_rng_state(), rng_before)  # the caller's RNG is untouched
    assert torch.are_deterministic_algorithms_enabled() == det_before
    assert r1.device == "cpu" and r1.precision == "fp32" and r1.compiled is None
    assert r1.spec == {"in_dim": 3, "hidden": 10, "layers": 2, "dropout": 0.2, "out_dim": 1}


def test_learns_a_toy_problem():
    X, y, off, t = toy()
    train, val = t < 350, t >= 360
    r = L.train_lstm(X, y, off, train, val, **TINY, seq_len=8, epochs=3)
    p = L.predict_lstm(r.model, r.standardizer, X, off, seq_len=8, device="cpu")
    assert p.dtype == np.float32 and p.shape == y.shape
    assert np.isnan(p[t < 7]).all() and np.isfinite(p[t >= 7]).all()  # NaN where no full sequence ends
    m = val & np.isfinite(p)
    assert roc_auc_score(y[m], p[m]) > 0.7
    assert r.history[-1]["val_loss"] < r.history[0]["val_loss"] < np.log(2)
    assert r.samples_per_s > 0 and r.n_train == int((train & (t >= 7)).sum())
    # only the rows asked for
    q = L.predict_lstm(r.model, r.standardizer, X, off, np.array([3, 100, 101]), seq_len=8, device="cpu")
    assert np.isnan(q[3]) and np.isfinite(q[[100, 101]]).all() and np.isnan(q).sum() == len(q) - 2
    np.testing.assert_allclose(q[[100, 101]], p[[100, 101]], rtol=1e-6)


def test_early_stopping_restores_the_best_epoch():
    # validation labels are the opposite rule: the better the model learns, the worse val gets
    X, y, off, t = toy(n=400)
    _, y_opp, _, _ = toy(n=400, sign=-1.0)
    train, val = t < 280, t >= 290
    y_mix = np.where(val, y_opp, y).astype(np.float32)
    r = L.train_lstm(X, y_mix, off, train, val, **TINY, seq_len=8, epochs=8, patience=2)
    vals = [h["val_loss"] for h in r.history]
    assert r.best_epoch == int(np.argmin(vals)) + 1
    assert len(r.history) == r.best_epoch + 2 < 8  # stopped after `patience` epochs without improvement
    ends = np.flatnonzero(val & (t >= 7))
    p = L.predict_lstm(r.model, r.standardizer, X, off, ends, seq_len=8, device="cpu")[ends].astype(np.float64)
    yy = y_mix[ends]
    bce = -np.mean(yy * np.log(p) + (1 - yy) * np.log(1 - p))
    assert bce == pytest.approx(vals[r.best_epoch - 1], rel=1e-4)
    assert bce != pytest.approx(vals[-1], rel=1e-3)


def test_nan_reaching_the_loss_raises(monkeypatch):
    X, y, off, t = toy(n=200)
    X[50, 0] = np.nan
    train, val = t < 150, t >= 160
    kw = dict(TINY, seq_len=8, epochs=2)
    L.train_lstm(X, y, off, train, val, **kw)  # the NaN row is a gap: no window contains it
    monkeypatch.setattr(L, "finite_rows", lambda features: np.ones(len(features), bool))  # an upstream bug lets it through
    with pytest.raises(FloatingPointError, match=r"nan at epoch 1, step \d+"):
        L.train_lstm(X, y, off, train, val, **kw)


def test_out_of_fold_scores_never_use_the_scored_rows():
    n, seq_len, purge = 240, 8, 5
    X, y, off, t = toy(n_symbols=2, n=n)
    folds = np.minimum(t // 70, 2).astype(np.int64)
    folds[t >= 225] = -1  # unused tail
    r = L.out_of_fold_scores(X, y, off, folds, purge=purge, seq_len=seq_len, epochs=1,
                             **{**TINY, "max_steps": 4})
    sym = np.repeat(np.arange(len(off) - 1), np.diff(off))
    assert [f.fold for f in r.folds] == [0, 1, 2]
    for rec in r.folds:
        k = rec.fold
        forbidden = np.zeros(len(y), bool)
        for row in np.flatnonzero(folds == k):  # the fold and its purge window, within the symbol
            for j in range(row - purge, row + purge + 1):
                if 0 <= j < len(y) and sym[j] == sym[row]:
                    forbidden[j] = True
        assert rec.train_ends.size > 0
        assert (folds[rec.train_ends] >= 0).all() and (folds[rec.train_ends] != k).all()
        windows = rec.train_ends[:, None] + np.arange(-seq_len + 1, 1)
        assert not forbidden[windows].any()
        assert (sym[windows] == sym[rec.train_ends][:, None]).all()
        np.testing.assert_array_equal(rec.scored_rows, np.flatnonzero((folds == k) & (t >= seq_len - 1)))
    scored = r.scored_by >= 0
    np.testing.assert_array_equal(r.scored_by[scored], folds[scored])
    np.testing.assert_array_equal(scored, (folds >= 0) & (t >= seq_len - 1))
    np.testing.assert_array_equal(np.isfinite(r.scores), scored)
    assert r.scores.dtype == np.float32 and ((r.scores[scored] > 0) & (r.scores[scored] < 1)).all()


# --- on the test device (the GPU in make gpu-check) ---------------------------------------
# Predictions of one trained model: the device in fp32 vs the CPU in fp32 differ by cuDNN's
# summation order and TF32 (~1e-4); under autocast by the 8-bit (bf16) or 11-bit (fp16)
# mantissa of the matrix products' inputs.
PREDICTION_ATOL = {"fp32": 2e-3, "bf16": 3e-2, "fp16": 5e-3}


@gpu
@pytest.mark.parametrize("amp", ["fp32", "bf16", "fp16"])
def test_amp_training_and_inference_on_the_test_device(amp):
    dev = torch_device()
    if amp != "fp32" and dev == "cpu":
        pytest.skip("autocast is proven on a GPU (fp16 needs one; bf16 LSTM needs a CPU with bf16 support)")
    X, y, off, t = toy()
    train, val = t < 350, t >= 360
    r = L.train_lstm(X, y, off, train, val, **{**TINY, "device": dev}, seq_len=8, epochs=3, amp=amp, compile=False)
    assert (r.device, r.precision, r.compiled) == (dev, amp, None)
    on_device = L.predict_lstm(r.model, r.standardizer, X, off, seq_len=8, device=dev, amp=amp)
    on_cpu = L.predict_lstm(r.model, r.standardizer, X, off, seq_len=8, device="cpu", amp=False)
    np.testing.assert_array_equal(np.isnan(on_device), np.isnan(on_cpu))
    m = np.isfinite(on_cpu)
    np.testing.assert_allclose(on_device[m], on_cpu[m], rtol=0, atol=PREDICTION_ATOL[amp])
    fp32 = L.predict_lstm(r.model, r.standardizer, X, off, seq_len=8, device=dev, amp=False)
    np.testing.assert_allclose(fp32[m], on_cpu[m], rtol=0, atol=PREDICTION_ATOL["fp32"])
    mv = val & m
    assert roc_auc_score(y[mv], on_device[mv]) > 0.7


@gpu
def test_compiled_training_on_cuda_learns_and_keeps_plain_state_dict_keys():
    if torch_device() != "cuda":
        pytest.skip("torch.compile is proven on CUDA only (on CPU inductor needs a C++ toolchain and minutes)")
    X, y, off, t = toy()
    train, val = t < 350, t >= 360
    r = L.train_lstm(X, y, off, train, val, **{**TINY, "device": "cuda"}, seq_len=8, epochs=3, amp="auto", compile="auto")
    assert r.compiled == "max-autotune" and r.precision in ("bf16", "fp16")
    assert not any(k.startswith("_orig_mod.") for k in r.model.state_dict())
    p = L.predict_lstm(r.model, r.standardizer, X, off, seq_len=8, device="cuda")
    m = val & np.isfinite(p)
    assert roc_auc_score(y[m], p[m]) > 0.7
