"""The project's settings: `dagster_project.yaml`, validated by one model.

Leaf module: imports nothing from the project, so every layer may read the settings.

`load_settings()` reads `$PIPELINE_CONFIG` (default: `dagster_project.yaml` in the project
root) with `$PIPELINE_CONFIG_OVERRIDES` over it (JSON: a command's `--experiment`, inherited by
the processes it starts; nothing written), validates it once and caches the result. Any wrong key, type or value stops with one
`SettingsError` naming the file, the key and what is allowed. Relative paths resolve against
the settings file's folder.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
import os
import re
from pathlib import Path
from typing import Annotated, Literal, Union

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    TypeAdapter,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CONFIG = PROJECT_ROOT / "dagster_project.yaml"
CONFIG_ENV = "PIPELINE_CONFIG"
# JSON of a nested mapping applied over the file in force (and only over it): the settings a
# command derives for itself and the processes it starts (pipeline.cli.experiments), carried in
# the environment so that no file outlives the command, whatever kills it.
OVERRIDES_ENV = "PIPELINE_CONFIG_OVERRIDES"

SYMBOL_PATTERN = re.compile(r"^[A-Z0-9._-]{1,16}$")
EXPERIMENT_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
# Report folders are named as the assets are (reports/<experiment>/<stage>/); a stage's
# per-materialization sidecars (domain.observe) go to its `runs/` subfolder.
STAGE_DIRS = ("raw_bars", "features", "labels", "specialists", "regime", "cv_report", "meta_model", "predictions",
              "backtest", "evaluation", "paper_trades", "lstm_model", "atc_scan", "market_data", "trade_log",
              "grid_search", "strategy_search")
# Report folders of the layout before experiments whose name was not the asset's
# (pipeline migrate-reports moves them); no experiment may take a stage's or these names.
LEGACY_REPORT_DIRS = {"eval": "evaluation", "cv": "cv_report", "meta": "meta_model", "paper": "paper_trades"}
# The tables that depend on an experiment's models (pipeline.cli.experiments): stored per
# experiment under paths.data/experiments/<experiment>/; every other table is shared.
EXPERIMENT_TABLES = ("lstm_model", "cv_report", "meta_model", "predictions", "backtest", "evaluation")


class SettingsError(ValueError):
    """A settings file that cannot be used, with the key and what is allowed."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Paths(_Model):
    data: Path = Field(Path("data"), description=(
        'a Delta Lake table per asset: `data/<asset>/` (partitioned by year; see "Storage")'
    ))
    reports: Path = Field(Path("reports"), description=(
        'one folder per experiment, one per stage below it, named as the asset: '
        '`reports/<experiment>/<stage>/`; sidecars in `<stage>/runs/<partition>.json`'
    ))
    models: Path = Field(Path("models"), description=(
        'trained models, one folder per experiment: `models/<experiment>/`'
    ))


class Years(_Model):
    start: int = Field(2000, ge=1900, le=2100, description='first year partition')
    end: int | None = Field(None, ge=1900, le=2100, description=(
        'last year partition; `null` is the current year (included)'
    ))

    @model_validator(mode="after")
    def _ordered(self) -> "Years":
        if self.end is not None and self.end < self.start:
            raise ValueError(f"end ({self.end}) must be >= start ({self.start})")
        if self.start > dt.date.today().year:
            raise ValueError(f"start ({self.start}) is after this year ({dt.date.today().year}): no bar exists yet")
        return self

    @property
    def last(self) -> int:
        return self.end if self.end is not None else dt.date.today().year

    def all(self) -> list[int]:
        return list(range(self.start, self.last + 1))


def _check_symbols(names: list[str]) -> list[str]:
    if not names:
        raise ValueError("an empty list names no symbol: give at least one, or leave the key out")
    for name in names:
        if not SYMBOL_PATTERN.fullmatch(name):
            raise ValueError(f"symbol {name!r} does not match [A-Z0-9._-]{{1,16}}")
    if len(set(names)) != len(names):
        raise ValueError("symbols must be unique")
    return names


class PlantedSignal(_Model):
    """`universe.synthetic.planted`: a known, recoverable signal planted in the synthetic
    market (domain.sources.synthetic). strength 0 (the default) plants nothing: the market
    is then byte for byte the one without this key."""
    strength: float = Field(0.0, ge=0.0, le=5.0, description=(
        "the planted daily drift per unit of signal, in the symbol's daily volatilities (>= 0); `0` plants "
        'nothing: the market is then byte for byte the one without the key. The shipped '
        '`dagster_project.yaml` sets a modest `0.1` so that `make demo` has something to find'
    ))
    kind: Literal["linear", "nonlinear"] = Field("linear", description=(
        '`linear`: reversal on the RSI(14) score (any model can use it); `nonlinear`: momentum inside a band '
        'of the score, reversal outside it (only a non-linear model can use it, e.g. `meta.model: hist_gbm`)'
    ))
    horizon: int = Field(7, ge=1, le=252, description=(
        "trading days after day t whose returns day t's signal moves (one of `labels.horizons` to line up "
        'with a label)'
    ))


class SyntheticSource(_Model):
    symbols: Union[Annotated[int, Field(ge=1, le=100_000)], list[str]] = Field(8, description=(
        'a count (names `SYN000`, `SYN001`, ...) or a list of names'
    ))
    seed: int = Field(7, ge=0, description='the seed: same seed, same bytes')
    end_date: dt.date | None = Field(None, description=(
        'last generated session (`YYYY-MM-DD`); `null` is today'
    ))
    planted: PlantedSignal = Field(PlantedSignal(), description=(
        'a known signal planted in the synthetic market (see "Planted signal" below)'
    ))

    @field_validator("symbols")
    @classmethod
    def _names(cls, v):
        return v if isinstance(v, int) else _check_symbols(v)

    def symbol_names(self) -> list[str]:
        if isinstance(self.symbols, int):
            return [f"SYN{i:03d}" for i in range(self.symbols)]
        return list(self.symbols)


class FolderSource(_Model):
    path: Path = Field(Path("user_data"), description='a folder of CSV or Parquet files (see below)')


class PackagedSource(_Model):
    symbols: list[Literal["GOOG", "SP500", "NASDAQ"]] = Field(["GOOG", "SP500", "NASDAQ"], min_length=1, description=(
        'GOOG 2004-2013 (`backtesting.test`), S&P 500 and NASDAQ 1999-2018 (`arch.data`)'
    ))


MARKET_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class QlibSource(_Model):
    """`universe.qlib`: a Qlib data folder read as it is (domain.sources.qlib)."""
    provider_uri: Path = Field(Path("qlib_data"), description=(
        "Qlib's data folder (what `qlib.init(provider_uri=...)` is given): `calendars/day.txt`, "
        '`instruments/<market>.txt`, `features/<symbol>/<field>.day.bin` (see "Bring your own data"); a leading `~` '
        "is the user's home, as in Qlib"
    ))
    market: str = Field("all", description=(
        'the instruments file `instruments/<market>.txt` (`all`, `csi300`, `sp500`, ...): its symbols, and each '
        "symbol's bars only inside that file's date ranges"
    ))
    adjusted: bool = Field(True, description=(
        "`true`: Qlib's `$open $high $low $close $volume` as stored (Qlib's adjusted prices and volume; `$factor` "
        'is not read); `false`: the traded prices, each of `$open $high $low $close` divided by `$factor` and '
        '`$volume` multiplied by it (Qlib stores adjusted price = traded price x `$factor`, adjusted volume = '
        'traded volume / `$factor`)'
    ))

    @field_validator("provider_uri")
    @classmethod
    def _home(cls, v: Path) -> Path:
        return v.expanduser()

    @field_validator("market")
    @classmethod
    def _market(cls, v: str) -> str:
        if not MARKET_PATTERN.fullmatch(v):
            raise ValueError(f"{v!r} is not an instruments file name; expected the name of instruments/<market>.txt "
                             "without .txt (1-64 letters, digits, '.', '_' or '-'), e.g. all or csi300")
        return v


