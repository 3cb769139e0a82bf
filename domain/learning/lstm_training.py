"""LSTM specialist: sequences per symbol, training, inference and
out-of-fold scores. Arrays in, models and arrays out: no Dagster, no polars, no paths
(saving `result.model.state_dict()` and `result.standardizer.to_dict()` is the caller's job).

Inputs
    X        float32 [rows, F]   features; the rows of one symbol are contiguous and in time order
    y        float   [rows]      binary label 0/1, NaN where missing (any other finite value is refused)
    offsets  int64   [S+1]       symbol s owns rows offsets[s]:offsets[s+1]; offsets[0] = 0,
                                 offsets[-1] = rows, non-decreasing (empty symbols allowed)

Sequences (`make_sequences`)
    A sequence is named by its END row e: the input window is X[e-seq_len+1 .. e] (seq_len rows,
    oldest first), the target y[e]. e is an end row exactly when
      1. the whole window lies inside e's symbol (e - seq_len + 1 >= offsets[s]), and
      2. every row of the window is usable: all its features finite AND valid_mask[row] (when a
         mask is given). One unusable row is a gap: no window spans it.
    Labels are not part of this test: a missing label only matters at the end row, and the
    training code drops end rows whose label is NaN (a row with a missing label but finite
    features still serves as past context inside later windows).

Standardisation (`Standardizer`): per-feature mean and population std over the TRAINING rows'
    finite values (float64 sums), std floored at `std_floor`; a feature with no finite training
    value gets mean 0, std 1. `transform` returns a new float32 array. `to_dict`/`from_dict`
    round-trip through JSON.

Training (`train_lstm`): standardise on the train rows, build sequences on the standardised
    matrix, train on end rows in `train_rows_mask`, early-stop on the mean BCE of end rows in
    `val_rows_mask` (window rows may lie outside either mask: they are past inputs, not
    targets). AdamW, BCEWithLogitsLoss, gradient-norm clipping. The best epoch's weights are
    restored. A non-finite training loss raises FloatingPointError naming epoch and step.
    Device: "auto" is CUDA when torch sees one (ROCm builds appear as CUDA), else CPU.
      GPU: AMP in bf16 when `torch.cuda.is_bf16_supported()`, else fp16 with a GradScaler;
           torch.compile(mode="max-autotune") of the training forward (the returned model is
           the plain module, so state-dict keys carry no `_orig_mod.` prefix); pinned-memory
           DataLoader; not bit-reproducible (cuDNN/MIOpen RNN kernels).
      CPU: fp32, no compile, `torch.use_deterministic_algorithms(True, warn_only=True)` for the
           duration of the call (restored after): same seed, same data -> same losses and weights.
    Randomness (weights, dropout, shuffling) comes from torch seeded with `seed` inside
    `torch.random.fork_rng`, so the caller's global RNG state is left as it was; NumPy's global
    RNG is not used.
    Data loading: `SequenceDataset` keeps references to X and y and gathers a whole batch of
    windows with one index operation (the DataLoader samples lists of indices, batch_size=None);
    no [n, seq_len, F] array is ever built. Validation and inference gather windows from one
    copy of the standardised matrix on the device.

Inference (`predict_lstm`): float32 probabilities per row, NaN where no full sequence ends
    (or the row was not asked for), under torch.inference_mode and, on GPU, autocast.

Out-of-fold scores (`out_of_fold_scores`): the LSTM score handed to the meta model must come
    from a model that never saw the row. See that function for the fold/purge contract.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import (
    BatchSampler,
    DataLoader,
    Dataset,
    RandomSampler,
    SequentialSampler,
)

CHUNK_ROWS = 1 << 16  # rows per block in the NumPy passes (bounded temporaries)
CHECK_EVERY = 32  # training steps between loss finiteness checks (one device sync each)


# ----------------------------------------------------------------------------- model


class LSTMSpec(nn.Module):
    """The seed's specialist: nn.LSTM (batch_first) -> LayerNorm + Linear on the last step.

    forward(x [B, T, in_dim]) -> logits [B] (out_dim=1) or [B, out_dim]."""

    def __init__(self, in_dim: int, hidden: int = 128, layers: int = 2, dropout: float = 0.1, out_dim: int = 1):
        super().__init__()
        self.lstm = nn.LSTM(in_dim, hidden, num_layers=layers, batch_first=True, dropout=dropout if layers > 1 else 0.0)
        self.head = nn.Sequential(nn.LayerNorm(hidden), nn.Linear(hidden, out_dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, _ = self.lstm(x)
        return self.head(y[:, -1, :]).squeeze(-1)


# ----------------------------------------------------------------------------- arrays


def check_offsets(offsets, rows: int) -> np.ndarray:
    """offsets as int64 [S+1], or ValueError unless offsets[0] = 0, offsets[-1] = rows, non-decreasing."""
    off = np.asarray(offsets, dtype=np.int64)
    if off.ndim != 1 or off.size < 1 or off[0] != 0 or off[-1] != rows or (np.diff(off) < 0).any():
        raise ValueError(f"symbol_offsets must be non-decreasing from 0 to rows={rows}, got {off[:5]}...{off[-2:]}")
    return off


def as_features(X) -> np.ndarray:
    """X as a C-contiguous float32 [rows, F] array (no copy when it already is one)."""
    X = np.ascontiguousarray(X, dtype=np.float32)
    if X.ndim != 2:
        raise ValueError(f"features must be [rows, F], got shape {X.shape}")
    return X


def as_mask(mask, rows: int, name: str) -> np.ndarray:
    m = np.asarray(mask, dtype=bool)
    if m.shape != (rows,):
        raise ValueError(f"{name} must be a bool array of shape ({rows},), got {m.shape}")
    return m


def as_labels(y, rows: int) -> np.ndarray:
    """y as float32 [rows]; ValueError when a finite label is not 0 or 1."""
    y = np.ascontiguousarray(y, dtype=np.float32)
    if y.shape != (rows,):
        raise ValueError(f"labels must have shape ({rows},), got {y.shape}")
    fin = np.isfinite(y)
    if ((y[fin] != 0) & (y[fin] != 1)).any():
        raise ValueError("labels must be 0, 1 or NaN (missing)")
    return y


def finite_rows(features: np.ndarray) -> np.ndarray:
    """bool [rows]: every feature of the row is finite."""
    out = np.empty(features.shape[0], dtype=bool)
    for a in range(0, features.shape[0], CHUNK_ROWS):
        out[a : a + CHUNK_ROWS] = np.isfinite(features[a : a + CHUNK_ROWS]).all(axis=1)
    return out


def row_symbol_start(offsets: np.ndarray) -> np.ndarray:
    """int64 [rows]: the first row of each row's symbol."""
    return np.repeat(offsets[:-1], np.diff(offsets))


