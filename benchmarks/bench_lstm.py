"""Benchmark: the LSTM specialist (domain/learning/lstm_training.py).

Synthetic universe: `--symbols` symbols x (`--rows` + seq_len - 1) rows x `--features` float32
features, so that every symbol ends `--rows` full sequences (50 x 1,000 = 50,000 by default).
The first specification's model size: hidden 128, 2 layers, seq_len 64, batch 512.

  loader     seconds per batch of a per-item Dataset (one window per item) + default collate against
             SequenceDataset's one-gather batches (no model)
  train      train_lstm for `--steps` optimizer steps (as many epochs as that takes, no validation):
             training sequences/s (fp32 on CPU; AMP + torch.compile on a GPU)
  inference  predict_lstm over every full sequence (batch 4,096): sequences/s, end to end
             (standardise, find sequences, forward) and forward only

Goals: >= 50k sequences/s inference on a 7900 XTX (short seq_len); on an H100 in bf16:
1M/s. Runs on whatever device torch sees (`--device`).

Usage: python benchmarks/bench_lstm.py [--steps 150] [--symbols 50] [--rows 1000] [--record] [--json PATH]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.common import Report, parser, peak_rss_mb  # noqa: E402
from domain.learning import lstm_training as L  # noqa: E402


def universe(n_symbols: int, rows: int, seq_len: int, n_features: int, seed: int = 0):
    """X float32 [S*n, F], y (1 when feature 0's mean over the last 5 rows is positive), offsets."""
    n = rows + seq_len - 1
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_symbols * n, n_features)).astype(np.float32)
    off = np.arange(n_symbols + 1, dtype=np.int64) * n
    f0 = X[:, 0].reshape(n_symbols, n)
    y = np.zeros((n_symbols, n), dtype=np.float32)
    for k in range(5):
        y[:, k:] += f0[:, : n - k]
    return X, (y.ravel() > 0).astype(np.float32), off


class SeedSeqDS(torch.utils.data.Dataset):
    """A per-item sequence Dataset (one window per item; the DataLoader stacks them): the
    simple way, against which SequenceDataset's one gather per batch is measured."""

    def __init__(self, X, y, ends, seq_len):
        self.X, self.y, self.ends, self.seq_len = X, y, ends, seq_len

    def __len__(self):
        return len(self.ends)

    def __getitem__(self, i):
        e = int(self.ends[i])
        return self.X[e - self.seq_len + 1 : e + 1], self.y[e]


def loader_seconds(loader, batches: int) -> float:
    """Mean seconds per batch over `batches` batches (after a first one)."""
    it = iter(loader)
    next(it)
    t0 = time.perf_counter()
    for _ in range(batches):
        next(it)
    return (time.perf_counter() - t0) / batches


