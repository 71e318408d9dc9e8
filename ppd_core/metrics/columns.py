"""A run's tables as numpy columns, and their conversion to pandas only when someone asks for a DataFrame.

The summary of a run is computed from ``Columns`` (a dict of column name -> numpy array, strings as object
arrays) so ``import ppd_core`` and ``python -m ppd_core run --json`` never import pandas (~0.35 s, and it
brings pyarrow). ``frame`` builds the DataFrame (importing pandas there); ``Deferred`` + ``LazyTable`` let
``RunResult.records`` / ``.nodes`` / ``.spans`` build theirs on first access and keep it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

Columns = dict[str, np.ndarray]


def as_columns(table: pd.DataFrame | Columns) -> Columns:
    """``table`` as numpy columns: a ``Columns`` dict as it is, a DataFrame column by column (``to_numpy``)."""
    if isinstance(table, dict):
        return table
    return {c: table[c].to_numpy() for c in table.columns}


def frame(cols: Columns | dict[str, list], order: Sequence[str] | None = None) -> pd.DataFrame:
    """The DataFrame of ``cols`` (columns in ``order``, default: the dict's)."""
    import pandas as pd
    return pd.DataFrame(cols, columns=list(order) if order is not None else None)


def rows_frame(rows: list[tuple], order: Sequence[str]) -> pd.DataFrame:
    """The DataFrame of a list of row tuples with the column names ``order``."""
    import pandas as pd
    return pd.DataFrame(rows, columns=list(order))


def mean(values: np.ndarray) -> float:
    """``float(np.mean(values))`` of a non-empty 1-D float, int or bool array, the same float (numpy's pairwise
    float64 sum divided by the count) without ``np.mean``'s dispatch, which costs more than the sum itself on
    the few hundred values of a run's group."""
    return float(np.add.reduce(values, dtype=np.float64)) / values.size


def share(mask: np.ndarray) -> float:
    """``float(mask.mean())`` of a non-empty boolean array (the count is exact, so the float is the same)."""
    return np.count_nonzero(mask) / mask.size


class Groups:
    """The distinct keys of ``keys`` found once (a stable sort, skipped when the keys are already in order, as
    a run's records are by conversation), for several ``reduce`` calls over the same grouping: ``reduce(values,
    ufunc)`` is ``ufunc`` (np.maximum, np.minimum, np.add) over each key's values, in ascending key order (what
    ``pd.Series(values).groupby(keys).max()`` etc. give; exact for max/min and integer sums, a float sum may
    differ from pandas' in the last bits). Empty ``keys``: an empty array."""
    __slots__ = ("order", "starts")

    def __init__(self, keys: np.ndarray):
        if keys.size == 0:
            self.order, self.starts = None, None
            return
        ordered = keys.size < 2 or bool(np.all(keys[1:] >= keys[:-1]))
        self.order = None if ordered else np.argsort(keys, kind="stable")
        k = keys if ordered else keys[self.order]
        self.starts = np.flatnonzero(np.concatenate(([True], k[1:] != k[:-1])))

    def reduce(self, values: np.ndarray, ufunc: np.ufunc) -> np.ndarray:
        if self.starts is None:
            return values[:0]
        return ufunc.reduceat(values if self.order is None else values[self.order], self.starts)


@dataclass(frozen=True)
class Deferred:
    """A table not built yet: ``build(*args)`` makes it on first access (see ``LazyTable``)."""
    build: Callable[..., Any]
    args: tuple


class LazyTable:
    """A data descriptor for a field of a frozen dataclass: it holds a table or a ``Deferred`` one, which is
    built on first read and kept (so pandas is imported only when a DataFrame is actually read)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.key = "_" + name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:                     # no class-level default: the dataclass field stays required
            raise AttributeError(self.key[1:])
        value = obj.__dict__[self.key]
        if isinstance(value, Deferred):
            value = value.build(*value.args)
            obj.__dict__[self.key] = value
        return value

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__[self.key] = value
