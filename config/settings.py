"""The project's settings: `dagster_project.yaml`, validated by one model.

Leaf module: imports nothing from the project, so every layer may read the settings.

`load_settings()` reads `$PIPELINE_CONFIG` (default: `dagster_project.yaml` in the project
root), validates it once and caches the result. Any wrong key, type or value stops with one
`SettingsError` naming the file, the key and what is allowed. Relative paths resolve against
the settings file's folder.
"""

from __future__ import annotations

import datetime as dt
import functools
import os
import re
from pathlib import Path
from typing import Annotated, Literal, Union

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CONFIG = PROJECT_ROOT / "dagster_project.yaml"
CONFIG_ENV = "PIPELINE_CONFIG"

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
# The tables that depend on an experiment's models (pipeline.experiments): stored per
# experiment under paths.data/experiments/<experiment>/; every other table is shared.
EXPERIMENT_TABLES = ("lstm_model", "cv_report", "meta_model", "predictions", "backtest", "evaluation")


class SettingsError(ValueError):
    """A settings file that cannot be used, with the key and what is allowed."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Paths(_Model):
    data: Path = Path("data")
    reports: Path = Path("reports")
    models: Path = Path("models")


class Years(_Model):
    start: int = Field(2000, ge=1900, le=2100)
    end: int | None = Field(None, ge=1900, le=2100)

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
        if not SYMBOL_PATTERN.match(name):
            raise ValueError(f"symbol {name!r} does not match [A-Z0-9._-]{{1,16}}")
    if len(set(names)) != len(names):
        raise ValueError("symbols must be unique")
    return names


class PlantedSignal(_Model):
    """`universe.synthetic.planted`: a known, recoverable signal planted in the synthetic
    market (domain.sources.synthetic). strength 0 (the default) plants nothing: the market
    is then byte for byte the one without this key."""
    strength: float = Field(0.0, ge=0.0, le=5.0)      # daily drift per unit signal, in daily volatilities
    kind: Literal["linear", "nonlinear"] = "linear"  # linear: reversal on RSI(14); nonlinear: band-dependent sign
    horizon: int = Field(7, ge=1, le=252)            # trading days over which a day's signal moves returns


class SyntheticSource(_Model):
    symbols: Union[Annotated[int, Field(ge=1, le=100_000)], list[str]] = 8
    seed: int = Field(7, ge=0)
    end_date: dt.date | None = None
    planted: PlantedSignal = PlantedSignal()

    @field_validator("symbols")
    @classmethod
    def _names(cls, v):
        return v if isinstance(v, int) else _check_symbols(v)

    def symbol_names(self) -> list[str]:
        if isinstance(self.symbols, int):
            return [f"SYN{i:03d}" for i in range(self.symbols)]
        return list(self.symbols)


class FolderSource(_Model):
    path: Path = Path("user_data")


class PackagedSource(_Model):
    symbols: list[Literal["GOOG", "SP500", "NASDAQ"]] = Field(["GOOG", "SP500", "NASDAQ"], min_length=1)


class Universe(_Model):
    source: Literal["synthetic", "folder", "packaged"] = "synthetic"
    synthetic: SyntheticSource = SyntheticSource()
    folder: FolderSource = FolderSource()
    packaged: PackagedSource = PackagedSource()


class Ingest(_Model):
    """`ingest`: how daily bars are judged on the way in (domain.sources.conform and the
    raw_bars checks). A daily bar's date is an exchange session of `calendar`: other dates
    are a warning (check exchange_sessions), or refused with `strict`."""
    calendar: str = "XNYS"  # an exchange_calendars name (XNYS, XLON, XTKS, ...)
    strict: bool = False    # refuse a file with a date that is not a session (CLI --strict)
    # intraday rows (several times on one date): refused ("none"), or built into daily bars
    resample: Literal["none", "daily"] = "none"
    # check plausible_moves warns when a close differs from the previous one by more than this
    # factor either way (1.5: up 50% or down 33%); an unadjusted 2:1 split is a factor 2
    max_move: float = Field(1.5, gt=1.0)

    @field_validator("calendar")
    @classmethod
    def _known(cls, v):
        import exchange_calendars  # only when the key is set (defaults are not validated)

        if v not in exchange_calendars.get_calendar_names():
            raise ValueError(f"{v!r} is not an exchange_calendars name (e.g. XNYS, XLON, XTKS)")
        return v


class Demo(_Model):
    symbols: list[str] | None = None
    years: list[int] | None = None

    @field_validator("symbols")
    @classmethod
    def _names(cls, v):
        return v if v is None else _check_symbols(v)


class Labels(_Model):
    horizons: list[Annotated[int, Field(ge=1, le=252)]] = [3, 7, 14]
    thresholds: dict[int, float] = {3: 0.0, 7: 0.0, 14: 0.0}

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
    years: int = Field(2, ge=1, le=10)


class Build(_Model):
    workers: int | None = Field(None, ge=1, le=512)
    chunk_rows: int = Field(131_072, ge=1_000)
    executor: Literal["thread", "process"] = "thread"

    def worker_count(self) -> int:
        return self.workers or (os.cpu_count() or 1)


class ATC(_Model):
    robustness: Literal["Narrow", "Medium", "Wide"] = "Medium"
    length: int = Field(28, ge=3, le=1000)
    # lam, decay, cutout as typed in the Pine script's inputs (kernels.atc scales lam/1000, decay/100)
    lam: float = Field(0.02, ge=0.0, le=1.0)  # return weight growth: exp(lam/1000 * (bar - cutout))
    decay: float = Field(0.03, ge=0.0, le=10.0)  # equity decay, percent per bar
    cutout: int = Field(0, ge=0)  # bars before the equities start (ATC is NaN there)
    scan_bars: int = Field(2000, ge=50)
    chunk_symbols: int = Field(512, ge=1)
    cache: bool = False

    @model_validator(mode="after")
    def _cutout_inside_the_scan(self) -> "ATC":
        if self.cutout >= self.scan_bars:
            raise ValueError(f"cutout ({self.cutout}) must be < scan_bars ({self.scan_bars}): every scanned value would be NaN")
        return self


class Regime(_Model):
    index_symbol: str | None = None

    @field_validator("index_symbol")
    @classmethod
    def _name(cls, v):
        return v if v is None else _check_symbols([v])[0]


class CV(_Model):
    n_splits: int = Field(5, ge=2, le=50)
    embargo_days: int = Field(5, ge=0)


class LSTMSettings(_Model):
    horizon: int = Field(7, ge=1)
    seq_len: int = Field(32, ge=2)
    hidden: int = Field(32, ge=1)
    layers: int = Field(2, ge=1)
    epochs: int = Field(3, ge=1)
    batch_size: int = Field(256, ge=1)
    max_steps: int | None = Field(300, ge=1)
    patience: int = Field(2, ge=1)
    val_days: int = Field(91, ge=1)
    seed: int = Field(0, ge=0)


MODULE_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


class FeatureSettings(_Model):
    """Which feature packs fill the `features` and `specialists` tables
    (kernels.registry.packs): built-in `packs` (core, alpha158) and the packs of the plugin
    modules named in `plugins` (imported by name from sys.path; domain.feature_packs
    resolves them and refuses unknown packs and unusable plugins)."""

    packs: list[str] = Field(default_factory=lambda: ["core"], min_length=1)
    plugins: list[str] = Field(default_factory=list)

    @field_validator("packs", "plugins")
    @classmethod
    def _names(cls, v: list[str]) -> list[str]:
        bad = [n for n in v if not MODULE_PATTERN.match(n)]
        if bad:
            raise ValueError(f"{bad[0]!r} is not a pack or module name (letters, digits, _ and dots)")
        if len(set(v)) != len(v):
            raise ValueError(f"a name is listed twice: {sorted(n for n in set(v) if v.count(n) > 1)}")
        return v


class MetaSettings(_Model):
    model: Literal["logistic", "hist_gbm", "lightgbm"] = "logistic"
    calibration: Literal["isotonic", "sigmoid"] = "isotonic"
    horizons: list[int] | None = None  # null = every labels.horizons
    # specialists: the specialist scores, the LSTM score when present, the regime one-hot;
    # features+specialists: those and the feature registry's columns (the `features` table);
    # a list of names: `specialists` and selected pack names (core, alpha158, plugin packs),
    # each pack adding its feature columns, e.g. [specialists, alpha158]
    inputs: Union[Literal["specialists", "features+specialists"], list[str]] = "specialists"

    @field_validator("inputs")
    @classmethod
    def _input_names(cls, v):
        if isinstance(v, list):
            if not v:
                raise ValueError("an empty list names no input: give specialists and/or pack names")
            bad = [n for n in v if not MODULE_PATTERN.match(n)]
            if bad:
                raise ValueError(f"{bad[0]!r} is not a pack name; expected specialists or pack names such as core, alpha158")
        return v
    # random_state of hist_gbm / lightgbm (and of the logistic model, which does not use it:
    # lbfgs on unshuffled folds is deterministic); the same seed and data give the same model
    seed: int = Field(0, ge=0)


class EvaluationSettings(_Model):
    """The evaluation of the out-of-sample predictions (evaluation)."""
    # cross-sectional figures (rank IC, long-short deciles, turnover) use only days with at
    # least this many symbols that have a prediction and a realised return
    min_symbols_per_day: int = Field(5, ge=3)


class BacktestSettings(_Model):
    """Portfolio backtest of the meta model's probabilities (backtest, live_paper_trade)."""
    horizon: int = Field(7, ge=1)          # which p_h{H} drives the weights
    threshold: float = Field(0.5, ge=0.0, le=1.0)  # long only above this probability
    long_short: bool = False               # True: w ~ (p - 0.5) * 2, the seed's mapping
    max_weight: float = Field(0.25, gt=0.0, le=1.0)
    max_gross: float = Field(1.0, gt=0.0, le=10.0)
    fee_bps: float = Field(1.0, ge=0.0)
    slippage_bps: float = Field(2.0, ge=0.0)
    chunk_days: int = Field(256, ge=1)     # days per numba call between log flushes


