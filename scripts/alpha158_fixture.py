"""Build the Alpha158 parity fixture from Qlib's own expression engine.

    python scripts/alpha158_fixture.py [--out tests/kernels/data/alpha158_reference.npz]

Makes (once) a throwaway virtualenv under /tmp with pyqlib and what its expression engine
imports (`qlib_python()`), writes Qlib's bin layout (calendars/day.txt, instruments/all.txt,
features/<inst>/<field>.day.bin: float32 little-endian, leading start index) for the fixture
series, asks Qlib (`D.features` with `Alpha158DL.get_feature_config()`) for the 158
expressions in a subprocess running that virtualenv, and writes the committed fixture: the
float32 inputs Qlib was fed, the symbol offsets and Qlib's 158 float32 columns.

Series: GOOG daily bars shipped with the `backtesting` package (500 rows, real data), and a
synthetic series that starts 50 sessions later (a non-zero bin start index) with a flat
stretch (open = high = low = close and a constant volume: zero std, repeated closes), a
stretch of repeated closes under moving highs and lows, a 3-session gap (NaN rows, as a
missing day is in Qlib's dense bin layout), two sessions whose volume alone is missing (the
correlations' pairwise masks) and a session with zero volume (divisions by zero: inf, NaN).

The same module is the worker (`--qlib-worker ROOT OUT`) and is imported by
benchmarks/bench_alpha158.py for `qlib_python()`, `write_qlib_bins()` and `run_qlib()`;
it imports nothing from the project, so it runs under the throwaway interpreter too.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

FIELDS = ("open", "high", "low", "close", "volume", "vwap")
ENV_DIR = Path(os.environ.get("TRADELAB_QLIB_ENV", "/tmp/tradelab-qlib-env"))
# pyqlib's expression engine and what `import qlib` / qlib.data pull in; pandas 2.2 (Qlib's
# Cython and pandas calls predate pandas 3), numpy 1.26 (the wheel's Cython build).
QLIB_PACKAGES = ("numpy==1.26.4", "pandas==2.2.3", "pyyaml", "ruamel.yaml", "filelock", "loguru",
                 "pydantic-settings", "joblib", "tqdm", "fire", "dill", "redis", "python-redis-lock", "pymongo",
                 "requests", "packaging", "scipy")
QLIB_VERSION = "pyqlib==0.9.7"
ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "tests" / "kernels" / "data" / "alpha158_reference.npz"


def qlib_python(env_dir: Path = ENV_DIR, packages: tuple[str, ...] = QLIB_PACKAGES) -> Path:
    """The interpreter of a virtualenv holding pyqlib and `packages` (created on first use, from
    PyPI; made again where an installed version differs from a `name==version` pin)."""
    py = env_dir / "bin" / "python"
    pins = dict(p.split("==") for p in (QLIB_VERSION, *packages) if "==" in p)
    check = ("import importlib.metadata as m, json, sys; from qlib.data import D; "
             "pins = json.loads(sys.argv[1]); sys.exit(any(m.version(k) != v for k, v in pins.items()))")
    if py.exists() and subprocess.run([str(py), "-c", check, json.dumps(pins)], capture_output=True).returncode == 0:
        return py
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(env_dir)], check=True)
    pip = [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, "--no-deps", QLIB_VERSION], check=True)
    subprocess.run([*pip, *packages], check=True)
    return py


def write_qlib_bins(root: Path, calendar: list[str], symbols: dict[str, tuple[int, dict[str, np.ndarray]]],
                    market: str = "all") -> None:
    """Qlib's bin layout under root: symbols maps name -> (start index in calendar, arrays),
    one `<field>.day.bin` per array (e.g. FIELDS, or a `factor`); `instruments/<market>.txt`
    gives each name the span of its arrays. Also the fixture of the `qlib` source's tests
    (tests/domain/sources/test_qlib.py)."""
    (root / "calendars").mkdir(parents=True, exist_ok=True)
    (root / "instruments").mkdir(parents=True, exist_ok=True)
    (root / "calendars" / "day.txt").write_text("\n".join(calendar) + "\n")
    lines = []
    for name, (start, arrays) in symbols.items():
        n = len(arrays["close"])
        lines.append(f"{name}\t{calendar[start]}\t{calendar[start + n - 1]}")
        folder = root / "features" / name.lower()
        folder.mkdir(parents=True, exist_ok=True)
        for field, values in arrays.items():
            values = np.asarray(values, dtype=np.float32)
            np.hstack([[start], values]).astype("<f").tofile(folder / f"{field}.day.bin")
    (root / "instruments" / f"{market}.txt").write_text("\n".join(lines) + "\n")


def qlib_worker(root: str, out: str, kernels: int = 1) -> None:
    """Run under the pyqlib interpreter: Qlib's 158 Alpha158 columns for every instrument."""
    import pandas as pd
    import qlib
    from qlib.config import C
    from qlib.contrib.data.loader import Alpha158DL
    from qlib.data import D
    from qlib.data.data import register_all_wrappers
    from qlib.data.ops import register_all_ops

    # qlib.init() minus its experiment recorder (which imports mlflow): the same config and
    # the same registration of the operators and data providers the expression engine uses.
    C.set("client", provider_uri=root, region="us", expression_cache=None, dataset_cache=None, kernels=kernels,
          logging_level="WARNING")
    register_all_ops(C)
    register_all_wrappers(C)
    C._registered = True  # what C.register() sets last; worker processes then skip re-registering
    fields, names = Alpha158DL.get_feature_config()
    calendar = [str(d.date()) for d in D.calendar(freq="day")]
    instruments = D.list_instruments(D.instruments("all"), as_list=True)
    t0, c0 = time.perf_counter(), time.process_time()
    df = D.features(instruments, fields, start_time=calendar[0], end_time=calendar[-1], freq="day")
    seconds, cpu_seconds = time.perf_counter() - t0, time.process_time() - c0
    df.columns = names
    result = {"names": np.array(names), "fields": np.array(fields), "seconds": np.float64(seconds),
              "cpu_seconds": np.float64(cpu_seconds),
              "rows": np.int64(len(df)), "pandas": np.array(pd.__version__), "qlib": np.array(qlib.__version__)}
    for inst in instruments:
        part = df.xs(inst, level="instrument").sort_index()
        result[f"ref_{inst}"] = part.to_numpy(dtype=np.float32).T
        result[f"dates_{inst}"] = np.array([str(d.date()) for d in part.index])
    np.savez(out, **result)


