"""Progress inside a step: a yearly stage that loops over the years of its run says when each
year is done, as one INFO message `{stage} {year} done` on the step's log (stored in the
run's event log); pipeline.progress turns it into a progress line of the command."""

from __future__ import annotations

import re

YEAR_DONE = re.compile(r"^(?P<stage>\w+) (?P<year>\d{4}) done$")


def year_done(log, stage: str, year: int) -> None:
    """Tell `log` (a Dagster context.log, or None outside a run) that `stage` finished `year`."""
    if log is not None:
        log.info(f"{stage} {year} done")