def make_sequences(features, symbol_offsets, seq_len: int, valid_mask=None) -> np.ndarray:
    """Sorted int64 end rows of every full sequence (see the module docstring, "Sequences"):
    the window [e-seq_len+1, e] lies inside e's symbol and every row in it has finite features
    and valid_mask True (when given)."""
    X = np.asarray(features)
    rows = X.shape[0]
    off = check_offsets(symbol_offsets, rows)
    if seq_len < 1:
        raise ValueError(f"seq_len must be >= 1, got {seq_len}")
    usable = finite_rows(X)
    if valid_mask is not None:
        usable &= as_mask(valid_mask, rows, "valid_mask")
    gaps = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(~usable, out=gaps[1:])
    end = np.arange(rows, dtype=np.int64)
    start = end - (seq_len - 1)
    inside = start >= row_symbol_start(off)
    end, start = end[inside], start[inside]
    return end[gaps[end + 1] - gaps[start] == 0]


@dataclass
class Standardizer:
    """Per-feature (x - mean) / std; `fit` on training rows only."""

    mean: np.ndarray  # float64 [F]
    std: np.ndarray  # float64 [F], >= the floor used by fit

    @classmethod
    def fit(cls, X, rows_mask=None, *, std_floor: float = 1e-6) -> Standardizer:
        """Mean and population std of the finite values of X[rows_mask] per feature."""
        X = np.asarray(X)
        idx = np.arange(X.shape[0]) if rows_mask is None else np.flatnonzero(as_mask(rows_mask, X.shape[0], "rows_mask"))
        n, total = np.zeros(X.shape[1]), np.zeros(X.shape[1])
        for block in _row_blocks(X, idx):
            fin = np.isfinite(block)
            n += fin.sum(axis=0)
            total += np.where(fin, block, 0.0).sum(axis=0)
        mean = np.divide(total, n, out=np.zeros_like(total), where=n > 0)
        sq = np.zeros(X.shape[1])
        for block in _row_blocks(X, idx):
            sq += np.where(np.isfinite(block), (block - mean) ** 2, 0.0).sum(axis=0)
        std = np.sqrt(np.divide(sq, n, out=np.ones_like(sq), where=n > 0))
        std[n == 0] = 1.0
        return cls(mean=mean, std=np.maximum(std, std_floor))

    def transform(self, X) -> np.ndarray:
        """float32 [rows, F] standardised copy of X (NaN stays NaN)."""
        X = np.asarray(X)
        if X.ndim != 2 or X.shape[1] != self.mean.shape[0]:
            raise ValueError(f"expected [rows, {self.mean.shape[0]}] features, got {X.shape}")
        mean, std = self.mean.astype(np.float32), self.std.astype(np.float32)
        out = np.empty(X.shape, dtype=np.float32)
        for a in range(0, X.shape[0], CHUNK_ROWS):
            np.subtract(X[a : a + CHUNK_ROWS], mean, out=out[a : a + CHUNK_ROWS], casting="unsafe")
            out[a : a + CHUNK_ROWS] /= std
        return out

    def to_dict(self) -> dict:
        return {"mean": [float(v) for v in self.mean], "std": [float(v) for v in self.std]}

    @classmethod
    def from_dict(cls, d: dict) -> Standardizer:
        return cls(mean=np.asarray(d["mean"], dtype=np.float64), std=np.asarray(d["std"], dtype=np.float64))