def run_qlib(root: Path, kernels: int = 1, python: Path | None = None) -> dict:
    """Qlib's columns for the bins under root, computed by the pyqlib interpreter (`python`,
    by default qlib_python()'s)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "qlib.npz"
        subprocess.run([str(python or qlib_python()), __file__, "--qlib-worker", str(root), str(out), str(kernels)],
                       check=True, env={**os.environ, "PYTHONPATH": ""})
        with np.load(out) as z:
            return {k: z[k] for k in z.files}


def fixture_series() -> tuple[list[str], dict[str, tuple[int, dict[str, np.ndarray]]]]:
    """The calendar (GOOG's first 500 sessions) and the two fixture symbols (float32)."""
    from backtesting.test import GOOG

    goog = GOOG.iloc[:500]
    calendar = [str(d.date()) for d in goog.index]
    g = {"open": goog["Open"], "high": goog["High"], "low": goog["Low"], "close": goog["Close"],
         "volume": goog["Volume"]}
    g = {k: np.asarray(v, dtype=np.float32) for k, v in g.items()}
    g["vwap"] = ((g["high"].astype(np.float64) + g["low"] + g["close"]) / 3).astype(np.float32)

    rng = np.random.default_rng(158)
    n = 300
    close = 20 + np.cumsum(rng.normal(0, 0.3, n))
    close[80:150] = close[79]  # flat stretch: open = high = low = close, constant volume
    close[180:200] = close[179]  # repeated closes under moving highs and lows
    open_ = np.r_[close[0], close[:-1]] + rng.normal(0, 0.05, n)
    high = np.maximum(open_, close) + np.abs(rng.normal(0, 0.2, n))
    low = np.minimum(open_, close) - np.abs(rng.normal(0, 0.2, n))
    volume = np.round(rng.uniform(1e5, 1e6, n))
    open_[80:150] = high[80:150] = low[80:150] = close[80:150]
    volume[80:150] = 5e5
    s = {"open": open_, "high": high, "low": low, "close": close, "volume": volume,
         "vwap": (high + low + close) / 3}
    s = {k: np.asarray(v, dtype=np.float32) for k, v in s.items()}
    for v in s.values():
        v[240:243] = np.nan  # a 3-session gap
    s["volume"][260:262] = np.nan  # volume missing on two sessions that have prices
    s["volume"][275] = 0  # a session without trades: v / Ref(v, 1) divides by zero next session
    return calendar, {"GOOG": (0, g), "SYN": (50, s)}


def build_fixture(out: Path = DEFAULT_OUT) -> None:
    calendar, symbols = fixture_series()
    with tempfile.TemporaryDirectory() as tmp:
        write_qlib_bins(Path(tmp), calendar, symbols)
        ref = run_qlib(Path(tmp))
    names = list(symbols)
    lengths = [len(symbols[s][1]["close"]) for s in names]
    for s, length in zip(names, lengths):
        assert ref[f"ref_{s}"].shape == (158, length), (s, ref[f"ref_{s}"].shape)
    payload = {f: np.concatenate([symbols[s][1][f] for s in names]) for f in FIELDS}
    payload.update(
        offsets=np.r_[0, np.cumsum(lengths)].astype(np.int64),
        symbols=np.array(names),
        names=ref["names"],
        fields=ref["fields"],
        reference=np.concatenate([ref[f"ref_{s}"] for s in names], axis=1),
        provenance=np.array(json.dumps({"qlib": str(ref["qlib"]), "pandas": str(ref["pandas"]),
                                        "script": "scripts/alpha158_fixture.py"})),
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out, **payload)
    print(f"wrote {out} ({out.stat().st_size} bytes): {payload['reference'].shape[1]} rows x 158 columns")


def main(argv=None) -> None:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["--qlib-worker"]:
        qlib_worker(argv[1], argv[2], int(argv[3]) if len(argv) > 3 else 1)
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    build_fixture(parser.parse_args(argv).out)


if __name__ == "__main__":
    main()
