"""The error raised for unusable input data.

Every message names where the data came from (file or package), and where known the row
(1-based, header excluded, in the order of the file) and the column, with what was found
and what was expected.
"""

from __future__ import annotations


class InputDataError(ValueError):
    def __init__(
        self,
        origin: str,
        problem: str,
        *,
        column: str | None = None,
        row: int | None = None,
        expected: str | None = None,
    ):
        self.origin, self.problem, self.column, self.row, self.expected = (
            origin,
            problem,
            column,
            row,
            expected,
        )
        where = []
        if column is not None:
            where.append(f"column '{column}'")
        if row is not None:
            where.append(f"row {row}")
        text = f"{origin}: " + (", ".join(where) + ": " if where else "") + problem
        if expected:
            text += f"; expected {expected}"
        super().__init__(text)