class Universe(_Model):
    source: Literal["synthetic", "folder", "packaged", "qlib"] = Field("synthetic", description=(
        '`synthetic`, `folder`, `packaged` or `qlib`'
    ))
    synthetic: SyntheticSource = Field(SyntheticSource(), description='the built-in synthetic market')
    folder: FolderSource = Field(FolderSource(), description="the user's own files")
    packaged: PackagedSource = Field(PackagedSource(), description=(
        'real daily prices shipped inside installed packages'
    ))
    qlib: QlibSource = Field(QlibSource(), description="a Qlib data folder (Qlib's bin layout)")


class Ingest(_Model):
    """`ingest`: how daily bars are judged on the way in (domain.sources.conform and the
    raw_bars checks). A daily bar's date is an exchange session of `calendar`: other dates
    are a warning (check exchange_sessions), or refused with `strict`."""
    calendar: str = Field("XNYS", description=(
        'the `exchange_calendars` calendar whose sessions the bar dates must be'
    ))
    strict: bool = Field(False, description=(
        'refuse a file with a date that is not a session (CLI `--strict`); otherwise the check '
        '`exchange_sessions` warns'
    ))
    # intraday rows (several times on one date): refused ("none"), or built into daily bars
    resample: Literal["none", "daily"] = Field("none", description=(
        '`daily`: build daily OHLCV bars from intraday rows (first open, max high, min low, last close, '
        'summed volume); `none`: refuse them'
    ))
    # check plausible_moves warns when a close differs from the previous one by more than this
    # factor either way (1.5: up 50% or down 33%); an unadjusted 2:1 split is a factor 2
    max_move: float = Field(1.5, gt=1.0, description=(
        'the check `plausible_moves` warns when a close moves by more than this factor from the previous one '
        '(unadjusted splits, spikes)'
    ))

    @field_validator("calendar")
    @classmethod
    def _known(cls, v):
        import exchange_calendars  # only when the key is set (defaults are not validated)

        if v not in exchange_calendars.get_calendar_names():
            raise ValueError(f"{v!r} is not an exchange_calendars name (e.g. XNYS, XLON, XTKS)")
        return v


class Demo(_Model):
    symbols: list[str] | None = Field(None, description='symbols; `null` is every symbol of the source')
    years: list[int] | None = Field(None, description='years; `null` is every configured year')

    @field_validator("symbols")
    @classmethod
    def _names(cls, v):
        return v if v is None else _check_symbols(v)


class Labels(_Model):
    horizons: list[Annotated[int, Field(ge=1, le=252)]] = Field([3, 7, 14], description=(
        'horizons in trading rows'
    ))
    thresholds: dict[int, float] = Field({3: 0.0, 7: 0.0, 14: 0.0}, description=(
        '`label_bin_h{H}` is 1 when the H-row return exceeds this (one per horizon)'
    ))

    @model_validator(mode="after")
    def _one_threshold_per_horizon(self) -> "Labels":
        if not self.horizons or len(set(self.horizons)) != len(self.horizons):
            raise ValueError("horizons must be a non-empty list of distinct trading-row counts")
        if set(self.thresholds) != set(self.horizons):
            raise ValueError(
                f"thresholds must have exactly one entry per horizon {sorted(self.horizons)}, "
                f"got keys {sorted(self.thresholds)}"
            )
        return self


class Halo(_Model):
    years: int = Field(2, ge=1, le=10, description=(
        'upstream years before Y read by `features`; 2 keeps every feature within rtol 1e-4 of the '
        'whole-history result (1 is not enough for ATR28-based `f_vol_ratio`)'
    ))