def _row_blocks(X: np.ndarray, idx: np.ndarray):
    for a in range(0, idx.size, CHUNK_ROWS):
        yield X[idx[a : a + CHUNK_ROWS]].astype(np.float64)


class SequenceDataset(Dataset):
    """Windows sliced lazily from references to the feature and label arrays.

    features float32 [rows, F] (kept as a torch view of the same memory when it is a
    C-contiguous float32 array), labels [rows] or None, ends int64 [n] (from make_sequences).
    ds[i] -> (window [seq_len, F] (a view), label) ; ds[list of i] -> (windows [B, seq_len, F],
    labels [B]) gathered in one index operation. Without labels only the windows come back.
    Use it with a sampler of index lists and batch_size=None (see `sequence_loader`)."""

    def __init__(self, features, labels, ends, seq_len: int):
        self.features = torch.from_numpy(as_features(features))
        self.labels = None if labels is None else torch.from_numpy(np.ascontiguousarray(labels, dtype=np.float32))
        self.ends = torch.from_numpy(np.ascontiguousarray(ends, dtype=np.int64))
        self.seq_len = int(seq_len)
        if len(self.ends) and (int(self.ends.min()) < seq_len - 1 or int(self.ends.max()) >= self.features.shape[0]):
            raise ValueError("ends must lie in [seq_len - 1, rows)")
        self._steps = torch.arange(-self.seq_len + 1, 1, dtype=torch.int64)

    def __len__(self) -> int:
        return len(self.ends)

    def __getitem__(self, index):
        if isinstance(index, (int, np.integer)):
            e = int(self.ends[index])
            x = self.features[e - self.seq_len + 1 : e + 1]
            return x if self.labels is None else (x, self.labels[e])
        e = self.ends[torch.as_tensor(index, dtype=torch.int64)]
        x = self.features[e[:, None] + self._steps]
        return x if self.labels is None else (x, self.labels[e])


def sequence_loader(ds: SequenceDataset, batch_size: int, *, shuffle: bool, seed: int = 0, pin_memory: bool = False,
                    num_workers: int = 0, drop_last: bool = False) -> DataLoader:
    """DataLoader yielding whole batches from `ds` (one gather per batch, no per-item collate)."""
    base = RandomSampler(ds, generator=torch.Generator().manual_seed(seed)) if shuffle else SequentialSampler(ds)
    extra = {"prefetch_factor": 2, "persistent_workers": True} if num_workers else {}
    return DataLoader(ds, sampler=BatchSampler(base, batch_size, drop_last), batch_size=None,
                      num_workers=num_workers, pin_memory=pin_memory, **extra)


