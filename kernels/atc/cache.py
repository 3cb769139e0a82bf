"""The cpu path's MA cache: `MACache`, an LRU of MA arrays keyed by (series hash, family,
length) and bounded in bytes, and `ma_cache`, the instance `kernels.atc.compute(...,
cache=True)` and `kernels.atc.moving_averages(..., cache=True)` read and fill.

Contract: entries are float64 copies (callers never see or alias them); get/put count hits
and misses, stats() reports them with the size; thread-safe. Plain Python and NumPy.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

import numpy as np


class MACache:
    """LRU dict of MA arrays keyed by (series hash, family, length), bounded in bytes.

    get/put count hits and misses; stats() reports them with the size. Entries are float64
    copies (callers never see or alias them). Thread-safe.
    """

    def __init__(self, max_bytes: int = 256 * 2**20):
        self.max_bytes = int(max_bytes)
        self._data: OrderedDict = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.evictions = 0

    @staticmethod
    def series_key(x: np.ndarray) -> str:
        """Hash of one series' values (dtype and length included)."""
        x = np.ascontiguousarray(x)
        h = hashlib.blake2b(digest_size=16)
        h.update(f"{x.dtype.str}{x.shape}".encode())
        h.update(x.data)
        return h.hexdigest()

    def get(self, key):
        with self._lock:
            arr = self._data.get(key)
            if arr is None:
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return arr

    def put(self, key, arr: np.ndarray) -> None:
        arr = np.array(arr, dtype=np.float64, copy=True)
        with self._lock:
            if key in self._data:
                self._bytes -= self._data.pop(key).nbytes
            if arr.nbytes > self.max_bytes:
                return
            self._data[key] = arr
            self._bytes += arr.nbytes
            self._evict()

    def _evict(self) -> None:
        while self._bytes > self.max_bytes and self._data:
            _, old = self._data.popitem(last=False)
            self._bytes -= old.nbytes
            self.evictions += 1

    def resize(self, max_bytes: int) -> None:
        with self._lock:
            self.max_bytes = int(max_bytes)
            self._evict()

    def clear(self, reset_stats: bool = True) -> None:
        with self._lock:
            self._data.clear()
            self._bytes = 0
            if reset_stats:
                self.hits = self.misses = self.evictions = 0

    def stats(self) -> dict:
        with self._lock:
            total = self.hits + self.misses
            return {
                "hits": self.hits,
                "misses": self.misses,
                "hit_rate": self.hits / total if total else 0.0,
                "entries": len(self._data),
                "bytes": self._bytes,
                "max_bytes": self.max_bytes,
                "evictions": self.evictions,
            }

    def __len__(self) -> int:
        return len(self._data)


ma_cache = MACache()