class Build(_Model):
    workers: int | None = Field(None, ge=1, le=512, description=(
        'worker processes over symbol chunks; `null` is one per core'
    ))
    chunk_rows: int = Field(131_072, ge=1_000, description=(
        'rows per chunk (whole symbols), sized to stay in the CPU cache'
    ))
    executor: Literal["thread", "process"] = Field("thread", description=(
        "`thread` (the numba kernels release the GIL: no copies) or `process` (a process pool; each chunk's "
        'arrays are sent to the worker)'
    ))
    stream_chunk_mb: int = Field(128, ge=8, le=65_536, description=(
        'memory for one chunk of a symbol x year stage\'s output: `features`, `labels` and `specialists` compute and write about this many '
        'MB of rows at a time (whole symbols) and commit the run once, so peak memory follows the chunk, not '
        'the universe'
    ))

    def worker_count(self) -> int:
        return self.workers or (os.cpu_count() or 1)

    def stream_rows(self, bytes_per_row: int) -> int:
        """Input rows per streamed chunk for output rows of `bytes_per_row` bytes."""
        return max(1, self.stream_chunk_mb * 2**20 // max(1, bytes_per_row))


class ATC(_Model):
    robustness: Literal["Narrow", "Medium", "Wide"] = Field("Medium", description=(
        'length offsets: `Narrow` {1,2,3,4}, `Medium` {1,2,4,6}, `Wide` {1,3,5,7}'
    ))
    length: int = Field(28, ge=3, le=1000, description='base MA length L of every family')
    # lam, decay, cutout as typed in the Pine script's inputs (kernels.atc scales lam/1000, decay/100)
    lam: float = Field(0.02, ge=0.0, le=1.0, description=(
        "the script's Lambda: returns in the equity curves are scaled by exp(lam/1000 * (bar - cutout)), bar "
        '= 0-based index in the series ATC runs over (the whole history for the specialist, the scanned bars '
        'for `atc_scan`); 0 to 1'
    ))
    decay: float = Field(0.03, ge=0.0, le=10.0, description=(
        "the script's Decay, in percent: every equity curve is multiplied by 1 - decay/100 each bar; 0 to 10"
    ))
    cutout: int = Field(0, ge=0, description=(
        "the script's CutOut: bars before the equity curves start; ATC and its family signals are NaN there; "
        '>= 0 and < `atc.scan_bars`'
    ))
    scan_bars: int = Field(2000, ge=50, description='`atc_scan` reads the last N bars of each symbol')
    chunk_symbols: int = Field(512, ge=1, description='symbols per batched chunk (bounds memory)')
    cache: bool = Field(False, description=(
        'cache MA results by (series hash, MA type, length); hits and misses in the metadata'
    ))

    @model_validator(mode="after")
    def _cutout_inside_the_scan(self) -> "ATC":
        if self.cutout >= self.scan_bars:
            raise ValueError(f"cutout ({self.cutout}) must be < scan_bars ({self.scan_bars}): every scanned value would be NaN")
        return self

    def specialist_params(self) -> tuple[tuple[str, object], ...]:
        """The parameters the `atc` specialist (and the live path's stream of it) runs with, as
        (name, value) pairs: the same as the scanner's, so the stored `spec_atc_score` equals
        the scan on the same bars (scan_bars, chunk_symbols and cache are the scanner's own)."""
        return tuple((k, getattr(self, k)) for k in ("robustness", "length", "lam", "decay", "cutout"))


class Regime(_Model):
    index_symbol: str | None = Field(None, description=(
        '`null`: an equal-weight index of the universe; a symbol (e.g. `SP500`): its close is the index'
    ))

    @field_validator("index_symbol")
    @classmethod
    def _name(cls, v):
        return v if v is None else _check_symbols([v])[0]


class CV(_Model):
    n_splits: int = Field(5, ge=2, le=50, description='folds (contiguous in time)')
    embargo_days: int = Field(5, ge=0, description=(
        'calendar days after each test window also removed from training'
    ))
    max_rows: int | None = Field(500_000, ge=1_000, description=(
        "`cv_report` cross-validates at most this many of the rows known by the year (per horizon), a seeded "
        "uniform sample over every year and symbol; `null`: every row (the cost grows with symbols x years^2)"
    ))


class LSTMSettings(_Model):
    horizon: int = Field(7, ge=1, description='label horizon it predicts')
    seq_len: int = Field(32, ge=2, description='rows per sequence (within one symbol)')
    hidden: int = Field(32, ge=1, description="LSTM width (128 suits a GPU)")
    layers: int = Field(2, ge=1, description='LSTM layers')
    epochs: int = Field(3, ge=1, description='epochs per year')
    batch_size: int = Field(256, ge=1, description='sequences per step')
    max_steps: int | None = Field(300, ge=1, description=(
        'cap on training steps per year; `null` for full epochs'
    ))
    patience: int = Field(2, ge=1, description='early stopping on the validation block')
    val_days: int = Field(91, ge=1, description='calendar days of validation before each year, purged')
    seed: int = Field(0, ge=0, description=(
        'seed of the weight init and batch order (the same seed gives the same model)'
    ))


MODULE_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


class FeatureSettings(_Model):
    """Which feature packs fill the `features` and `specialists` tables
    (kernels.registry.packs): built-in `packs` (core, alpha158) and the packs of the plugin
    modules named in `plugins` (imported by name from sys.path; domain.feature_packs
    resolves them and refuses unknown packs and unusable plugins)."""

    packs: list[str] = Field(default_factory=lambda: ["core"], min_length=1, description=(
        'built-in packs: `core` (the 19 `f_*` features and the four specialists, unchanged) and `alpha158` '
        "(Qlib's Alpha158: 158 `a158_<QlibName>` columns from one batch call over open, high, low, close, "
        "volume and vwap; vwap is the source's `vwap` column, else the typical price (high + low + close) / "
        '3)'
    ))
    plugins: list[str] = Field(default_factory=list, description=(
        'plugin modules (dotted names, found in `plugin_paths`, else on `sys.path`) whose `PACKS` are '
        'added to the selection; see "Features: packs and plugins"'
    ))
    plugin_paths: list[Path] = Field(default_factory=list, description=(
        'folders holding the plugin modules (relative to the settings file\'s folder), put first on '
        '`sys.path` before a plugin is imported in every process (CLI, `dagster dev`, `dagster asset '
        'materialize`, workers): no `PYTHONPATH` needed'
    ))

    @field_validator("packs", "plugins")
    @classmethod
    def _names(cls, v: list[str]) -> list[str]:
        bad = [n for n in v if not MODULE_PATTERN.fullmatch(n)]
        if bad:
            raise ValueError(f"{bad[0]!r} is not a pack or module name (letters, digits, _ and dots)")
        if len(set(v)) != len(v):
            raise ValueError(f"a name is listed twice: {sorted(n for n in set(v) if v.count(n) > 1)}")
        return v

    def plugin_folders(self, root: Path) -> tuple[str, ...]:
        """`plugin_paths` as absolute folder names, relative ones against `root` (the settings
        file's folder), in order and without repeats: what kernels.registry.packs.select
        puts first on sys.path."""
        out: list[str] = []
        for p in self.plugin_paths:
            text = str(p if p.is_absolute() else (root / p).resolve())
            if text not in out:
                out.append(text)
        return tuple(out)


class LightGBMParams(_Model):
    """LightGBM's hyperparameters of `meta.model: lightgbm` (the defaults: the model before
    they were settings)."""
    n_estimators: int = Field(300, ge=1, le=100_000, description='boosting rounds (trees)')
    learning_rate: float = Field(0.05, gt=0.0, le=1.0, description='shrinkage of each tree')
    num_leaves: int = Field(15, ge=2, le=131_072, description='leaves per tree')
    min_data_in_leaf: int = Field(100, ge=1, description="rows a leaf needs at least (LightGBM's min_child_samples)")
    feature_fraction: float = Field(1.0, gt=0.0, le=1.0, description=(
        "the share of columns each tree draws (LightGBM's colsample_bytree; seeded by meta.seed)"))
    bagging_fraction: float = Field(1.0, gt=0.0, le=1.0, description=(
        "the share of rows each tree draws (LightGBM's subsample, every tree); 1: GOSS sampling as before, "
        "below 1: bagging instead (the two do not combine)"))
    lambda_l2: float = Field(1.0, ge=0.0, description="L2 regularisation of the leaf values (LightGBM's reg_lambda)")
    lambda_l1: float = Field(0.0, ge=0.0, description="L1 regularisation of the leaf values (LightGBM's reg_alpha)")
    max_bin: int = Field(255, ge=2, le=65_535, description=(
        "histogram bins per column (LightGBM's max_bin): fewer bins build each tree's histograms faster and "
        "split more coarsely"))
    shared_bins: bool = Field(False, description=(
        "bin the columns once per fit and train every calibrated copy on that binned data (LightGBM's "
        "Dataset.subset) instead of binning again per copy: the same copies, folds and calibration, bin "
        "edges from all the fit's training rows (no label used), so close to but not equal to the "
        "default's trees; saves most of a copy's fixed cost (domain/learning/lightgbm_copies.py)"))

    def estimator_params(self) -> dict:
        """The LGBMClassifier keyword arguments these settings set (and `shared_bins` when on:
        how the copies are fitted, read by train_meta)."""
        out = {"n_estimators": self.n_estimators, "learning_rate": self.learning_rate, "num_leaves": self.num_leaves,
               "min_child_samples": self.min_data_in_leaf, "colsample_bytree": self.feature_fraction,
               "reg_lambda": self.lambda_l2, "reg_alpha": self.lambda_l1}
        if self.max_bin != 255:  # LightGBM's own default: the parameters (and hashes) of before when unset
            out["max_bin"] = self.max_bin
        if self.shared_bins:  # not LightGBM's: domain.learning.metamodel.train_meta takes it out
            out["shared_bins"] = True
        if self.bagging_fraction < 1.0:
            out |= {"data_sample_strategy": "bagging", "subsample": self.bagging_fraction, "subsample_freq": 1}
        return out


class HistGBMParams(_Model):
    """scikit-learn HistGradientBoosting's hyperparameters of `meta.model: hist_gbm` (the
    defaults: the model before they were settings)."""
    max_iter: int = Field(200, ge=1, le=100_000, description='boosting iterations (trees)')
    learning_rate: float = Field(0.05, gt=0.0, le=1.0, description='shrinkage of each tree')
    max_leaf_nodes: int = Field(15, ge=2, le=131_072, description='leaves per tree')
    min_samples_leaf: int = Field(100, ge=1, description='rows a leaf needs at least')
    l2_regularization: float = Field(1.0, ge=0.0, description='L2 regularisation of the leaf values')
    max_features: float = Field(1.0, gt=0.0, le=1.0, description='the share of columns each split considers')

    def estimator_params(self) -> dict:
        """The HistGradientBoostingClassifier keyword arguments these settings set."""
        return self.model_dump()


class MetaSettings(_Model):
    model: Literal["logistic", "hist_gbm", "lightgbm"] = Field("logistic", description=(
        "`logistic` (logistic regression), `hist_gbm` (scikit-learn's HistGradientBoosting trees: non-linear, "
        'no extra) or `lightgbm` (LightGBM: in the `dev` extra, or the `lightgbm` extra alone)'
    ))
    calibration: Literal["isotonic", "sigmoid"] = Field("isotonic", description=(
        '`isotonic` or `sigmoid` (Platt scaling, as sklearn names it; `platt` is refused), fitted on purged folds'
    ))
    horizons: list[int] | None = Field(None, description=(
        'the horizons to train (`train-meta --horizon 7`); `null` = every `labels.horizons`'
    ))
    # specialists: the specialist scores, the LSTM score when present, the regime one-hot;
    # features+specialists: those and the feature registry's columns (the `features` table);
    # a list: exactly the column groups it names (specialists, lstm, regime, pack names)
    inputs: Union[Literal["specialists", "features+specialists"], list[str]] = Field("specialists", description=(
        "the meta model's columns: `specialists` (the specialist scores, the LSTM score when present, the "
        "regime one-hot), `features+specialists` (those and the `core` pack's `f_*` columns), or a list of the "
        "column groups the model gets, nothing else: `specialists` (the scores), `lstm` (the LSTM score, used "
        "when it covers half the training rows), `regime` (the regime one-hot) and selected pack names (their "
        "feature columns), e.g. `[alpha158]` (Alpha158 alone) or `[specialists, lstm, regime, alpha158]` "
        "(`configs/alpha158_lightgbm.yaml`: LightGBM over alpha158)"
    ))
    missing: Literal["auto", "native", "fill", "drop"] = Field("auto", description=(
        "rows with a missing input value (a close-only symbol's volume features, a warm-up): `native` passes "
        "them as they are to a model that handles NaN (`hist_gbm`, `lightgbm`), `fill` replaces each column's "
        "missing values by its median over the training rows (learned on the training years only, stored with "
        "the model), `drop` leaves the rows out; `auto`: `native` for the tree models, `fill` for `logistic`. "
        "A row without any input value (the specialists' warm-up) is left out whatever the choice"
    ))
    lightgbm: LightGBMParams = Field(LightGBMParams(), description=(
        "LightGBM's hyperparameters (with `meta.model: lightgbm`)"))
    hist_gbm: HistGBMParams = Field(HistGBMParams(), description=(
        "HistGradientBoosting's hyperparameters (with `meta.model: hist_gbm`)"))
    calibration_copies: int | None = Field(None, ge=1, le=50, description=(
        "the calibrated copies each yearly model averages: `null` (default) one per purged fold (`cv.n_splits`, "
        "each copy's trees fitted on the other folds, its calibrator on its own fold); k below that: only the "
        "copies of the last k folds (the latest held-out blocks), k/n_splits of the fits. With `lightgbm` these fits "
        "are most of the stage's time: 2 of 5 copies took 2.9x less, 1 copy 6x less, but the rank IC fell "
        "(0.071 to 0.057 and 0.053 on a 12-symbol planted market: benchmarks/LOG.md, \"Issue 43 item 5\"), "
        "since averaging the copies is itself worth IC; at most `cv.n_splits`"
    ))
    min_coverage: float = Field(0.8, ge=0.0, le=1.0, description=(
        "the share of labelled rows (training and out-of-sample, per year and horizon) the model must use; below "
        "it the stage stops with one line naming the columns that emptied the rows, and stores nothing"
    ))

    @field_validator("inputs")
    @classmethod
    def _input_names(cls, v):
        if isinstance(v, list):
            if not v:
                raise ValueError("an empty list names no input: give specialists, lstm, regime and/or pack names")
            bad = [n for n in v if not MODULE_PATTERN.fullmatch(n)]
            if bad:
                raise ValueError(f"{bad[0]!r} is not a pack name; expected specialists, lstm, regime or pack names "
                                 "such as core, alpha158")
        return v

    @model_validator(mode="after")
    def _missing_fits_model(self):
        if self.missing == "native" and self.model == "logistic":
            raise ValueError("meta.missing: native needs a model that handles missing values (hist_gbm, lightgbm); "
                             "expected fill or drop with meta.model: logistic")
        return self

    def missing_rule(self) -> str:
        """The rule in force: `auto` resolved (`native` for the tree models, `fill` for `logistic`)."""
        if self.missing != "auto":
            return self.missing
        return "fill" if self.model == "logistic" else "native"

    search_rows: int | None = Field(250_000, ge=1_000, description=(
        "the logistic model's C is searched on at most this many training rows (a seeded uniform sample, "
        "the same purged folds); the calibrated fits use every row; `null`: the search uses every row"
    ))
    # random_state of hist_gbm / lightgbm (and of the logistic model's C-search sample;
    # newton-cholesky on unshuffled folds is deterministic); the same seed and data give the same model
    seed: int = Field(0, ge=0, description=(
        "`random_state` of `hist_gbm` and `lightgbm` (LightGBM's GOSS row sampling, the trees' tie-breaks): "
        'the same seed and data give the same model; the logistic model depends on it only through the C '
        "search's sample (more training rows than `search_rows`)"
    ))


class EvaluationSettings(_Model):
    """The evaluation of the out-of-sample predictions (evaluation)."""
    # cross-sectional figures (rank IC, long-short deciles, turnover) use only days with at
    # least this many symbols that have a prediction and a realised return
    min_symbols_per_day: int = Field(5, ge=3, description=(
        'the cross-sectional figures (daily rank IC, ICIR, long-short deciles, turnover) use only days with '
        'at least this many symbols having a prediction and a realised return; the report counts the days '
        'left out (at least 3)'
    ))
    year_figures: bool = Field(False, description=(
        "also draw each year's PNGs (`{plot}_h{H}_{year}.png`); false: only the `overall` scope's, the "
        "figures the asset's metadata shows (a year's JSON keeps its figures' data)"
    ))


# The backtest settings a sweep may vary (backtest.sweep.grid), and those that take integers.
SWEEP_PARAMETERS = ("threshold", "topk", "n_drop", "hold_thresh", "quantile", "max_weight", "max_gross", "fee_bps",
                    "slippage_bps", "open_cost", "close_cost", "min_cost", "max_turnover")
SWEEP_INTEGERS = ("topk", "n_drop", "hold_thresh")
# The figures a sweep's table may be sorted by (kernels.backtest.stats): larger first, except these.
SWEEP_FIGURES = ("sharpe", "cagr", "sortino", "calmar", "total_return", "max_drawdown", "ann_vol", "annual_turnover",
                 "total_costs", "cost_share", "win_rate", "exposure", "trades")
SWEEP_SMALLER_FIRST = ("ann_vol", "annual_turnover", "total_costs", "cost_share", "trades")


class BacktestSweep(_Model):
    """`backtest.sweep`: a grid of backtest parameters run over the same predictions in one pass
    (kernels.backtest.portfolio.run_sweep), with the overfitting guard (domain.backtest_sweep)."""
    grid: dict[str, list[float]] = Field({}, description=(
        'parameter -> values, e.g. `{topk: [10, 20, 50], n_drop: [1, 5], fee_bps: [0, 10]}`: every combination is '
        'a backtest, the other settings as `backtest.*`; parameters: ' + ', '.join(f'`{p}`' for p in SWEEP_PARAMETERS)
        + '; `{}` = no sweep'
    ))
    sort_by: Literal[SWEEP_FIGURES] = Field("sharpe", description=(
        'the figure the table is sorted by, best first (larger first; smaller first for ' +
        ', '.join(f'`{f}`' for f in SWEEP_SMALLER_FIRST) + ')'
    ))
    heatmap: list[str] | None = Field(None, description=(
        'the two grid parameters of the heatmap (x, y; each cell the best `sort_by` over the other parameters); '
        '`null` = the first two with more than one value'
    ))
    top: int = Field(20, ge=1, description='rows of the table printed (the JSON report holds every row)')
    blocks: int = Field(8, ge=2, le=16, description=(
        'CSCV blocks of days for the probability of backtest overfitting (even; C(blocks, blocks/2) splits)'
    ))
    max_points: int = Field(10_000, ge=1, description='a grid with more combinations is refused')

    @model_validator(mode="after")
    def _grid(self) -> "BacktestSweep":
        for name, values in self.grid.items():
            if name not in SWEEP_PARAMETERS:
                raise ValueError(f"backtest.sweep.grid: {name!r} is not a parameter a sweep can vary; expected one of "
                                 f"{', '.join(SWEEP_PARAMETERS)}")
            if not values:
                raise ValueError(f"backtest.sweep.grid.{name}: no value; expected a list of at least one")
            if len(set(values)) != len(values):
                raise ValueError(f"backtest.sweep.grid.{name}: {values} repeats a value; expected distinct values")
            if name in SWEEP_INTEGERS and any(v != int(v) for v in values):
                raise ValueError(f"backtest.sweep.grid.{name}: {values} has a value that is not a whole number")
        points = math.prod(len(v) for v in self.grid.values()) if self.grid else 0
        if points > self.max_points:
            raise ValueError(f"backtest.sweep.grid: {points} combinations, more than backtest.sweep.max_points "
                             f"({self.max_points}); expected a smaller grid or a larger max_points")
        if self.blocks % 2:
            raise ValueError(f"backtest.sweep.blocks: {self.blocks} is odd; expected an even number (CSCV halves them)")
        if self.heatmap is not None:
            if len(self.heatmap) != 2 or len(set(self.heatmap)) != 2:
                raise ValueError(f"backtest.sweep.heatmap: {self.heatmap}; expected two different grid parameters")
            missing = [p for p in self.heatmap if p not in self.grid]
            if missing:
                raise ValueError(f"backtest.sweep.heatmap: {', '.join(missing)} not in backtest.sweep.grid "
                                 f"({', '.join(self.grid) or 'empty'}); expected two of its parameters")
        return self


class BacktestSettings(_Model):
    """Portfolio backtest of the meta model's probabilities (backtest, live_paper_trade)."""
    horizon: int = Field(7, ge=1, description=(
        'the `p_h{H}` that drives the weights; one of `labels.horizons`'
    ))
    strategy: Literal["threshold", "topk_dropout", "long_short"] = Field("threshold", description=(
        '`threshold`: weights proportional to `p - threshold`, re-targeted every close; `topk_dropout`: Qlib\'s '
        'TopkDropoutStrategy (hold the `topk` best-ranked by p, replace at most `n_drop` a day); `long_short`: '
        'the top and bottom `quantile` by p, equal weights, dollar-neutral (docs/learning.md, "Strategies")'
    ))
    threshold: float = Field(0.5, ge=0.0, le=1.0, description=(
        "`threshold` strategy, long only: a symbol's raw weight is `p - threshold` above it"
    ))
    long_short: bool = Field(False, description=(
        "`threshold` strategy: `true` = raw weight `(p - 0.5) * 2` (long and short, symmetric around 0.5); "
        "not the `long_short` strategy"
    ))
    topk: int = Field(50, ge=1, description='`topk_dropout`: symbols held')
    n_drop: int = Field(5, ge=0, description='`topk_dropout`: at most this many held symbols replaced a day (<= `topk`)')
    hold_thresh: int = Field(1, ge=0, description=(
        '`topk_dropout`: sessions a symbol is held before it may be sold (Qlib\'s default 1)'
    ))
    quantile: float = Field(0.2, gt=0.0, le=0.5, description=(
        '`long_short`: the top and bottom quantile of the symbols ranked by p that day (k = floor(quantile * n))'
    ))
    open_cost: float = Field(0.0, ge=0.0, lt=1.0, description=(
        "cost of a buy, a fraction of its value (Qlib's exchange `open_cost`, e.g. 0.0005); on top of the bps"
    ))
    close_cost: float = Field(0.0, ge=0.0, lt=1.0, description=(
        "cost of a sell, a fraction of its value (Qlib's exchange `close_cost`, e.g. 0.0015); on top of the bps"
    ))
    min_cost: float = Field(0.0, ge=0.0, description=(
        "minimum cost of a trade, in the currency of `account` (Qlib's exchange `min_cost`, e.g. 5)"
    ))
    account: float = Field(1_000_000.0, gt=0.0, description=(
        'the starting capital in currency: turns `min_cost` into a fraction of the book'
    ))
    max_turnover: float | None = Field(None, gt=0.0, description=(
        "daily turnover limit (sum of |trades| / the book's value); a day's trades above it are all scaled "
        "down alike; `null` = no limit"
    ))
    max_weight: float = Field(0.25, gt=0.0, le=1.0, description="cap on each symbol's absolute weight")
    max_gross: float = Field(1.0, gt=0.0, le=10.0, description='cap on the sum of absolute weights')
    fee_bps: float = Field(1.0, ge=0.0, description='fee per unit of turnover, basis points')
    slippage_bps: float = Field(2.0, ge=0.0, description='slippage per unit of turnover, basis points')
    chunk_days: int = Field(256, ge=1, description=(
        'days per numba call between log flushes (results do not depend on it)'
    ))
    sweep: BacktestSweep = Field(BacktestSweep(), description=(
        'a grid of these parameters backtested in one pass beside the backtest (docs/learning.md, "Sweeps")'
    ))
    benchmark: str | None = Field(None, min_length=1, description=(
        'what the backtest is measured against: `null` = the equal-weight portfolio of the universe '
        '(rebalanced to 1/n of the symbols with a close at every close, no costs); a symbol (e.g. `SP500`) = '
        "that symbol's buy-and-hold, read from `raw_bars` (a symbol not there fails, naming the ones there)"
    ))

    @model_validator(mode="after")
    def _strategy_settings(self) -> "BacktestSettings":
        if self.n_drop > self.topk:
            raise ValueError(f"backtest.n_drop ({self.n_drop}) is more than backtest.topk ({self.topk}); expected at most "
                             "topk replacements a day")
        if self.long_short and self.strategy != "threshold":
            raise ValueError(f"backtest.long_short: true is the threshold strategy's map, but backtest.strategy is "
                             f"{self.strategy!r}; expected long_short: false (the long_short strategy is "
                             "strategy: long_short)")
        self._sweep_points()
        return self

    def sweep_points(self) -> list["BacktestSettings"]:
        """The backtest settings of every combination of `sweep.grid` (the grid's first parameter
        varying slowest), each validated; [] without a grid."""
        import itertools

        grid = self.sweep.grid
        if not grid:
            return []
        base = self.model_dump(exclude={"sweep"})
        out = []
        for values in itertools.product(*grid.values()):
            point = {k: int(v) if k in SWEEP_INTEGERS else float(v) for k, v in zip(grid, values)}
            try:
                out.append(BacktestSettings(**{**base, **point}))
            except ValidationError as e:
                why = "; ".join(err["msg"].removeprefix("Value error, ") for err in e.errors())
                shown = ", ".join(f"{k}={v}" for k, v in point.items())
                raise ValueError(f"backtest.sweep.grid: the point {shown} is not a valid backtest: {why}") from None
        return out

    def _sweep_points(self) -> None:
        """Every grid value checked against its setting's bounds, and the combinations against
        the rules between settings (n_drop <= topk), before any run."""
        for name, values in self.sweep.grid.items():
            for v in values:
                field = BacktestSettings.model_fields[name]
                try:
                    TypeAdapter(Annotated[field.annotation, field]).validate_python(
                        int(v) if name in SWEEP_INTEGERS else float(v))
                except ValidationError as e:
                    raise ValueError(f"backtest.sweep.grid.{name}: {v} is out of range: "
                                     f"{e.errors()[0]['msg']}") from None
        self.sweep_points()


class DaskCluster(_Model):
    """A Dask cluster: an existing scheduler, or a LocalCluster of `workers` processes."""
    scheduler: str | None = Field(None, description=(
        'an existing scheduler address (`tcp://host:8786`); `null` = a LocalCluster started for each run'
    ))
    workers: int = Field(2, ge=1, description=(
        'LocalCluster workers when no scheduler is given (`grid_search.dask`: one thread each; with `gpu`: '
        'one per GPU, at most this many)'
    ))
    host: str = Field("127.0.0.1", description=(
        'the interface every socket of the LocalCluster listens on (scheduler, workers, HTTP routes; '
        '`0.0.0.0`: every interface)'
    ))


class ExecutorDask(DaskCluster):
    """`executor.dask`: the cluster of the dagster-dask executor."""
    threads_per_worker: int = Field(1, ge=1, description='LocalCluster threads per worker')
    dashboard_port: int | None = Field(None, ge=1, le=65535, description=(
        'serve the Dask dashboard on host:port; `null` = no dashboard'
    ))
    gpu_resources: bool = Field(False, description=(
        'GPU steps request the Dask resource `GPU=1`, so they land on workers started with `--resources '
        'GPU=n`'
    ))


K8S_QUANTITY = r"^[0-9]+(\.[0-9]+)?(m|k|Ki|M|Mi|G|Gi|T|Ti)?$"


class ExecutorK8s(_Model):
    """`executor.k8s`: dagster-k8s's k8s_job_executor, one pod per step (pipeline.executors).

    Every pod mounts `volume_claim` (a ReadWriteMany claim holding the data, models and
    reports folders) at `mount_path`, and reads the instance's PostgreSQL settings
    (`DAGSTER_PG_*`) from `env_secrets`."""
    image: str | None = Field(None, description="the step pods' image; `null` = the run's own image (the run launcher's `job_image`)")
    namespace: str = Field("dagster", description="the Kubernetes namespace of the step pods")
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] = Field("IfNotPresent", description="the step pods' image pull policy")
    service_account: str | None = Field(None, description="the step pods' service account; `null` = the namespace's default")
    env_config_maps: list[str] = Field([], description="config maps whose values become environment variables of every step pod (e.g. `PIPELINE_CONFIG`)")
    env_secrets: list[str] = Field(["dagster-postgres"], description="secrets whose values become environment variables of every step pod (the `DAGSTER_PG_*` of the instance)")
    volume_claim: str | None = Field(None, description="a ReadWriteMany PersistentVolumeClaim holding the data, models and reports folders, mounted in every step pod; `null` = none")
    mount_path: str = Field("/srv/tradelab", description="where `volume_claim` is mounted; `paths.*` must lie under it")
    cpu: str = Field("1", pattern=K8S_QUANTITY, description="each step pod's CPU request (a Kubernetes quantity: `2`, `500m`)")
    memory: str = Field("4Gi", pattern=K8S_QUANTITY, description="each step pod's memory request and limit (a Kubernetes quantity: `8Gi`)")
    gpus_per_gpu_step: int = Field(1, ge=0, description="the `nvidia.com/gpu` limit of the steps that may use a GPU (lstm_model, atc_scan, grid_search); 0 = none")
    max_concurrent: int | None = Field(None, ge=1, description="step pods of one run at once; `null` = no limit")