# ----------------------------------------------------------------------------- device


def resolve_device(device="auto") -> torch.device:
    """The torch device of a `device` setting, in the settings' vocabulary (auto|cpu|cuda|rocm;
    the assets pass resources.compute.select_device's torch_device): auto is the GPU when
    torch sees one, else cpu; rocm is torch's `cuda` device (a ROCm build of torch names it
    so). A torch.device or `cuda:N` is taken as is; any other name (e.g. `gpu`) is a
    ValueError naming the allowed values."""
    if isinstance(device, torch.device):
        return device
    if device in ("auto", None):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device in ("cpu", "cuda", "rocm") or (isinstance(device, str) and device.startswith("cuda:")):
        return torch.device("cuda" if device == "rocm" else device)
    raise ValueError(f"device {device!r}: expected one of auto, cpu, cuda, rocm")


def resolve_precision(amp, device: torch.device) -> str:
    """'fp32', 'bf16' or 'fp16'. auto/True: on GPU bf16 when supported, else fp16; on CPU fp32."""
    if amp in (False, None, "fp32"):
        return "fp32"
    if amp in ("auto", True):
        if device.type != "cuda":
            return "fp32"
        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    if amp == "fp16" and device.type != "cuda":
        raise ValueError("fp16 autocast needs a GPU (use amp='bf16' or False on CPU)")
    if amp not in ("bf16", "fp16"):
        raise ValueError(f"amp must be 'auto', True, False, 'fp32', 'bf16' or 'fp16', got {amp!r}")
    return amp


def resolve_compile(compile, device: torch.device) -> str | None:
    """torch.compile mode or None. auto: 'max-autotune' on GPU, off on CPU; True: 'max-autotune'."""
    if compile == "auto":
        return "max-autotune" if device.type == "cuda" else None
    if compile is True:
        return "max-autotune"
    return compile or None


def autocast(device: torch.device, precision: str):
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    return torch.autocast(device_type=device.type, dtype=dtype, enabled=dtype is not None)


@contextlib.contextmanager
def reproducible(seed: int, device: torch.device):
    """Seed torch inside fork_rng (caller's RNG state restored after); deterministic
    algorithms (warn only) on CPU for the duration."""
    devices = [device.index or 0] if device.type == "cuda" else []
    was = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled())
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        if device.type == "cpu":
            torch.use_deterministic_algorithms(True, warn_only=True)
        try:
            yield
        finally:
            torch.use_deterministic_algorithms(was[0], warn_only=was[1])


# ----------------------------------------------------------------------------- train / predict


@dataclass
class TrainResult:
    model: LSTMSpec  # best epoch's weights, eval mode, on `device`
    standardizer: Standardizer
    history: list[dict]  # per epoch: epoch (1-based), train_loss, val_loss (NaN without validation), steps, seconds
    best_epoch: int  # 1-based; the last epoch when there is no validation set
    samples_per_s: float  # training sequences per second (training loops only, compile time included)
    device: str
    precision: str  # fp32 | bf16 | fp16
    seq_len: int
    spec: dict  # LSTMSpec(**spec) rebuilds the model for result.model.state_dict()
    n_train: int
    n_val: int
    compiled: str | None = None
    train_ends: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64), repr=False)


def split_ends(ends: np.ndarray, y: np.ndarray, rows_mask: np.ndarray) -> np.ndarray:
    """End rows inside rows_mask with a label."""
    return ends[rows_mask[ends] & np.isfinite(y[ends])]


