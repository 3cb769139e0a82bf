"""The error raised for unusable input data.

Every message names where the data came from (file or package), and where known the row
(1-based, header excluded, in the order of the file) and the column, with what was found
and what was expected; it is one line whatever the parser said (fold_lines; an origin with a
newline or another unprintable character is written as Python's repr).
"""

from __future__ import annotations


def fold_lines(text: str) -> str:
    """`text` on one line: its non-blank lines, stripped, joined by "; " (a parser's message
    with a hint on its own lines, e.g. polars', becomes one line with the hint folded in)."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return "; ".join(lines)


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
        origin = origin if origin.isprintable() else repr(origin)  # a file name with a newline stays one line
        problem = fold_lines(problem)
        expected = fold_lines(expected) if expected else expected
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