class ExecutorSettings(_Model):
    """How Dagster runs the steps of a run (pipeline.executors)."""
    kind: Literal["in_process", "multiprocess", "dask", "k8s"] = Field("in_process", description=(
        '`in_process`, `multiprocess`, `dask` (dagster-dask; the `cluster` extra) or `k8s` (a pod per '
        'step, dagster-k8s; the `k8s` extra)'
    ))
    max_concurrent: int | None = Field(None, ge=1, description=(
        'multiprocess: parallel step processes; `null` = the CPU count'
    ))
    gpus: int | None = Field(None, ge=1, description=(
        'limit of the `gpu` concurrency pool (steps that may use a GPU: lstm_model, atc_scan, grid_search); '
        '`null` = the GPUs found when the instance is first opened, at least 1'
    ))
    dask: ExecutorDask = Field(ExecutorDask(), description='the Dask cluster of the `dask` executor')
    k8s: ExecutorK8s = Field(ExecutorK8s(), description='the step pods of the `k8s` executor')


class Storage(_Model):
    """The Delta tables under paths.data (resources.delta_store)."""
    # `vacuum` removes files that no table version within this many hours references (and
    # files of killed writers older than it); under 168 (delta-rs's minimum) versions a model
    # recorded may become unreadable sooner.
    vacuum_retention_hours: int = Field(168, ge=0, le=24 * 3650, description=(
        '`vacuum_job` removes files that no table version within this many hours references (and files of '
        "killed writers older than it); 168 is delta-rs's minimum: below it, versions recorded by models may "
        'become unreadable'
    ))


