"""Turns whatever a user passes to ``fit``/``score`` into :class:`Comparisons`."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .comparisons import ComparisonGraph, Comparisons
from .convert import as_pandas, from_cblearn, from_frame, is_tensor
from .validation import InvalidComparisonsError


def as_comparisons(X, y=None, sample_weight=None, n_objects: int | None = None) -> Comparisons:
    """Accepts :class:`Comparisons`, a :class:`ComparisonGraph`, a DataFrame with named
    columns (pandas, polars or pyarrow; see :func:`roembed.data.convert.from_frame`; one of 3 or 4 columns
    with the default names of a frame made from an array, 0, 1, ... or column_0, column_1, ..., is read as
    that array), an (m, 3) / (m, 4) array of
    object indices or of object names (strings: numbered in sorted order and kept as
    ``object_names``, as the file readers do), or cblearn's ``tensor-count`` tensor (n x n x n, sparse as
    cblearn returns it, or dense; :func:`roembed.data.convert.from_cblearn`).

    ``y`` (cblearn's ``list-boolean`` responses) is optional: a row whose ``y`` is
    False or -1 asserts the opposite of what its indices say and is flipped.
    ``sample_weight`` multiplies the response weights (one number multiplies every row's, as in scikit-learn).
    """
    if isinstance(X, ComparisonGraph):
        X = X.to_comparisons()
    X = as_pandas(X)  # a polars or pyarrow frame: by column name, as pandas'
    if isinstance(X, pd.DataFrame) and X.shape[1] in (3, 4) and _default_names(X.columns):
        X = X.to_numpy()  # pd.DataFrame(array): columns 0, 1, 2 name no roles, so the rows are read as the array's
    if isinstance(X, pd.DataFrame):
        X = from_frame(X, n_objects=n_objects)
    if is_tensor(X):  # cblearn's tensor-count form, sparse or dense
        X = from_cblearn(X, format="tensor-count", **({} if n_objects is None else {"n_objects": n_objects}))
    if not isinstance(X, Comparisons):
        X = _from_array(X, n_objects)
    elif n_objects is not None and n_objects != X.n_objects:
        X = Comparisons(X.quadruplets, n_objects=n_objects, weight=X.weight, annotator=X.annotator,
                        timestamp=X.timestamp, response_time=X.response_time, gold=X.gold, extra=X.extra)
    if y is not None:
        y = np.asarray(y).reshape(-1)
        if len(y) != len(X):
            raise InvalidComparisonsError(f"got {len(y)} responses y for {len(X)} comparisons")
        if y.dtype.kind == "b":
            wrong = ~y
        else:
            if not np.isin(y, (-1, 1, 0)).all():
                r = int(np.flatnonzero(~np.isin(y, (-1, 1, 0)))[0])
                raise InvalidComparisonsError(f"row {r}: response y={y[r].item()!r} is not True/False or +1/-1")
            wrong = y <= 0
        flipped = X.flipped(np.flatnonzero(wrong))  # written as asserted: the same answers, right or wrong as before
        X = flipped if X.gold is None else flipped.with_gold(X.gold)
    if sample_weight is not None:
        from .validation import check_weights

        if np.ndim(sample_weight) == 0 and isinstance(sample_weight, (int, float, np.number)) \
                and not isinstance(sample_weight, (bool, np.bool_)):
            sample_weight = np.full(len(X), sample_weight, dtype=float)  # one number for every row, as scikit-learn
        X = X.with_weight(X.weight * check_weights(sample_weight, len(X)))
    return X


def _default_names(columns: pd.Index) -> bool:
    """The names a frame made from an array gets: pandas' 0, 1, ..., polars' column_0, column_1, ..."""
    width = len(columns)
    return columns.equals(pd.RangeIndex(width)) or list(columns) == [f"column_{i}" for i in range(width)]


def _from_array(data, n_objects: int | None) -> Comparisons:
    """Comparisons from an array (or rows) of indices, or of names (every entry a string).  What is no array
    of rows (ragged rows, None, a set, a generator) goes to :class:`Comparisons` as given, whose error names it."""
    try:
        array = np.asarray(data)
    except ValueError:  # ragged rows
        return Comparisons(data, n_objects=n_objects)
    if array.ndim == 0:  # None, a set, a file name: Comparisons names what it got
        return Comparisons(data, n_objects=n_objects)
    names = array.dtype.kind in "US" or (array.dtype.kind == "O" and array.size > 0
                                         and all(isinstance(v, str) for v in array.flat))
    if not names:
        return Comparisons(array, n_objects=n_objects)
    object_names, codes = np.unique(array.astype(str), return_inverse=True)
    return Comparisons(codes.reshape(array.shape), n_objects=n_objects, object_names=tuple(object_names))