def main() -> int:
    ap = parser(__doc__)
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--symbols", type=int, default=50)
    ap.add_argument("--rows", type=int, default=1000, help="full sequences per symbol")
    ap.add_argument("--features", type=int, default=32)
    ap.add_argument("--seq-len", type=int, default=64)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--note", default="", help="a sentence appended to the recorded section")
    args = ap.parse_args()
    report = Report("LSTM specialist (domain/learning/lstm_training.py)", args)
    torch.manual_seed(0)
    X, y, off = universe(args.symbols, args.rows, args.seq_len, args.features)
    ends = L.make_sequences(X, off, args.seq_len)
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y)

    seed_dl = torch.utils.data.DataLoader(SeedSeqDS(Xt, yt, ends, args.seq_len), batch_size=args.batch, shuffle=True)
    ours_dl = L.sequence_loader(L.SequenceDataset(X, y, ends, args.seq_len), args.batch, shuffle=True)
    nb = min(20, len(ends) // args.batch - 1)
    seed_s, ours_s = loader_seconds(seed_dl, nb), loader_seconds(ours_dl, nb)
    print(f"loader: seed {seed_s * 1e3:.2f} ms/batch, ours {ours_s * 1e3:.2f} ms/batch", flush=True)

    everything = np.ones(len(y), dtype=bool)
    t0 = time.perf_counter()
    epochs = -(-args.steps // max(1, len(ends) // args.batch))  # enough epochs for the step budget
    r = L.train_lstm(X, y, off, everything, ~everything, seq_len=args.seq_len, batch_size=args.batch, epochs=epochs,
                     max_steps=args.steps, device=args.device)
    train_s = time.perf_counter() - t0
    steps = sum(h["steps"] for h in r.history)
    print(f"train: {steps} steps, {r.samples_per_s:,.0f} samples/s ({r.device}, {r.precision})", flush=True)

    t0 = time.perf_counter()
    p = L.predict_lstm(r.model, r.standardizer, X, off, seq_len=args.seq_len, device=args.device)
    predict_s = time.perf_counter() - t0
    n_seq = int(np.isfinite(p).sum())
    dev = L.resolve_device(args.device)
    Xd = torch.from_numpy(r.standardizer.transform(X)).to(dev)
    t0 = time.perf_counter()
    L.forward_windows(r.model, Xd, ends, args.seq_len, 4096, L.resolve_precision("auto", dev))
    if dev.type == "cuda":
        torch.cuda.synchronize()
    forward_s = time.perf_counter() - t0
    print(f"inference: {n_seq:,} sequences, {n_seq / predict_s:,.0f}/s end to end, {n_seq / forward_s:,.0f}/s forward", flush=True)

    gpu_note = ("GPU figures (goals: >= 50k sequences/s inference on a 7900 XTX; 1M/s on an H100 in bf16) "
                "were NOT measured: no GPU was available to this run." if dev.type == "cpu" else
                f"Device: {torch.cuda.get_device_name(dev)}.")
    report.note(f"torch {torch.__version__}, {torch.get_num_threads()} threads. Data: {args.symbols} symbols x "
                f"{args.rows + args.seq_len - 1:,} rows x {args.features} float32 features ({len(ends):,} full sequences). "
                f"Model: LSTMSpec (hidden 128, 2 layers, dropout 0.1), seq_len {args.seq_len}, batch {args.batch}, AdamW.")
    train_rate, seq_rate = r.samples_per_s, n_seq / predict_s
    report.table(["run", "device, precision", "amount", "seconds", "rate"], [
        ["batch loading: per-item Dataset + default collate", "cpu", f"{nb} batches", f"{seed_s * nb:.3f}", f"{seed_s * 1e3:.2f} ms/batch"],
        ["batch loading: SequenceDataset (one gather per batch)", "cpu", f"{nb} batches", f"{ours_s * nb:.3f}", f"{ours_s * 1e3:.2f} ms/batch"],
        [f"training (train_lstm, {steps} steps)", f"{r.device}, {r.precision}", f"{steps * args.batch:,} sequences",
         f"{sum(h['train_seconds'] for h in r.history):.1f}", f"{train_rate:,.0f} samples/s"],
        ["inference (predict_lstm, end to end, batch 4,096)", f"{r.device}, {r.precision}", f"{n_seq:,} sequences",
         f"{predict_s:.2f}", f"{seq_rate:,.0f} seq/s"],
        ["inference (forward only)", f"{r.device}, {r.precision}", f"{n_seq:,} sequences", f"{forward_s:.2f}",
         f"{n_seq / forward_s:,.0f} seq/s"],
    ])
    report.note(f"train_lstm wall time {train_s:.1f} s (standardise + sequences + loop); peak RSS {peak_rss_mb():.0f} MB. "
                f"{gpu_note}" + (f" {args.note}" if args.note else ""))
    report.figure("train_samples_per_s", train_rate)
    report.figure("inference_seq_per_s", seq_rate)
    report.figure("forward_seq_per_s", n_seq / forward_s)
    report.result(f"LSTM on {r.device}, seq_len {args.seq_len}, hidden 128 x 2", "(measured)",
                  f"training {train_rate:,.0f} samples/s, inference {seq_rate:,.0f} seq/s", "measured")
    report.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