class PartitionSettings(_Model):
    """The dynamic dimension of the symbol x year assets (resources.partitions)."""
    symbols_per_group: int = Field(1, ge=1, le=10_000, description=(
        '1: a partition key per symbol; N > 1: keys are groups of N symbols in registration order '
        "(`G0000`, ...), so Dagster's per-partition costs are paid per group; after changing it run "
        '`python -m pipeline.cli migrate-partitions`'
    ))


class Automation(_Model):
    nightly_schedule: bool = Field(False, description='start `nightly_rebuild` on')
    vacuum_schedule: bool = Field(False, description=(
        'start `weekly_vacuum` on: `vacuum_job` every Sunday at 03:00'
    ))
    new_symbol_sensor: bool = Field(False, description='start `new_symbol_sensor` on')
    build_chain_sensor: bool = Field(True, description=(
        'start `build_chain_sensor` on: after a successful `historical_build_and_train` (or `lstm_job`) run '
        'it requests `yearly_stages` for the same years and `atc_scan_job`'
    ))
    live_schedule: bool = Field(False, description=(
        'start `live_after_close` on: at 22:30 New York time on sessions of the XNYS calendar it builds the '
        "current year of every registered symbol (the day's bars in), and `build_chain_sensor` then runs "
        '`live_paper_trade`'
    ))
    # A build run in flight longer than this is stale: the chain sensor marks it failed
    # instead of waiting on it (a run whose local process is gone is stale at once).
    max_run_hours: float = Field(12.0, gt=0, description=(
        'a build run in flight longer than this, or one whose local process is gone (killed), is marked '
        'failed by `build_chain_sensor` instead of blocking the chain; the skip reason names it'
    ))
    # prune_runs_job / `prune-runs`: finished runs older than this many days are deleted (with
    # their events), except runs holding the latest materialization of a partition
    run_retention_days: float = Field(90.0, ge=0, description=(
        '`prune_runs_job` and `prune-runs` delete finished runs older than this (runs holding the latest '
        'materialization of a partition are kept)'
    ))
    prune_schedule: bool = Field(False, description=(
        'start `daily_prune_runs` on: `prune_runs_job` every day at 04:00'
    ))


