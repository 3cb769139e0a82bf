"""Thread defaults for worker processes.

Workers run one process per core (Dagster step processes, process pools over symbol
chunks); BLAS or OpenMP threads inside each would oversubscribe the cores. The variables
must be set before NumPy, numba or torch is imported, so this module imports neither.
A value the user exported already wins.
"""

from __future__ import annotations

import os

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")


def pin_worker_threads(n: int | None = None) -> dict[str, str]:
    """Set every thread variable to `n` (default: $TRADELAB_THREADS or 1) unless already set."""
    value = str(n if n is not None else os.environ.get("TRADELAB_THREADS", "1"))
    for var in THREAD_VARS:
        os.environ.setdefault(var, value)
    return thread_report()


def thread_report() -> dict[str, str | None]:
    """The thread variables as the process sees them now."""
    return {var: os.environ.get(var) for var in THREAD_VARS}
