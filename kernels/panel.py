"""Panel: one float32 matrix [T, F] per partition with a column registry.

Specialists read columns through `col(name)`, a view into the matrix: no per-specialist
copy of any input. The matrix is stored column-major (Fortran order) so that each column
view is contiguous and goes into the numba kernels without a copy (a C-ordered [T, F]
matrix would hand out strided columns, which the kernels' entry points would copy).
"""

from __future__ import annotations

import numpy as np


class Panel:
    def __init__(self, mat: np.ndarray, cols: list[str]):
        if mat.dtype != np.float32 or mat.ndim != 2 or not mat.flags["F_CONTIGUOUS"]:
            raise ValueError("Panel needs a 2-D float32 matrix in column-major (Fortran) order")
        if mat.shape[1] != len(cols) or len(set(cols)) != len(cols):
            raise ValueError(f"Panel: {mat.shape[1]} columns but names {cols}")
        self.mat, self.cols = mat, list(cols)
        self._idx = {c: i for i, c in enumerate(cols)}

    @classmethod
    def from_columns(cls, columns: dict[str, np.ndarray]) -> "Panel":
        names = list(columns)
        n = len(next(iter(columns.values()))) if columns else 0
        mat = np.empty((n, len(names)), dtype=np.float32, order="F")
        for j, name in enumerate(names):
            mat[:, j] = columns[name]
        return cls(mat, names)

    def __len__(self) -> int:
        return self.mat.shape[0]

    def col(self, name: str) -> np.ndarray:
        """A contiguous view of one column (shares memory with the panel)."""
        try:
            return self.mat[:, self._idx[name]]
        except KeyError:
            raise KeyError(f"panel has no column {name!r}; it has {self.cols}") from None

    def cols_view(self, names: list[str]) -> list[np.ndarray]:
        return [self.col(n) for n in names]
