"""Dagster's steps from one time window to the next, remembered per definition and instant.

A `TimeWindowPartitionMapping` with an offset (the halo years that `features`, `labels` and
`specialists` read from `raw_bars`) walks to the neighbouring window once per year of offset,
for every upstream key of every symbol of a run, through
`TimeWindowPartitionsDefinition.get_prev_partition_window(dt, respect_bounds=False)` (and
`get_next_...`). Each call starts a croniter walk (about 0.2 ms for the yearly cron): a build of
2 symbols x 27 years made 2,052 of them, a fifth of that command's profiled time (LOG "make test:
the last minutes").

Without bounds the answer depends only on the definition (a frozen, hashable Dagster record)
and the instant: Dagster's own code reads nothing of `dt` but `dt.timestamp()` there. So
`install()` wraps the two methods: calls with `respect_bounds=False` are answered from a
per-process table keyed by (definition, timestamp); calls with bounds (which read the clock
for an open-ended definition) run Dagster's code as before. A Dagster whose methods no longer
have that signature is left alone (`installed()` says whether the table is in use; a test
pins it for the installed Dagster).
"""

from __future__ import annotations

import functools
import inspect

from dagster import TimeWindowPartitionsDefinition

MAX_ENTRIES = 65_536  # (definition, instant) answers kept per method; a table beyond it starts over
_MARK = "_tradelab_memo"
_PARAMS = {"get_prev_partition_window": ["self", "start_dt", "respect_bounds"],
           "get_next_partition_window": ["self", "end_dt", "respect_bounds"]}


def _remembering(method):
    table: dict = {}

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        # Dagster calls (dt, respect_bounds=...) or (dt, respect_bounds); any other form
        # (the datetime by keyword) runs Dagster's code unremembered
        if len(args) == 1 and kwargs.keys() <= {"respect_bounds"}:
            dt, respect_bounds = args[0], kwargs.get("respect_bounds", True)
        elif len(args) == 2 and not kwargs:
            dt, respect_bounds = args
        else:
            return method(self, *args, **kwargs)
        if respect_bounds:
            return method(self, dt, respect_bounds)
        key = (self, dt.timestamp())
        try:
            return table[key]
        except KeyError:
            pass
        window = method(self, dt, False)
        if len(table) >= MAX_ENTRIES:
            table.clear()
        table[key] = window
        return window

    setattr(wrapper, _MARK, True)
    return wrapper


def install() -> bool:
    """Wrap the two methods once per process; False (nothing changed) when the installed
    Dagster's methods do not have the expected parameters."""
    for name, params in _PARAMS.items():
        method = getattr(TimeWindowPartitionsDefinition, name, None)
        if method is None or (not getattr(method, _MARK, False)
                              and list(inspect.signature(method).parameters) != params):
            return False
    for name in _PARAMS:
        method = getattr(TimeWindowPartitionsDefinition, name)
        if not getattr(method, _MARK, False):
            setattr(TimeWindowPartitionsDefinition, name, _remembering(method))
    return True


def installed() -> bool:
    """Whether both methods answer from the table in this process."""
    return all(getattr(getattr(TimeWindowPartitionsDefinition, name), _MARK, False) for name in _PARAMS)