class DaskCluster(_Model):
    """A Dask cluster: an existing scheduler, or a LocalCluster of `workers` processes."""
    scheduler: str | None = None       # an existing scheduler address, e.g. tcp://10.0.0.5:8786
    workers: int = Field(2, ge=1)      # LocalCluster workers when no scheduler is given
    host: str = "127.0.0.1"            # the interface a LocalCluster's sockets listen on (0.0.0.0: every interface)


class ExecutorDask(DaskCluster):
    """`executor.dask`: the cluster of the dagster-dask executor."""
    threads_per_worker: int = Field(1, ge=1)
    dashboard_port: int | None = Field(None, ge=1, le=65535)  # LocalCluster dashboard on host:port; null: none
    gpu_resources: bool = False        # GPU steps ask Dask for resource GPU=1 (workers started with --resources GPU=n)


class ExecutorSettings(_Model):
    """How Dagster runs the steps of a run (pipeline.executors)."""
    kind: Literal["in_process", "multiprocess", "dask"] = "in_process"
    max_concurrent: int | None = Field(None, ge=1)  # multiprocess: parallel step processes (null = CPU count)
    gpus: int | None = Field(None, ge=1)             # size of the `gpu` concurrency pool; null = GPUs found (at least 1)
    dask: ExecutorDask = ExecutorDask()