class GridParams(_Model):
    volatility: list[float] = Field([0.0, 0.3, 0.4, 0.5, 0.6], description=(
        'keep trades with Entry Volatility Percent >= this'
    ))
    ratio: list[float] = Field([0.0, 0.2, 0.5, 0.7, 0.8, 0.9, 1.0], description=(
        'keep trades with Entry Volatility Ratio >= this'
    ))
    adx28: list[float] = Field([0, 20, 30], description='keep trades with Entry Adx28 >= this')
    adx14: list[float] = Field([0, 20, 30], description='keep trades with Entry Adx14 >= this')
    adx7: list[float] = Field([0, 20, 30], description='keep trades with Entry Adx7 >= this')
    target: list[float] = Field([0.2, 0.3, 0.4, 0.5], description='exit at this ROI percent (> 0)')
    stop_loss: list[float] = Field([-0.5, -0.4, -0.3], description='exit at this ROI percent (< 0)')

    @model_validator(mode="after")
    def _valid_lists(self) -> "GridParams":
        for name in type(self).model_fields:
            if not getattr(self, name):
                raise ValueError(f"{name} must be a non-empty list")
        if any(t <= 0 for t in self.target):
            raise ValueError(f"target values are percents > 0, got {self.target}")
        if any(s >= 0 for s in self.stop_loss):
            raise ValueError(f"stop_loss values are percents < 0, got {self.stop_loss}")
        return self


class SmartSearch(_Model):
    sampler: Literal["tpe", "nsga2", "random"] = Field("tpe", description=(
        "`tpe` (multivariate TPE), `nsga2` (a genetic algorithm) or `random`"
    ))
    trials: int = Field(1000, ge=1, description='trials to run')
    batch: int = Field(64, ge=1, description='trials asked at once and scored in one kernel call')
    pruner: Literal["hyperband", "successive_halving", "none"] = Field("hyperband", description=(
        '`hyperband`, `successive_halving` or `none`; prunes over shuffled day blocks'
    ))
    blocks: int = Field(8, ge=2, description='day blocks (days shuffled: "mix the days up") for pruning')
    storage: str | None = Field(None, description=(
        'in memory; a journal file (`*.log`) or a database URL so several workers share one study'
    ))
    study_name: str | None = Field(None, description='study name (default derived from sampler and seed)')
    seed: int = Field(0, ge=0, description='sampler seed')