def train_lstm(X, y, offsets, train_rows_mask, val_rows_mask, *, seq_len: int = 64, hidden: int = 128, layers: int = 2,
               dropout: float = 0.1, epochs: int = 5, batch_size: int = 512, lr: float = 1e-3, weight_decay: float = 0.01,
               grad_clip: float | None = 1.0, patience: int = 2, valid_mask=None, device="auto", amp="auto",
               compile="auto", seed: int = 0, num_workers: int = 0, max_steps: int | None = None) -> TrainResult:
    """Train an LSTMSpec on sequences ending in the train rows; early stopping on the validation rows.

    train_rows_mask / val_rows_mask: bool [rows], disjoint; they select END rows (targets).
    valid_mask: rows allowed inside any window (default all; non-finite rows never are).
    Early stopping: after `patience` consecutive epochs without a lower validation loss, or
    after `epochs`, or once `max_steps` optimizer steps are done (that epoch is still
    validated). An empty validation set trains the full budget and keeps the last epoch."""
    dev = resolve_device(device)
    precision, compile_mode = resolve_precision(amp, dev), resolve_compile(compile, dev)
    X = as_features(X)
    rows = X.shape[0]
    y = as_labels(y, rows)
    off = check_offsets(offsets, rows)
    train_rows, val_rows = as_mask(train_rows_mask, rows, "train_rows_mask"), as_mask(val_rows_mask, rows, "val_rows_mask")
    if (train_rows & val_rows).any():
        raise ValueError("train_rows_mask and val_rows_mask overlap")
    standardizer = Standardizer.fit(X, train_rows)
    Xs = standardizer.transform(X)
    ends = make_sequences(Xs, off, seq_len, valid_mask)
    train_ends, val_ends = split_ends(ends, y, train_rows), split_ends(ends, y, val_rows)
    if train_ends.size == 0:
        raise ValueError(f"no training sequence: no train row with a label ends a full window of {seq_len} usable rows")
    spec = {"in_dim": X.shape[1], "hidden": hidden, "layers": layers, "dropout": dropout, "out_dim": 1}
    with reproducible(seed, dev):
        model = LSTMSpec(**spec).to(dev)
        loop = TrainLoop(model, dev, precision, compile_mode, lr, weight_decay, grad_clip)
        ds = SequenceDataset(Xs, y, train_ends, seq_len)
        loader = sequence_loader(ds, batch_size, shuffle=True, seed=seed, pin_memory=dev.type == "cuda",
                                 num_workers=num_workers, drop_last=len(ds) >= batch_size)
        val = Validation(Xs, y, val_ends, seq_len, batch_size, dev, precision) if val_ends.size else None
        history, best_epoch, best_state = fit_epochs(model, loop, loader, val, epochs, patience, max_steps)
    if best_state is not None:
        model.load_state_dict(best_state)
    model.eval()
    steps_time = sum(h["train_seconds"] for h in history)
    return TrainResult(model=model, standardizer=standardizer, history=history, best_epoch=best_epoch,
                       samples_per_s=loop.samples / steps_time if steps_time > 0 else float("nan"), device=str(dev),
                       precision=precision, seq_len=seq_len, spec=spec, n_train=int(train_ends.size),
                       n_val=int(val_ends.size), compiled=compile_mode, train_ends=train_ends)


def fit_epochs(model, loop: TrainLoop, loader, val: Validation | None, epochs: int, patience: int,
               max_steps: int | None) -> tuple[list[dict], int, dict | None]:
    """Run epochs with early stopping; (history, best_epoch, best state dict or None = current)."""
    history, best_loss, best_epoch, best_state, stale = [], float("inf"), 0, None, 0
    for epoch in range(1, epochs + 1):
        t0 = time.perf_counter()
        train_loss, steps = loop.epoch(loader, epoch, max_steps)
        t1 = time.perf_counter()
        val_loss = val.loss(model) if val is not None else float("nan")
        history.append({"epoch": epoch, "train_loss": train_loss, "val_loss": val_loss, "steps": steps,
                        "train_seconds": t1 - t0, "seconds": time.perf_counter() - t0})
        if val is None:
            best_epoch = epoch
        elif val_loss < best_loss:
            best_loss, best_epoch, stale = val_loss, epoch, 0
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        else:
            stale += 1
            if stale >= patience:
                break
        if max_steps is not None and loop.steps >= max_steps:
            break
    return history, best_epoch, best_state