class Storage(_Model):
    """The Delta tables under paths.data (resources.delta_store)."""
    # `vacuum` removes files that no table version within this many hours references (and
    # files of killed writers older than it); under 168 (delta-rs's minimum) versions a model
    # recorded may become unreadable sooner.
    vacuum_retention_hours: int = Field(168, ge=0, le=24 * 3650)


class PartitionSettings(_Model):
    """The dynamic dimension of the symbol x year assets (resources.partitions)."""
    # 1: one partition key per symbol (small universes). N > 1: keys are groups of N symbols in
    # registration order (`G0000`, ...), so Dagster's per-partition costs are paid per group;
    # `python -m pipeline.cli migrate-partitions` moves an instance between the two.
    symbols_per_group: int = Field(1, ge=1, le=10_000)


class Automation(_Model):
    nightly_schedule: bool = False
    vacuum_schedule: bool = False
    new_symbol_sensor: bool = False
    build_chain_sensor: bool = True
    live_schedule: bool = False  # start live_after_close (22:30 New York on exchange sessions) with the daemon
    # A build run in flight longer than this is stale: the chain sensor marks it failed
    # instead of waiting on it (a run whose local process is gone is stale at once).
    max_run_hours: float = Field(12.0, gt=0)
    # prune_runs_job / `prune-runs`: finished runs older than this many days are deleted (with
    # their events), except runs holding the latest materialization of a partition
    run_retention_days: float = Field(90.0, ge=0)
    prune_schedule: bool = False  # start daily_prune_runs (04:00) with the daemon