class DaskSettings(DaskCluster):
    """`grid_search.dask`: shard the grid search over a Dask cluster (domain.gridsearch.dask_grid); a
    LocalCluster's workers have one thread each (with `gpu`: at most one per GPU)."""
    enabled: bool = Field(False, description="run the search's shards on Dask")
    gpu: bool = Field(False, description=(
        '`dask_cuda.LocalCUDACluster` (needs `dask-cuda` and `rmm`): an RMM pool per worker, numba and CuPy '
        'on RMM'
    ))
    shards: int | None = Field(None, ge=1, description=(
        "shards of the (target, stop_loss) pairs; null = the cluster's worker threads"
    ))
    scatter: Literal["broadcast", "rows"] = Field("broadcast", description=(
        "`broadcast`: the inputs go once to every worker; `rows`: each shard's block of result rows goes once "
        'to one worker (3.5x less to send on the 10M grid)'
    ))


MAX_GRID_TICKERS = 127  # the grid search's ticker codes are int8


class GridSearch(_Model):
    market_data: Path = Field(Path("grid_data/market_data"), description=(
        'folder of `Raw_Market_data_MM-DD-YYYY.csv`'
    ))
    trade_log: Path = Field(Path("grid_data/all_trade_logs.csv"), description='the trade log')
    tickers: list[str] = Field(["SOXL", "IONQ", "MARA"], description='tickers kept')
    top: int = Field(10, ge=1, le=1000, description='how many combinations to report')
    min_trades: int = Field(1, ge=1, description=(
        'a combination is ranked only with at least this many trades'
    ))
    engine: Literal["auto", "brute", "cube", "optuna"] = Field("auto", description=(
        '`brute` (one thread per combination), `cube` (dominance sums) or `auto` (= cube), all exact with the '
        'same top-10; or `optuna` (smart search, below)'
    ))
    overfitting: bool = Field(True, description=(
        'add in-sample vs out-of-sample ROI, PBO (CSCV) and the deflated Sharpe ratio to the report'
    ))
    params: GridParams = Field(GridParams(), description='the parameter lists (each non-empty)')
    smart: SmartSearch = Field(SmartSearch(), description='smart search beyond the grid (`engine: optuna`)')
    dask: DaskSettings = Field(DaskSettings(), description=(
        'shard the grid search over a Dask cluster (`engine` brute/cube/auto); the same exact top-10'
    ))

    @field_validator("tickers")
    @classmethod
    def _tickers_fit_their_codes(cls, names: list[str]) -> list[str]:
        """Ticker codes are int8 in the engines; names as symbols are (SYMBOL_PATTERN)."""
        if len(names) > MAX_GRID_TICKERS:
            raise ValueError(f"{len(names)} tickers; expected at most {MAX_GRID_TICKERS}")
        bad = [n for n in names if not SYMBOL_PATTERN.fullmatch(n)]
        if bad:
            raise ValueError(f"{bad[0]!r} is not a ticker; expected names matching [A-Z0-9._-]{{1,16}}")
        return names


class StrategySearchSettings(_Model):
    """NSGA-II over seller-exhaustion parameter sets (`strategy_search`, CLI `strategy-search`)."""
    population: int = Field(64, ge=2, description=(
        'trials per generation (the NSGA-II population, at least 2)'
    ))
    generations: int = Field(10, ge=1, description=(
        'generations; trials in all = population x generations'
    ))
    min_trades: int = Field(5, ge=0, description=(
        'constraint: a parameter set reaches the front only with at least this many trades'
    ))
    seed: int = Field(0, ge=0, description=(
        'sampler seed: same bars and seed, same front'
    ))
    backend: Literal["auto", "cpu", "cuda"] = Field("auto", description=(
        'population backtest backend: `cpu`, `cuda`, or `auto` (cuda on a real GPU from the measured break-even of '
        '`kernels/backends/routing.py`, else cpu)'
    ))
    fee_bps: float = Field(5.0, ge=0.0, description=(
        'fee per side, basis points (a market fact, not searched)'
    ))
    slippage_bps: float = Field(5.0, ge=0.0, description=(
        'slippage per side, basis points'
    ))
    front_rows: int = Field(20, ge=1, le=1000, description=(
        "rows of the front shown in the asset's metadata table (the JSON has them all)"
    ))


class Settings(_Model):
    # The named experiment its models and reports belong to: reports/<experiment>/<stage>/,
    # models/<experiment>/ (pipeline.cli.experiments; CLI --experiment NAME)
    experiment: str = Field("default", description=(
        'the named experiment (CLI `--experiment NAME`): its reports in `reports/<experiment>/<stage>/`, '
        'models in `models/<experiment>/` (see "Experiments")'
    ))
    paths: Paths = Field(Paths(), description='where things are written')
    years: Years = Field(Years(), description='the year dimension of the partitions')
    universe: Universe = Field(Universe(), description='where raw bars come from')
    ingest: Ingest = Field(Ingest(), description='how raw bars from files are read and checked')
    demo: Demo = Field(Demo(), description='what `make demo` materializes')
    labels: Labels = Field(Labels(), description='forward-return labels')
    halo: Halo = Field(Halo(), description='history that halo stages read before year Y')
    device: Literal["auto", "cpu", "cuda", "rocm"] = Field("auto", description=(
        '`auto`, `cpu`, `cuda` or `rocm`; an absent device falls back to CPU with a warning'
    ))
    precision: Literal["float32", "float64"] = Field("float32", description=(
        'kernel precision, `float32` or `float64` (stored features are float32)'
    ))
    threads_per_worker: int = Field(1, ge=1, le=256, description=(
        'OMP/OPENBLAS/MKL/NUMEXPR threads inside worker processes'
    ))
    build: Build = Field(Build(), description='how per-symbol stages (features) use the CPU')
    atc: ATC = Field(ATC(), description='Adaptive Trend Classification (specialist and `atc_scan`)')
    regime: Regime = Field(Regime(), description='the market-regime tagger')
    cv: CV = Field(CV(), description='purged cross-validation of the specialists (`cv_report`)')
    lstm: LSTMSettings = Field(LSTMSettings(), description=(
        'the LSTM specialist (`lstm_model`, job `lstm_job`)'
    ))
    features: FeatureSettings = Field(FeatureSettings(), description=(
        'which feature packs fill the `features` and `specialists` tables'
    ))
    meta: MetaSettings = Field(MetaSettings(), description='the meta model (`meta_model`)')
    evaluation: EvaluationSettings = Field(EvaluationSettings(), description=(
        'the evaluation of the out-of-sample predictions (`evaluation`)'
    ))
    backtest: BacktestSettings = Field(BacktestSettings(), description=(
        'the portfolio backtest of the predictions (`backtest`, `live_paper_trade`)'
    ))
    executor: ExecutorSettings = Field(ExecutorSettings(), description=(
        'how Dagster runs the steps of a run (`pipeline/executors.py`)'
    ))
    storage: Storage = Field(Storage(), description='the Delta tables under `paths.data`')
    partitions: PartitionSettings = Field(PartitionSettings(), description=(
        'the dynamic dimension of the symbol x year assets (`resources/partitions.py`)'
    ))
    automation: Automation = Field(Automation(), description='schedules and sensors')
    grid_search: GridSearch = Field(GridSearch(), description='the trade-log grid search (a later stage)')
    strategy_search: StrategySearchSettings = Field(StrategySearchSettings(), description=(
        'NSGA-II over seller-exhaustion parameter sets (`strategy_search`, CLI `strategy-search`)'
    ))
    # Where the file was read from; relative paths resolve against its folder.
    root: Path = Field(PROJECT_ROOT, exclude=True)

    @field_validator("experiment")
    @classmethod
    def _experiment_name(cls, v: str) -> str:
        if not EXPERIMENT_PATTERN.fullmatch(v):
            raise ValueError(f"{v!r} is not an experiment name; expected 1-64 letters, digits, '.', '_' or '-', "
                             "starting with a letter or digit")
        if v in STAGE_DIRS or v in LEGACY_REPORT_DIRS:
            raise ValueError(f"{v!r} is the name of a stage's report folder; expected another experiment name")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> "Settings":
        pairs = [("backtest.horizon", self.backtest.horizon), ("lstm.horizon", self.lstm.horizon)]
        pairs += [("meta.horizons", h) for h in self.meta.horizons or []]
        copies = self.meta.calibration_copies
        if copies is not None and copies > self.cv.n_splits:
            raise ValueError(f"meta.calibration_copies is {copies}, more than cv.n_splits ({self.cv.n_splits}): one copy "
                             "per purged fold at most; expected a number up to cv.n_splits, or null for all of them")
        for key, h in pairs:
            if h not in self.labels.horizons:
                raise ValueError(f"{key} is {h}, which is not one of labels.horizons {self.labels.horizons}")
        end = self.universe.synthetic.end_date
        if end is not None and end.year < self.years.start:
            raise ValueError(f"universe.synthetic.end_date ({end}) is before years.start ({self.years.start}): no bar "
                             "would be generated")
        for folder in self.features.plugin_folders(self.root):
            if not Path(folder).is_dir():
                raise ValueError(f"features.plugin_paths: {folder} is not a folder; expected a folder holding the "
                                 "plugin modules (relative paths start at the settings file's folder)")
        for key in ("data", "reports", "models"):
            folder = self.resolve(getattr(self.paths, key))
            existing = next((p for p in (folder, *folder.parents) if p.exists()), None)
            if existing is None or not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
                raise ValueError(f"paths.{key} ({folder}) cannot be written: {existing} is not a writable folder")
        return self

    def resolve(self, path: Path) -> Path:
        return path if path.is_absolute() else (self.root / path)

    def plugin_folders(self) -> tuple[str, ...]:
        """features.plugin_paths as absolute folder names (relative ones against the settings
        file's folder): where the plugin modules are found."""
        return self.features.plugin_folders(self.root)

    @property
    def data_dir(self) -> Path:
        return self.resolve(self.paths.data)

    @property
    def reports_root(self) -> Path:
        """paths.reports: the folder holding one folder per experiment."""
        return self.resolve(self.paths.reports)

    @property
    def models_root(self) -> Path:
        """paths.models: the folder holding one folder per experiment."""
        return self.resolve(self.paths.models)

    @property
    def reports_dir(self) -> Path:
        """The experiment's reports: paths.reports/<experiment>/ (one folder per stage below)."""
        return self.reports_root / self.experiment

    @property
    def models_dir(self) -> Path:
        """The experiment's models: paths.models/<experiment>/."""
        return self.models_root / self.experiment

    @property
    def experiment_data_dir(self) -> Path:
        """The folder of the experiment's own tables (EXPERIMENT_TABLES): paths.data/experiments/<experiment>/."""
        return self.data_dir / "experiments" / self.experiment

    def table_root(self, asset: str) -> Path:
        """The DeltaStore root that holds `asset`'s table: the experiment's folder for
        EXPERIMENT_TABLES, paths.data for the shared ones."""
        return self.experiment_data_dir if asset in EXPERIMENT_TABLES else self.data_dir

    def stage_reports_dir(self, stage: str) -> Path:
        """The reports of one stage, named as its asset: reports/<experiment>/<stage>/."""
        if stage not in STAGE_DIRS:
            raise ValueError(f"{stage!r} is not a stage; expected one of {', '.join(STAGE_DIRS)}")
        return self.reports_dir / stage

    def demo_years(self) -> list[int]:
        return self.demo.years or self.years.all()