class TrainLoop:
    """One optimizer and its precision machinery; `epoch` runs one pass over the loader."""

    def __init__(self, model: LSTMSpec, device: torch.device, precision: str, compile_mode: str | None, lr: float,
                 weight_decay: float, grad_clip: float | None):
        self.model, self.device, self.precision, self.grad_clip = model, device, precision, grad_clip
        self.forward = torch.compile(model, mode=compile_mode) if compile_mode else model
        self.opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
        self.scaler = torch.amp.GradScaler(device.type, enabled=precision == "fp16")
        self.steps = 0  # optimizer steps over all epochs
        self.samples = 0

    def epoch(self, loader, epoch: int, max_steps: int | None) -> tuple[float, int]:
        """Mean training loss of the epoch's steps and their count."""
        self.model.train()
        losses, first, total = [], 1, 0.0
        step = 0
        for step, (xb, yb) in enumerate(loader, start=1):
            losses.append(self.step(xb, yb))
            if len(losses) == CHECK_EVERY:
                total += check_finite(losses, epoch, first)
                losses, first = [], step + 1
            if max_steps is not None and self.steps >= max_steps:
                break
        total += check_finite(losses, epoch, first)
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return (total / step if step else float("nan")), step

    def step(self, xb: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
        xb = xb.to(self.device, non_blocking=True)
        yb = yb.to(self.device, non_blocking=True)
        self.opt.zero_grad(set_to_none=True)
        with autocast(self.device, self.precision):
            logits = self.forward(xb)
        loss = F.binary_cross_entropy_with_logits(logits.float(), yb)
        self.scaler.scale(loss).backward()
        if self.grad_clip:
            self.scaler.unscale_(self.opt)
            nn.utils.clip_grad_norm_(self.model.parameters(), self.grad_clip)
        self.scaler.step(self.opt)
        self.scaler.update()
        self.steps += 1
        self.samples += len(yb)
        return loss.detach()


def check_finite(losses: list[torch.Tensor], epoch: int, first_step: int) -> float:
    """Sum of the losses; FloatingPointError naming epoch and step at the first non-finite one."""
    if not losses:
        return 0.0
    t = torch.stack(losses).float().cpu()
    bad = ~torch.isfinite(t)
    if bad.any():
        i = int(bad.nonzero()[0, 0])
        raise FloatingPointError(
            f"LSTM training loss is {t[i].item()} at epoch {epoch}, step {first_step + i}: check the inputs for "
            f"NaN/inf (make_sequences drops non-finite rows), lower lr, or train with amp=False")
    return float(t.sum())


class Validation:
    """Mean BCE of the model on fixed validation sequences (windows gathered on the device)."""

    def __init__(self, Xs: np.ndarray, y: np.ndarray, ends: np.ndarray, seq_len: int, batch_size: int,
                 device: torch.device, precision: str):
        self.Xd = torch.from_numpy(Xs).to(device)
        self.ends, self.seq_len, self.batch_size = ends, seq_len, max(batch_size, 4096)
        self.y = torch.from_numpy(y[ends]).to(device)
        self.precision = precision

    def loss(self, model: LSTMSpec) -> float:
        logits = forward_windows(model, self.Xd, self.ends, self.seq_len, self.batch_size, self.precision)
        model.train()
        return float(F.binary_cross_entropy_with_logits(logits, self.y))


def forward_windows(model: LSTMSpec, Xd: torch.Tensor, ends: np.ndarray, seq_len: int, batch_size: int,
                    precision: str) -> torch.Tensor:
    """float32 logits [len(ends)] of the windows ending at `ends` of the device matrix Xd (eval mode)."""
    model.eval()
    steps = torch.arange(-seq_len + 1, 1, device=Xd.device)
    e_all = torch.from_numpy(np.ascontiguousarray(ends, dtype=np.int64)).to(Xd.device)
    out = torch.empty(len(ends), dtype=torch.float32, device=Xd.device)
    with torch.inference_mode(), autocast(Xd.device, precision):
        for a in range(0, len(ends), batch_size):
            e = e_all[a : a + batch_size]
            out[a : a + len(e)] = model(Xd[e[:, None] + steps]).float()
    return out


def predict_lstm(model: LSTMSpec, standardizer: Standardizer, X, offsets, ends=None, *, seq_len: int,
                 batch_size: int = 4096, device="auto", amp="auto") -> np.ndarray:
    """float32 [rows] P(label = 1): at the rows of `ends` (default all rows) that end a full
    sequence (make_sequences on the standardised X), NaN elsewhere.

    The model is moved to `device` and left in eval mode; on GPU the forward runs under
    autocast (bf16 when supported, else fp16; amp=False for fp32)."""
    dev = resolve_device(device)
    precision = resolve_precision(amp, dev)
    Xs = standardizer.transform(as_features(X))
    full = make_sequences(Xs, offsets, seq_len)
    if ends is not None:
        full = full[np.isin(full, np.asarray(ends, dtype=np.int64))]
    out = np.full(Xs.shape[0], np.nan, dtype=np.float32)
    if full.size:
        model.to(dev)
        logits = forward_windows(model, torch.from_numpy(Xs).to(dev), full, seq_len, batch_size, precision)
        out[full] = torch.sigmoid(logits).cpu().numpy()
    return out


# ----------------------------------------------------------------------------- out of fold


@dataclass
class FoldRecord:
    fold: int
    train_ends: np.ndarray  # end rows of the sequences this fold's model trained on
    scored_rows: np.ndarray  # rows this fold's model scored
    best_epoch: int
    history: list[dict]


@dataclass
class OOFResult:
    scores: np.ndarray  # float32 [rows], NaN where unscored
    scored_by: np.ndarray  # int64 [rows]: the fold whose model scored the row, -1 if none
    folds: list[FoldRecord]


def purge_zone(folds: np.ndarray, offsets: np.ndarray, fold: int, purge: int) -> np.ndarray:
    """bool [rows]: the rows of `fold` and every row within `purge` rows of one of them in the same symbol."""
    rows = folds.shape[0]
    inside = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(folds == fold, out=inside[1:])
    r = np.arange(rows, dtype=np.int64)
    sym_start = row_symbol_start(offsets)
    sym_end = np.repeat(offsets[1:], np.diff(offsets))  # one past the symbol's last row
    lo = np.maximum(r - purge, sym_start)
    hi = np.minimum(r + purge + 1, sym_end)
    return inside[hi] - inside[lo] > 0


def out_of_fold_scores(X, y, offsets, folds, *, purge: int, seq_len: int = 64, epochs: int = 5,
                       **train_kwargs) -> OOFResult:
    """LSTM scores for rows from models that never saw them (the meta model's spec_lstm_score).

    folds: int [rows]; k >= 0 assigns the row to fold k, -1 = unused (never a target, never
    scored; it may still be past context inside a window). For each fold k, the zone Z_k is
    fold k's rows plus `purge` rows before and after each of them within the same symbol
    (choose purge >= the label horizon, and >= the longest feature lookback to keep features
    of the fold's future prices out too). Fold k's model:
      - standardises on, and trains on sequences ending in, rows with folds >= 0 outside Z_k;
      - every training window lies wholly outside Z_k (so it saw neither the fold's labels nor
        its features nor the purge rows);
      - has no validation set: it trains `epochs` epochs (pick them from a train_lstm run with
        a time split; early stopping on fold k would select on the rows being scored);
      - then scores the rows of fold k that end a full sequence (windows may reach back into
        other folds: that is past input, not a label).
    train_kwargs go to train_lstm (hidden, batch_size, lr, device, seed, max_steps, ...)."""
    X = as_features(X)
    rows = X.shape[0]
    off = check_offsets(offsets, rows)
    folds = np.asarray(folds, dtype=np.int64)
    if folds.shape != (rows,):
        raise ValueError(f"folds must have shape ({rows},), got {folds.shape}")
    scores = np.full(rows, np.nan, dtype=np.float32)
    scored_by = np.full(rows, -1, dtype=np.int64)
    records, no_val = [], np.zeros(rows, dtype=bool)
    predict_kw = {k: train_kwargs[k] for k in ("device", "amp") if k in train_kwargs}
    for k in np.unique(folds[folds >= 0]):
        zone = purge_zone(folds, off, int(k), purge)
        res = train_lstm(X, y, off, (folds >= 0) & ~zone, no_val, seq_len=seq_len, epochs=epochs,
                         valid_mask=~zone, **train_kwargs)
        p = predict_lstm(res.model, res.standardizer, X, off, np.flatnonzero(folds == k), seq_len=seq_len, **predict_kw)
        hit = np.flatnonzero(np.isfinite(p))
        scores[hit], scored_by[hit] = p[hit], k
        records.append(FoldRecord(fold=int(k), train_ends=res.train_ends, scored_rows=hit, best_epoch=res.best_epoch,
                                  history=res.history))
    return OOFResult(scores=scores, scored_by=scored_by, folds=records)