class GridParams(_Model):
    volatility: list[float] = [0.0, 0.3, 0.4, 0.5, 0.6]
    ratio: list[float] = [0.0, 0.2, 0.5, 0.7, 0.8, 0.9, 1.0]
    adx28: list[float] = [0, 20, 30]
    adx14: list[float] = [0, 20, 30]
    adx7: list[float] = [0, 20, 30]
    target: list[float] = [0.2, 0.3, 0.4, 0.5]
    stop_loss: list[float] = [-0.5, -0.4, -0.3]

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
    sampler: Literal["tpe", "nsga2", "random"] = "tpe"
    trials: int = Field(1000, ge=1)
    batch: int = Field(64, ge=1)
    pruner: Literal["hyperband", "successive_halving", "none"] = "hyperband"
    blocks: int = Field(8, ge=2)
    storage: str | None = None
    study_name: str | None = None
    seed: int = Field(0, ge=0)


class DaskSettings(DaskCluster):
    """`grid_search.dask`: shard the grid search over a Dask cluster (domain.gridsearch.dask_grid); a
    LocalCluster's workers have one thread each (with `gpu`: at most one per GPU)."""
    enabled: bool = False
    gpu: bool = False                        # dask_cuda.LocalCUDACluster: RMM pool per worker (needs dask-cuda, rmm)
    shards: int | None = Field(None, ge=1)   # (target, stop_loss) pair shards; null = the cluster's worker threads
    scatter: Literal["broadcast", "rows"] = "broadcast"  # inputs to every worker, or each shard's result rows to one


class GridSearch(_Model):
    market_data: Path = Path("grid_data/market_data")
    trade_log: Path = Path("grid_data/all_trade_logs.csv")
    tickers: list[str] = ["SOXL", "IONQ", "MARA"]
    top: int = Field(10, ge=1, le=1000)
    min_trades: int = Field(1, ge=1)
    engine: Literal["auto", "brute", "cube", "optuna"] = "auto"
    overfitting: bool = True
    params: GridParams = GridParams()
    smart: SmartSearch = SmartSearch()
    dask: DaskSettings = DaskSettings()


class StrategySearchSettings(_Model):
    """NSGA-II over seller-exhaustion parameter sets (`strategy_search`, CLI `strategy-search`)."""
    population: int = Field(64, ge=2)       # trials per generation (NSGA-II population size)
    generations: int = Field(10, ge=1)      # generations; trials in all = population x generations
    min_trades: int = Field(5, ge=0)        # constraint: a parameter set reaches the front with at least this many trades
    seed: int = Field(0, ge=0)              # sampler seed (same bars and seed, same front)
    engine: Literal["auto", "cpu", "cuda"] = "auto"  # population backtest engine (auto: cuda on a real GPU)
    fee_bp: float = Field(5.0, ge=0.0)      # fee per side, basis points (a market fact, not searched)
    slippage_bp: float = Field(5.0, ge=0.0)  # slippage per side, basis points
    front_rows: int = Field(20, ge=1, le=1000)  # rows of the front shown in the asset's metadata table