def _format_error(origin: str, err: ValidationError) -> str:
    lines = [f"{origin}: invalid settings"]
    for e in err.errors():
        key = ".".join(str(p) for p in e["loc"] if not str(p).startswith(("function-", "literal[")))
        key = re.sub(r"\.(int|list\[str\]|constrained-int)\b", "", key) or "(top level)"
        msg = e["msg"]
        if e["type"] == "extra_forbidden":
            msg = "unknown key (see docs/settings.md for the allowed keys)"
        got = e.get("input")
        got_txt = "" if isinstance(got, dict) else f" (got {got!r})"
        lines.append(f"  {key}: {msg}{got_txt}")
    return "\n".join(lines)


def parse_settings(data: object, origin: str = "<settings>", root: Path = PROJECT_ROOT) -> Settings:
    """Validate a mapping (as read from YAML) into Settings, or raise SettingsError."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise SettingsError(f"{origin}: expected a mapping of settings at the top level, got {type(data).__name__}")
    if "root" in data:
        raise SettingsError(f"{origin}: root: unknown key (see docs/settings.md for the allowed keys)")
    try:
        return Settings(**data, root=root)
    except ValidationError as err:
        raise SettingsError(_format_error(origin, err)) from None


def config_path() -> Path:
    """The settings file in force: $PIPELINE_CONFIG or the project's dagster_project.yaml."""
    return Path(os.environ.get(CONFIG_ENV) or DEFAULT_CONFIG).resolve()


def read_settings(path: Path | str) -> Settings:
    """Read and validate one settings file (uncached)."""
    path = Path(path).resolve()
    if not path.is_file():
        raise SettingsError(f"{path}: settings file not found (set {CONFIG_ENV} to an existing file)")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise SettingsError(f"{path}: not valid YAML: {err}") from None
    return parse_settings(data, origin=str(path), root=path.parent)


@functools.lru_cache(maxsize=16)
def _cached(path: Path, mtime_ns: int, size: int) -> Settings:
    return read_settings(path)


def env_overrides(path: Path) -> dict:
    """The mapping in $PIPELINE_CONFIG_OVERRIDES when `path` (resolved) is the file in force,
    else {}: another settings file read explicitly is read as written. SettingsError (one
    line) when the variable holds no JSON mapping."""
    import json

    text = os.environ.get(OVERRIDES_ENV)
    if not text or path != config_path():
        return {}
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise SettingsError(f"${OVERRIDES_ENV}: expected a JSON mapping of settings (e.g. {{\"experiment\": \"baseline\"}}), "
                            f"got {text[:80]!r}")
    return data


def load_settings(path: Path | str | None = None) -> Settings:
    """The validated settings, read once per file version and process (the cache key is the
    path with its mtime and size: a rewritten file is read again). The file in force gets
    $PIPELINE_CONFIG_OVERRIDES over it (env_overrides)."""
    path = Path(path).resolve() if path else config_path()
    if env_overrides(path):
        return derive_settings(path, "{}")
    try:
        st = path.stat()
    except OSError:
        return read_settings(path)  # names the missing file
    return _cached(path, st.st_mtime_ns, st.st_size)


def merge_settings(data: dict, overrides: dict) -> dict:
    """`data` (settings as read from YAML) with `overrides` applied: nested mappings key by
    key, anything else replaced. Returns a new mapping; neither argument changes."""
    out = dict(data)
    for k, v in overrides.items():
        out[k] = merge_settings(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


@functools.lru_cache(maxsize=16)
def _derived(path: Path, mtime_ns: int, size: int, overrides: str) -> Settings:
    import json

    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError:
        data = None
    if not isinstance(data, dict):
        return read_settings(path)  # names what is wrong with the file
    return parse_settings(merge_settings(data, json.loads(overrides)), origin=f"{path} with the command's flags",
                          root=path.parent)


def derive_settings(path: Path | str, overrides: str) -> Settings:
    """The settings file `path` with `overrides` (JSON of a nested mapping) applied, validated
    as one (relative paths against the file's folder); nothing is written. Over the file in
    force, $PIPELINE_CONFIG_OVERRIDES comes first and `overrides` over it. Cached as
    load_settings is, per file version and overrides."""
    import json

    path = Path(path).resolve()
    inherited = env_overrides(path)
    if inherited:
        overrides = json.dumps(merge_settings(inherited, json.loads(overrides)))
    try:
        st = path.stat()
    except OSError:
        return read_settings(path)  # names the missing file
    return _derived(path, st.st_mtime_ns, st.st_size, overrides)


def field_choices(*path: str) -> tuple[str, ...]:
    """The allowed values of the Literal setting at `path` (`field_choices("device")`): CLI
    flags take their choices from here, so a flag and its setting never disagree."""
    import typing

    model: type[BaseModel] = Settings
    for name in path[:-1]:
        model = model.model_fields[name].annotation
    return typing.get_args(model.model_fields[path[-1]].annotation)
