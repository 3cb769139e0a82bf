"""Single source of truth for stored tables: column names, order and dtypes.

Numbers are float32, enums int8, dates `Datetime("ns")` (naive, exchange-local session
date for daily bars), symbols strings. Ingress casts once with `TableSchema.cast`; object
columns are rejected. Later stages extend a schema (features from the feature registry).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from config.errors import InputDataError

DATE = pl.Datetime("ns")
NUMBER = pl.Float32
ENUM = pl.Int8


@dataclass(frozen=True)
class TableSchema:
    name: str
    columns: tuple[tuple[str, pl.DataType], ...]

    @property
    def names(self) -> list[str]:
        return [c for c, _ in self.columns]

    @property
    def dtypes(self) -> dict[str, pl.DataType]:
        return dict(self.columns)

    def extend(self, name: str, columns: list[tuple[str, pl.DataType]]) -> "TableSchema":
        return TableSchema(name, self.columns + tuple(columns))

    def empty(self) -> pl.DataFrame:
        return pl.DataFrame(schema=self.dtypes)

    def cast(self, df: pl.DataFrame, origin: str = "") -> pl.DataFrame:
        """Select the schema's columns in order and cast them (the one cast at ingress)."""
        assert_no_object(df, origin or self.name)
        missing = [c for c in self.names if c not in df.columns]
        if missing:
            raise InputDataError(
                origin or self.name,
                f"missing column(s) {missing}",
                expected=f"columns {self.names}",
            )
        return df.select([pl.col(c).cast(t) for c, t in self.columns])

    def mismatches(self, df: pl.DataFrame) -> dict[str, object]:
        """How `df` differs from this schema (empty when it has exactly its columns, order and
        dtypes): missing and unexpected columns, dtypes that differ, and the order."""
        got, want = df.schema, self.dtypes
        out: dict[str, object] = {}
        missing = [c for c in want if c not in got]
        extra = [c for c in got if c not in want]
        wrong = {c: f"{got[c]} (expected {want[c]})" for c in want if c in got and got[c] != want[c]}
        if missing:
            out["missing"] = missing
        if extra:
            out["unexpected"] = extra
        if wrong:
            out["dtypes"] = wrong
        if not (missing or extra) and list(got) != list(want):
            out["order"] = list(got)
        return out

    def check(self, df: pl.DataFrame, origin: str = "") -> None:
        """Raise unless `df` has exactly this schema's columns, order and dtypes."""
        got = list(df.schema.items())
        want = list(self.columns)
        if got != want:
            raise InputDataError(
                origin or self.name,
                f"schema {[(c, str(t)) for c, t in got]}",
                expected=f"{[(c, str(t)) for c, t in want]}",
            )


def assert_no_object(df: pl.DataFrame, origin: str) -> None:
    """Object dtypes never enter the store: they are slow, unportable and untyped."""
    for col, dtype in df.schema.items():
        if dtype == pl.Object:
            raise InputDataError(origin, "holds Python objects", column=col, expected="numbers, dates or strings")


PRICE_COLUMNS = ("open", "high", "low", "close")

RAW_BARS = TableSchema(
    "raw_bars",
    (
        ("date", DATE),
        ("symbol", pl.String),
        ("open", NUMBER),
        ("high", NUMBER),
        ("low", NUMBER),
        ("close", NUMBER),
        ("volume", NUMBER),
    ),
)


def features_schema(precision: str = "float32", columns: list[str] | None = None) -> TableSchema:
    """date, symbol, then the feature `columns` (default: the registry's, the `core` pack)
    in order."""
    from kernels.registry.features import FEATURE_NAMES

    dtype = pl.Float64 if precision == "float64" else pl.Float32
    names = FEATURE_NAMES if columns is None else columns
    return TableSchema("features", (("date", DATE), ("symbol", pl.String), *[(n, dtype) for n in names]))


def labels_schema(horizons: list[int]) -> TableSchema:
    """date, symbol, label_ret_h{H} (float32) per horizon, then label_bin_h{H} (int8, null
    where the future is not known yet)."""
    rets = [(f"label_ret_h{h}", NUMBER) for h in horizons]
    bins = [(f"label_bin_h{h}", ENUM) for h in horizons]
    return TableSchema("labels", (("date", DATE), ("symbol", pl.String), *rets, *bins))


def specialists_schema(columns: list[str] | None = None) -> TableSchema:
    """date, symbol, then spec_<name>_score (float32 in [-1, 1]) in registry order (or the
    given `columns`, those of the selected packs)."""
    from kernels.registry.specialists import SPECIALIST_COLUMNS

    names = SPECIALIST_COLUMNS if columns is None else columns
    return TableSchema("specialists", (("date", DATE), ("symbol", pl.String), *[(c, NUMBER) for c in names]))


REGIME = TableSchema(
    "regime",
    (("date", DATE), ("regime", ENUM), ("index_close", NUMBER), ("members", pl.Int32)),
)


def require_stored(frame, table: str, experiment: str, command: str) -> None:
    """A ValueError (an input error: exit 2) when nothing of `table` is stored for the
    experiment (a new experiment, or the stages that write it never ran), naming the command
    that stores it; `frame` is the (lazy) input as the IO manager returned it."""
    if "symbol" not in frame.collect_schema().names():
        raise ValueError(f"experiment {experiment!r} has no stored {table}: run "
                         f"`python -m pipeline.cli --experiment {experiment} {command}` first")