class Settings(_Model):
    # The named experiment its models and reports belong to: reports/<experiment>/<stage>/,
    # models/<experiment>/ (pipeline.experiments; CLI --experiment NAME)
    experiment: str = "default"
    paths: Paths = Paths()
    years: Years = Years()
    universe: Universe = Universe()
    ingest: Ingest = Ingest()
    demo: Demo = Demo()
    labels: Labels = Labels()
    halo: Halo = Halo()
    device: Literal["auto", "cpu", "cuda", "rocm"] = "auto"
    precision: Literal["float32", "float64"] = "float32"
    threads_per_worker: int = Field(1, ge=1, le=256)
    build: Build = Build()
    atc: ATC = ATC()
    regime: Regime = Regime()
    cv: CV = CV()
    lstm: LSTMSettings = LSTMSettings()
    features: FeatureSettings = FeatureSettings()
    meta: MetaSettings = MetaSettings()
    evaluation: EvaluationSettings = EvaluationSettings()
    backtest: BacktestSettings = BacktestSettings()
    executor: ExecutorSettings = ExecutorSettings()
    storage: Storage = Storage()
    partitions: PartitionSettings = PartitionSettings()
    automation: Automation = Automation()
    grid_search: GridSearch = GridSearch()
    strategy_search: StrategySearchSettings = StrategySearchSettings()
    # Where the file was read from; relative paths resolve against its folder.
    root: Path = Field(PROJECT_ROOT, exclude=True)

    @field_validator("experiment")
    @classmethod
    def _experiment_name(cls, v: str) -> str:
        if not EXPERIMENT_PATTERN.match(v):
            raise ValueError(f"{v!r} is not an experiment name; expected 1-64 letters, digits, '.', '_' or '-', "
                             "starting with a letter or digit")
        if v in STAGE_DIRS or v in LEGACY_REPORT_DIRS:
            raise ValueError(f"{v!r} is the name of a stage's report folder; expected another experiment name")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> "Settings":
        pairs = [("backtest.horizon", self.backtest.horizon), ("lstm.horizon", self.lstm.horizon)]
        pairs += [("meta.horizons", h) for h in self.meta.horizons or []]
        for key, h in pairs:
            if h not in self.labels.horizons:
                raise ValueError(f"{key} is {h}, which is not one of labels.horizons {self.labels.horizons}")
        end = self.universe.synthetic.end_date
        if end is not None and end.year < self.years.start:
            raise ValueError(f"universe.synthetic.end_date ({end}) is before years.start ({self.years.start}): no bar "
                             "would be generated")
        for key in ("data", "reports", "models"):
            folder = self.resolve(getattr(self.paths, key))
            existing = next((p for p in (folder, *folder.parents) if p.exists()), None)
            if existing is None or not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
                raise ValueError(f"paths.{key} ({folder}) cannot be written: {existing} is not a writable folder")
        return self

    def resolve(self, path: Path) -> Path:
        return path if path.is_absolute() else (self.root / path)

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
            msg = "unknown key (see README.md 'Settings' for the allowed keys)"
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
        raise SettingsError(f"{origin}: root: unknown key (see README.md 'Settings' for the allowed keys)")
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


def load_settings(path: Path | str | None = None) -> Settings:
    """The validated settings, read once per file version and process (the cache key is the
    path with its mtime and size: a rewritten file is read again)."""
    path = Path(path).resolve() if path else config_path()
    try:
        st = path.stat()
    except OSError:
        return read_settings(path)  # names the missing file
    return _cached(path, st.st_mtime_ns, st.st_size)
