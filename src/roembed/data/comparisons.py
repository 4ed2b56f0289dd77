"""The comparison data model: raw responses and the comparison graph.

A *comparison* is a quadruplet ``(i, j, l, k)`` that says ``d(i, j) < d(l, k)``;
a triplet ``(i, j, k)`` ("i is closer to j than to k") is the case ``l = i``.
:class:`Comparisons` holds raw responses, one row each, with optional annotator
ids, timestamps, response times and weights.  :meth:`Comparisons.aggregate`
builds the :class:`ComparisonGraph` of Ma, Xu & Cao (2019): its vertices are
object pairs and each directed edge ``c = (i, j, l, k)`` carries the total weight
(vote count) ``w_c`` of the responses that asserted it.  Opposite directions are
separate edges, so contradictory votes stay visible.

Both types are immutable: arrays are read-only and methods return new objects.
"""
from __future__ import annotations

import copy
import os
from functools import cached_property
from typing import Sequence

import numpy as np
import pandas as pd

from .._factorize import factorize
from .._kernels import counting_sort, gather_edge_objects, number_runs, reverse_edges, sorted_pair_slots
from .._threads import block_bounds, in_blocks
from .validation import (InvalidComparisonsError, RowLocator, check_annotators, check_copies, check_extra, check_gold,
                         check_n_objects, check_positions, check_quadruplets, check_weights, count_noun, index_array,
                         names_sequence, per_comparison_shape)


def index_dtype(largest: int):
    """int32 when every index (and count) below ``largest`` fits, else int64."""
    return np.int32 if largest < np.iinfo(np.int32).max else np.int64


def _edge_objects(pairs: np.ndarray, edge_pairs: np.ndarray, keep: np.ndarray | None = None) -> np.ndarray:
    """``pairs[edge_pairs]`` side by side, (E, 4), for the rows ``keep`` (a mask) of ``edge_pairs`` or all:
    a compiled loop (:func:`~roembed._kernels.gather_edge_objects`) writing straight into the result, in
    blocks on the fit's threads, so no edge-long temporaries exist beside it."""
    every = np.empty(0, dtype=bool)
    if keep is None:
        out = np.empty((len(edge_pairs), 4), pairs.dtype)
        in_blocks(lambda lo, hi: gather_edge_objects(pairs, edge_pairs, every, lo, hi, out, lo), len(edge_pairs))
        return out
    keep, bounds = np.asarray(keep, dtype=bool), block_bounds(len(edge_pairs))
    rows = np.cumsum([0] + [np.count_nonzero(keep[lo:hi]) for lo, hi in zip(bounds[:-1], bounds[1:])])
    first = dict(zip(bounds[:-1], rows[:-1].tolist()))  # the first row each block writes
    out = np.empty((int(rows[-1]), 4), pairs.dtype)
    in_blocks(lambda lo, hi: gather_edge_objects(pairs, edge_pairs, keep, lo, hi, out, first[lo]), len(edge_pairs))
    return out


def _ones(n: int) -> np.ndarray:
    """``n`` ones, read-only, with no memory per element."""
    return np.broadcast_to(1.0, (n,))


def _frozen(a: np.ndarray) -> np.ndarray:
    """``a`` itself, made read-only (no copy: for arrays nobody else holds)."""
    a.flags.writeable = False
    return a


def _readonly(a: np.ndarray | None) -> np.ndarray | None:
    """A read-only copy of ``a``; an array already read-only that owns its memory is shared, not copied."""
    if a is not None and (a.flags.writeable or not a.flags.owndata):
        a = np.array(a, copy=True)
        a.flags.writeable = False
    return a


def canonical_quadruplets(quads: np.ndarray) -> np.ndarray:
    """Writes each quadruplet in the one form used as its key in the graph.

    ``d`` is symmetric, so ``(i, j, l, k)``, ``(j, i, l, k)`` and ``(i, j, k, l)`` are
    the same comparison.  Each pair is sorted, except that an object shared by
    both pairs goes first in both: a triplet stays ``(anchor, closer, anchor, farther)``.
    """
    i, j, l, k = np.asarray(quads, dtype=np.int64).T
    a, b = np.minimum(i, j), np.maximum(i, j)
    c, d = np.minimum(l, k), np.maximum(l, k)
    first_shared = (b == c) | (b == d)  # shared object is b: write pair 1 as (b, a)
    a, b = np.where(first_shared, b, a), np.where(first_shared, a, b)
    second_shared = d == a  # shared object is d: write pair 2 as (d, c)
    c, d = np.where(second_shared, d, c), np.where(second_shared, c, d)
    return np.stack([a, b, c, d], axis=1)


def annotator_index(comparisons) -> tuple[np.ndarray, np.ndarray]:
    """``(ids, who)``: the distinct annotator ids of ``comparisons``, sorted, and each response's position
    among them (read-only; kept by a :class:`Comparisons`, whose annotator stage asks several times)."""
    if isinstance(comparisons, Comparisons):
        return comparisons._annotator_index
    return _annotator_index(comparisons.annotator)


def _annotator_index(annotator) -> tuple[np.ndarray, np.ndarray]:
    ids, who = distinct_values(annotator)
    return _frozen(ids), _frozen(who.astype(index_dtype(len(ids)), copy=False))


def distinct_values(values) -> tuple[np.ndarray, np.ndarray]:
    """``(distinct, code)`` with ``values == distinct[code]`` and ``distinct`` sorted: what
    ``np.unique(values, return_inverse=True)`` gives, or, for objects that cannot be ordered (mixed types),
    ``distinct`` in order of appearance.

    Text and integers are numbered by hashing (:func:`roembed._factorize.factorize`) and only the distinct values sorted;
    ``np.unique`` sorts every value, and Python strings compare slowly: 10^7 worker ids over 20,000 workers took
    30.4 s against 0.80 s so (``benchmarks/bench_write.py``; integers 3.0 s against 0.2 s).  Floats go to
    ``np.unique`` (its NaN and -0.0 rules)."""
    values = np.asarray(values).reshape(-1)
    if values.dtype.kind not in "OUSiu":
        distinct, code = np.unique(values, return_inverse=True)
        return distinct, code.reshape(-1)
    code, distinct = factorize(values, missing=False)
    try:
        order = np.argsort(distinct, kind="stable")
    except TypeError:  # text beside numbers: no order
        return distinct, code
    rank = np.empty(len(order), dtype=np.intp)
    rank[order] = np.arange(len(order))
    distinct = distinct[order]
    if values.dtype.kind in "US":
        distinct = distinct.astype(values.dtype)
    return distinct, rank[code]


def annotator_units(quadruplets, who) -> np.ndarray:
    """Per response, the index of its *unit*: one annotator's responses on one set of objects.

    The two triplets of an odd-one-out answer, ``(a, b, a, o)`` and ``(b, a, b, o)``, share a unit, so tests
    and likelihoods that count units count the answer once.  ``who``: one annotator index (or id) per row."""
    quadruplets = np.asarray(quadruplets)
    small = len(quadruplets) == 0 or int(quadruplets.max()) < 2**31 - 1
    objects = quadruplets.astype(np.int32 if small else np.int64)  # a copy to sort in place: 16 bytes a row
    objects.sort(axis=1)
    objects[:, 1:][objects[:, 1:] == objects[:, :-1]] = -1
    objects.sort(axis=1)  # the set of objects, the shared one written as -1
    who = np.asarray(who).reshape(-1)
    if who.dtype.kind not in "iu" or (len(who) and who.min() < 0):  # ids as 0, 1, ... in their sorted order
        who = distinct_values(who)[1]
    return _row_numbers([who, *objects.T])


def _row_numbers(columns: list) -> np.ndarray:
    """Per row of integer ``columns`` (entries >= -1), the index of its value among the distinct rows in
    lexicographic order (``np.unique(np.column_stack(columns), axis=0, return_inverse=True)[1]``, 4-15x faster).

    The columns are folded left to right into one int64 key (a mixed radix); where the next column would overflow
    it, the key so far is first replaced by its rank among its distinct values, which keeps the order.  A few
    int64 arrays of one entry a row: at 10^7 responses the stacked rows and their lexsort took 1.3 GB."""
    key, size = None, 1
    for column in columns:
        digit = np.asarray(column).astype(np.int64) + 1
        radix = int(digit.max()) + 1 if len(digit) else 1
        if key is None:
            key, size = digit, radix
            continue
        if size * radix >= 2**62:
            distinct, key = np.unique(key, return_inverse=True)
            key, size = key.reshape(-1), len(distinct)
        key = key * radix + digit
        size *= radix
        del digit
    if key is None or len(key) == 0:
        return np.zeros(0 if key is None else len(key), dtype=np.int64)
    return np.unique(key, return_inverse=True)[1].reshape(-1)


class Comparisons:
    """Raw comparison responses: row ``r`` says ``d(i, j) < d(l, k)`` for ``quadruplets[r]``.

    Parameters
    ----------
    quadruplets : array of shape (m, 4) or (m, 3)
        Object indices.  Three columns ``(i, j, k)`` are triplets ``(i, j, i, k)``.
    n_objects : int, optional
        Number of objects; defaults to the largest index + 1 (or ``len(object_names)``).
    weight : array of shape (m,), optional
        Non-negative real weight of each response (default 1).
    copies : array of shape (m,), optional
        How many independent draws of its query each response's weight stands for (default 1).
        A bootstrap that draws a query ``c`` times gives its responses weight ``c w`` and copies
        ``c``: the weightings that combine votes within a query (``net``, ``majority``,
        ``paper``) then see ``c`` copies of the query's own votes, not one query with ``c``
        times the votes (which majority voting would count once).  See
        :attr:`ComparisonGraph.copies`.
    annotator, timestamp, response_time : arrays of shape (m,), optional
        Per-response metadata.  Annotator ids may be strings or integers, not both (one id missing, or a mix,
        raises naming the row; the file readers turn a mix into text).
    gold : array of shape (m,), optional
        Known-answer questions: 1 where the response answers one correctly, 0 where it answers
        one wrongly, NaN for an ordinary question.  With annotator ids they anchor the annotator
        types of :class:`~roembed.RobustOrdinalEmbedding` (see :mod:`roembed.annotator_model`).
    position : array of shape (m,), optional
        Where on the screen the chosen option was: 0-based (an odd-one-out answer's ``odd_position``;
        0 for salmon's left, 1 for its right).  With annotator ids, the annotator table tests who
        keeps picking one position (``position_biased`` in
        :func:`roembed.annotators.annotator_reliability`); the fit does not read it.
    object_names : sequence of str, optional
        ``object_names[o]`` is the name of object ``o``.
    extra : mapping of str to arrays of shape (m,), optional
        Any further per-response columns (the sampler that chose the query, a
        known-answer flag, ``tie`` ...): kept through subsetting, concatenation and
        writing, and summarised per comparison in ``ComparisonGraph.edge_table``.
    """

    def __init__(
        self,
        quadruplets,
        *,
        n_objects: int | None = None,
        weight=None,
        copies=None,
        annotator=None,
        timestamp=None,
        response_time=None,
        gold=None,
        position=None,
        object_names: Sequence[str] | None = None,
        extra=None,
        where: RowLocator | None = None,
    ):
        where = where or RowLocator()
        check_n_objects(n_objects)
        try:
            arr = np.asarray(quadruplets)
        except ValueError:  # ragged rows
            widths = [len(row) for row in quadruplets]
            r = next(r for r, w in enumerate(widths) if w != widths[0])
            raise InvalidComparisonsError(
                f"{where(r)}: has {widths[r]} indices but row 0 has {widths[0]}"
                + (": triplets (3) and quadruplets (4) cannot be mixed" if {widths[r], widths[0]} == {3, 4} else "")
            ) from None
        if arr.ndim != 2 or arr.shape[1] not in (3, 4):
            if arr.size == 0:
                raise InvalidComparisonsError("no comparisons: the input is empty")
            if isinstance(quadruplets, (str, bytes, os.PathLike)):  # fit("votes.csv"): was "got shape ()"
                raise InvalidComparisonsError(
                    f"expected comparisons, got a text or path ({os.fsdecode(quadruplets)!r}): to fit a file, read "
                    "it first with roembed.read_comparisons(path)")
            if arr.ndim == 0 and arr.dtype == object:  # a generator, an iterator, a set: read in no order
                got = "None" if quadruplets is None else f"a {type(quadruplets).__name__}"
                raise InvalidComparisonsError(f"expected rows of 3 (triplets) or 4 (quadruplets) object indices, "
                                              f"got {got}: make it a list or an array"
                                              + (" (a dict of columns: pandas.DataFrame(it))"
                                                 if isinstance(quadruplets, dict) else ""))
            raise InvalidComparisonsError(
                "expected rows of 3 (triplets) or 4 (quadruplets) object indices, got "
                + (f"one value ({arr.item()!r})" if arr.ndim == 0 else f"shape {arr.shape}"))
        if len(arr) == 0:
            raise InvalidComparisonsError("no comparisons: the input is empty")
        quads = index_array(arr, where)
        if quads.shape[1] == 3:
            quads = quads[:, [0, 1, 0, 2]]
        if object_names is not None:
            object_names = names_sequence(object_names)
            twice = pd.Index(object_names).duplicated()
            if twice.any():  # were kept: two objects of one name, matched by name to the first only
                first = int(np.flatnonzero(twice)[0])
                raise InvalidComparisonsError(f"object_names name {object_names[first]!r} twice (objects "
                                              f"{object_names.index(object_names[first])} and {first})")
            if n_objects is None:
                n_objects = len(object_names)
            elif n_objects != len(object_names):
                raise InvalidComparisonsError(f"n_objects={n_objects} but {len(object_names)} object names")
        if n_objects is None:
            n_objects = int(quads.max()) + 1
        check_quadruplets(quads, int(n_objects), where, triplets=arr.shape[1] == 3)
        m = len(quads)
        self._quads = _readonly(quads)
        self._weight = _readonly(check_weights(weight, m, where))
        self._copies = None if copies is None else _readonly(check_copies(copies, m, where))
        self._n_objects = int(n_objects)
        self._object_names = object_names
        self._meta = {}
        self._meta["annotator"] = None if annotator is None else _readonly(check_annotators(annotator, m, where))
        for name, values in (("timestamp", timestamp), ("response_time", response_time)):
            if values is not None:
                values = np.asarray(values)
                per_comparison_shape(values, m, name)
            self._meta[name] = _readonly(values)
        self._meta["gold"] = None if gold is None else _readonly(check_gold(gold, m, where))
        self._meta["position"] = None if position is None else _readonly(check_positions(position, m, where))
        self._extra = {}
        check_extra(extra)
        for name, values in dict(extra or {}).items():
            name = str(name)
            if name in self._meta or name in ("weight", "i", "j", "l", "k"):
                raise InvalidComparisonsError(f"extra column {name!r} clashes with a built-in column")
            values = np.asarray(values)
            per_comparison_shape(values, m, f"extra column {name!r}")
            self._extra[name] = _readonly(values)

    # -- constructors -------------------------------------------------------
    @classmethod
    def from_triplets(cls, triplets, **kwargs) -> "Comparisons":
        """Triplets ``(i, j, k)``: "i is closer to j than to k"."""
        arr = np.asarray(triplets)
        if arr.ndim != 2 or arr.shape[1] != 3:
            raise InvalidComparisonsError(f"expected an (m, 3) array of triplets, got shape {arr.shape}")
        return cls(arr, **kwargs)

    @classmethod
    def from_quadruplets(cls, quadruplets, **kwargs) -> "Comparisons":
        """Quadruplets ``(i, j, l, k)``: "d(i, j) < d(l, k)"."""
        arr = np.asarray(quadruplets)
        if arr.ndim != 2 or arr.shape[1] != 4:
            raise InvalidComparisonsError(f"expected an (m, 4) array of quadruplets, got shape {arr.shape}")
        return cls(arr, **kwargs)

    # -- accessors ----------------------------------------------------------
    quadruplets = property(lambda self: self._quads, doc="(m, 4) int64 object indices, read-only.")
    weight = property(lambda self: self._weight, doc="(m,) float64 response weights.")

    @property
    def copies(self) -> np.ndarray:
        """(m,) float64: independent draws of its query each response stands for (ones unless given)."""
        return np.ones(len(self._quads)) if self._copies is None else self._copies

    n_objects = property(lambda self: self._n_objects)
    object_names = property(lambda self: self._object_names, doc="Tuple of names, or None.")
    annotator = property(lambda self: self._meta["annotator"])
    timestamp = property(lambda self: self._meta["timestamp"])
    response_time = property(lambda self: self._meta["response_time"])
    gold = property(lambda self: self._meta["gold"], doc="(m,) float64 known-answer marks (1 / 0 / NaN), or None.")
    position = property(lambda self: self._meta["position"], doc="(m,) int64 screen positions of the chosen options "
                                                                  "(0-based), or None.")
    extra = property(lambda self: dict(self._extra), doc="Further per-response columns: name -> (m,) array.")

    @property
    def shape(self) -> tuple[int, int]:
        """``(m, 4)``; lets scikit-learn's splitters index comparisons like an array."""
        return self._quads.shape

    def __len__(self) -> int:
        return len(self._quads)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        """``np.asarray(comparisons)``: the ``(m, 4)`` quadruplets (as :attr:`shape` says), a copy.  Only the
        object indices: weights, annotators and names stay with the :class:`Comparisons`."""
        if copy is False:
            raise ValueError("Comparisons cannot be viewed as an array without a copy")
        return np.array(self._quads, dtype=dtype)

    @cached_property
    def is_triplet(self) -> bool:
        """True when every row is a triplet (``l == i``)."""
        return bool(np.all(self._quads[:, 0] == self._quads[:, 2]))

    @property
    def triplets(self) -> np.ndarray:
        """(m, 3) array ``(i, j, k)``; raises if some row is not a triplet."""
        if not self.is_triplet:
            r = int(np.flatnonzero(self._quads[:, 0] != self._quads[:, 2])[0])
            raise InvalidComparisonsError(f"row {r} is a quadruplet, not a triplet: "
                                          f"{tuple(self._quads[r].tolist())}")
        return self._quads[:, [0, 1, 3]]

    @cached_property
    def _annotator_index(self) -> tuple[np.ndarray, np.ndarray]:
        if self.annotator is None:
            raise InvalidComparisonsError("these comparisons have no annotator ids")
        return _annotator_index(self.annotator)

    @cached_property
    def answer_units(self) -> np.ndarray:
        """Per response, the index of its answer (:func:`annotator_units`: one annotator's responses on one set
        of objects); needs annotator ids."""
        return _readonly(annotator_units(self._quads, self._annotator_index[1]))

    @cached_property
    def position_counts(self) -> np.ndarray:
        """``(n_annotators, k)`` int64: how many answers (:attr:`answer_units`) each annotator (sorted ids) gave at
        each screen position ``0 .. k - 1`` (``k``: the number of positions seen, at least 2); needs annotator ids
        and positions.  The responses of one answer share its position; the first one's counts."""
        if self.position is None:
            raise InvalidComparisonsError("these comparisons have no screen positions")
        ids, who = self._annotator_index
        _, first = np.unique(self.answer_units, return_index=True)
        counts = np.zeros((len(ids), max(int(self.position.max()) + 1, 2)), dtype=np.int64)
        np.add.at(counts, (who[first], self.position[first]), 1)
        return _readonly(counts)

    @cached_property
    def used_objects(self) -> np.ndarray:
        """Sorted indices of the objects that occur in at least one comparison."""
        used = np.zeros(self._n_objects, dtype=bool)
        used[self._quads.reshape(-1)] = True
        return np.flatnonzero(used)

    def object_index(self, names) -> np.ndarray:
        """Indices of the named objects (``object_names.index`` for many names at once)."""
        if self._object_names is None:
            raise InvalidComparisonsError("these comparisons have no object names")
        names = np.atleast_1d(np.asarray(names, dtype=object)).astype(str)
        index = pd.Index(self._object_names).get_indexer(names)
        if (index < 0).any():
            raise InvalidComparisonsError(f"unknown object name {str(names[index < 0][0])!r}")
        return index

    def renumbered(self, object_names) -> "Comparisons":
        """The same responses with objects numbered as in ``object_names`` (e.g. a fitted estimator's
        ``object_names_``), which must hold every named object that occurs here."""
        if self._object_names is None:
            raise InvalidComparisonsError("these comparisons have no object names")
        target = names_sequence(object_names)  # "abcd" was four names
        twice = pd.Index(target).duplicated()
        if twice.any():  # was pandas' "Reindexing only valid with uniquely valued Index objects"
            raise InvalidComparisonsError(f"object_names name {target[int(np.flatnonzero(twice)[0])]!r} twice")
        new_index = pd.Index(target).get_indexer(pd.Index(self._object_names))
        used = self.used_objects
        unknown = used[new_index[used] < 0]
        if len(unknown):
            raise InvalidComparisonsError(f"object {self._object_names[unknown[0]]!r} is not among the "
                                          f"{len(target)} object names")
        return self._replace(quadruplets=new_index[self._quads], n_objects=len(target), object_names=target)

    def drop_unused_objects(self) -> "Comparisons":
        """The same responses over only the objects that occur, renumbered in their old order.

        ``used_objects[new]`` is the old index of object ``new``; names follow their objects.
        """
        used = self.used_objects
        return self if len(used) == self._n_objects else self.take_objects(used)

    def take_objects(self, objects) -> "Comparisons":
        """The same responses over ``objects`` (sorted old indices, e.g. another set's ``used_objects``),
        renumbered: ``objects[new]`` is the old index of object ``new``.  Every object that occurs here
        must be among them; names follow their objects."""
        objects = np.asarray(objects, dtype=np.int64)
        if objects.ndim != 1 or (len(objects) > 1 and (np.diff(objects) <= 0).any()):
            raise ValueError("objects must be sorted, distinct old indices")
        new_index = np.full(max(self._n_objects, int(objects.max(initial=-1)) + 1), -1, dtype=np.int64)
        new_index[objects] = np.arange(len(objects))
        used = self.used_objects
        missing = used[new_index[used] < 0]
        if len(missing):
            raise InvalidComparisonsError(f"object {self._name(missing[0])} is not among the {len(objects)} objects kept")
        names = None
        if self._object_names is not None:
            names = tuple(self._object_names[o] if o < self._n_objects else f"#{o}" for o in objects)
        return self._replace(quadruplets=new_index[self._quads], n_objects=len(objects), object_names=names)

    def _name(self, o: int) -> str:
        """How messages name object ``o``: its name when there are names, else its index."""
        return repr(self._object_names[o]) if self._object_names is not None else str(int(o))

    def __repr__(self) -> str:
        extra = ", with annotators" if self.annotator is not None else ""
        extra += ", with gold answers" if self.gold is not None else ""
        extra += ", with screen positions" if self.position is not None else ""
        kind = count_noun(len(self), "triplet" if self.is_triplet else "quadruplet")
        return f"Comparisons({kind} over {self.n_objects} objects{extra})"

    # -- derived objects ----------------------------------------------------
    def _replace(self, **changes) -> "Comparisons":
        fields = dict(
            quadruplets=self._quads, n_objects=self._n_objects, weight=self._weight, copies=self._copies,
            object_names=self._object_names, extra=self._extra, **self._meta,
        )
        fields.update(changes)
        return Comparisons(**fields)

    def __getitem__(self, index) -> "Comparisons":
        """Subset of rows (integer array, slice or boolean mask; one integer gives that row alone, so
        ``for row in comparisons`` walks one-row subsets); objects are kept."""
        index = np.atleast_1d(np.arange(len(self))[index])
        meta = {k: (None if v is None else v[index]) for k, v in self._meta.items()}
        extra = {k: v[index] for k, v in self._extra.items()}
        copies = None if self._copies is None else self._copies[index]
        return self._replace(quadruplets=self._quads[index], weight=self._weight[index], copies=copies, extra=extra,
                             **meta)

    def with_weight(self, weight, copies=None) -> "Comparisons":
        """The same responses with other weights (and other ``copies`` when given; kept otherwise).  Only the
        new columns are checked: the rest are this object's, already checked and read-only, and shared."""
        new = copy.copy(self)  # the read-only arrays and the cached properties of the rows, shared
        new._weight = _readonly(check_weights(weight, len(self), RowLocator()))
        if copies is not None:
            new._copies = _readonly(check_copies(copies, len(self), RowLocator()))
        return new

    def with_gold(self, gold) -> "Comparisons":
        """The same responses with these known-answer marks (1 right, 0 wrong, NaN an ordinary question)."""
        return self._replace(gold=gold)

    def with_extra(self, **columns) -> "Comparisons":
        """The same responses with further per-response columns (replacing any of the same name)."""
        return self._replace(extra={**self._extra, **columns})

    def flipped(self, rows=None) -> "Comparisons":
        """Reverses the answer of the given rows (all by default): ``(i,j,l,k) -> (l,k,i,j)``; a reversed
        answer to a known-answer question is right where it was wrong and wrong where it was right."""
        quads = np.array(self._quads)
        rows = np.arange(len(self))[slice(None) if rows is None else rows]
        quads[rows] = quads[rows][:, [2, 3, 0, 1]]
        if self.gold is None:
            return self._replace(quadruplets=quads)
        gold = np.array(self.gold)
        gold[rows] = 1.0 - gold[rows]
        return self._replace(quadruplets=quads, gold=gold)

    def relabel(self, permutation) -> "Comparisons":
        """Renames object ``o`` to ``permutation[o]`` (names follow their objects)."""
        perm = np.asarray(permutation, dtype=np.int64)
        if sorted(perm.tolist()) != list(range(self._n_objects)):
            raise InvalidComparisonsError("relabel needs a permutation of range(n_objects)")
        names = None
        if self._object_names is not None:
            inv = np.argsort(perm)
            names = tuple(self._object_names[o] for o in inv)
        return self._replace(quadruplets=perm[self._quads], object_names=names)

    @staticmethod
    def concat(parts: Sequence["Comparisons"]) -> "Comparisons":
        """Stacks responses over the same objects."""
        if not parts:
            raise InvalidComparisonsError("nothing to concatenate")
        first = parts[0]
        for r, part in enumerate(parts):
            if not isinstance(part, Comparisons):  # was "'list' object has no attribute 'n_objects'"
                raise TypeError(f"concat takes Comparisons; part {r} is a {type(part).__name__}")
            if part.n_objects != first.n_objects or part.object_names != first.object_names:
                differ = (f"{part.n_objects} objects against {first.n_objects}" if part.n_objects != first.n_objects
                          else "other object names" if part.object_names and first.object_names
                          else "object names where the other has none")
                raise InvalidComparisonsError(f"can only concatenate comparisons over the same objects: part {r} "
                                              f"has {differ} (Comparisons.renumbered puts named parts on one "
                                              "numbering)")
        meta = {}
        for key in first._meta:
            vals = [p._meta[key] for p in parts]
            if all(v is None for v in vals):
                meta[key] = None
            elif any(v is None for v in vals):
                raise InvalidComparisonsError(f"some parts have {key} values and some do not")
            else:
                meta[key] = np.concatenate(vals)
        if any(set(p._extra) != set(first._extra) for p in parts):
            raise InvalidComparisonsError("can only concatenate comparisons with the same extra columns")
        extra = {key: np.concatenate([p._extra[key] for p in parts]) for key in first._extra}
        copies = None if all(p._copies is None for p in parts) else np.concatenate([p.copies for p in parts])
        return first._replace(
            quadruplets=np.concatenate([p.quadruplets for p in parts]),
            weight=np.concatenate([p.weight for p in parts]),
            copies=copies,
            extra=extra,
            **meta,
        )

    def to_frame(self) -> pd.DataFrame:
        """One row per response: ``i, j, l, k, weight`` (+ metadata and extra columns present); a frame of its own,
        to edit (before pandas 3 a frame over the read-only arrays refused ``df.loc[r, "i"] = ...``)."""
        df = pd.DataFrame(self._quads, columns=["i", "j", "l", "k"], copy=True)  # columns set below are copied
        df["weight"] = self._weight
        for key, v in {**self._meta, **self._extra}.items():
            if v is not None:
                df[key] = v
        return df

    def aggregate(self, device=None) -> "ComparisonGraph":
        """The comparison graph: one directed edge per distinct comparison.

        ``device``: None sorts with compiled counting sorts on the CPU; a torch device (the torch
        solver's GPU) sorts there with ``torch.unique`` -- the same graph, bit for bit."""
        return ComparisonGraph(self, device)


def _counting_sort_graph(quads: np.ndarray, n: int, idx, device=None):
    """``(pairs, edge_pairs, response_edge)`` by two stable counting sorts each (linear time, no int64 keys)."""
    m = len(quads)
    # vertices: slot r is the near pair of response r, slot m + r its far pair
    lo, hi = sorted_pair_slots(quads, np.empty(2 * m, idx), np.empty(2 * m, idx))
    slots = np.arange(2 * m, dtype=idx)
    slots = counting_sort(lo, counting_sort(hi, slots, n, np.empty_like(slots)), n, slots)
    slot_pair = np.empty(2 * m, idx)
    n_pairs, first = number_runs(slots, lo, hi, slot_pair)
    pairs = np.stack([lo[first], hi[first]], axis=1)
    del lo, hi, slots, first
    # edges: responses with the same (near pair, far pair)
    near, far = slot_pair[:m], slot_pair[m:]
    rows = np.arange(m, dtype=idx)
    rows = counting_sort(near, counting_sort(far, rows, n_pairs, np.empty_like(rows)), n_pairs, rows)
    response_edge = np.empty(m, idx)
    _, first = number_runs(rows, near, far, response_edge)
    return pairs, np.stack([near[first], far[first]], axis=1), response_edge


def _torch_sort_graph(quads: np.ndarray, n: int, idx, device):
    """``(pairs, edge_pairs, response_edge)`` by ``torch.unique`` of int64 keys on ``device``: pairs are the
    sorted keys ``lo * n + hi``, edges the sorted keys ``near * P + far`` (P pairs), the counting sorts'
    order exactly.  On a GPU, 10^8 responses take seconds instead of the CPU's minutes."""
    import torch

    m = len(quads)
    q = torch.tensor(np.asarray(quads), device=device)  # a copy: quads are read-only
    a, b = torch.cat([q[:, 0], q[:, 2]]).long(), torch.cat([q[:, 1], q[:, 3]]).long()
    del q
    keys = torch.minimum(a, b).mul_(n).add_(torch.maximum(a, b))
    del a, b  # device memory: the keys alone while they are sorted
    pair_keys, slot_pair = torch.unique(keys, return_inverse=True)
    del keys
    n_pairs = len(pair_keys)
    edge_keys, response_edge = torch.unique(slot_pair[:m] * n_pairs + slot_pair[m:], return_inverse=True)
    del slot_pair
    dtype = torch.int32 if idx == np.int32 else torch.int64

    def host(t):
        return t.to(dtype).cpu().numpy()
    return (host(torch.stack([pair_keys // n, pair_keys % n], dim=1)),
            host(torch.stack([edge_keys // n_pairs, edge_keys % n_pairs], dim=1)), host(response_edge))


class ComparisonGraph:
    """Distinct comparisons (directed edges between object pairs) with their votes.

    Attributes
    ----------
    pairs : (P, 2) int
        The graph's vertices: distinct object pairs ``(a, b)``, ``a < b``, used by an edge, sorted.
    edge_pairs : (E, 2) int
        For each edge, the indices into ``pairs`` of its near pair ``(i, j)`` and far pair ``(l, k)``;
        edges are sorted by these two indices.
    votes : (E,) float64
        ``w_c``: total weight of the responses asserting edge ``c``.
    n_responses : (E,) int
        Number of responses on each edge.
    response_edge : (m,) int
        The edge of each raw response, so results map back to responses.
    edge_objects : (E, 4) int
        Objects of each edge's near and far pair (computed on first use).
    edges : (E, 4) int64
        Canonical quadruplets (see :func:`canonical_quadruplets`), computed on first use.
    reverse_edge : (E,) int
        Index of the opposite edge ``c-bar``, or -1 when nobody voted for it (computed on first use).
    edge_query, response_query : (E,) and (m,) int
        The *query* of an edge or response: one id per unordered comparison, shared by both
        directions (an "edge" is one direction, a "query" is both).
    query_share : (E,) float64 or None
        For a graph from :meth:`scaled`: how many whole responses' worth of each edge's query its
        scaled weights keep, at most 1 (None: every query counts once).  The ``majority`` weighting
        of :class:`~roembed.RobustOrdinalEmbedding` counts a query that much.
    undecided : (E,) float64 or None
        For a graph from :meth:`scaled`: the weight the factors took off each edge's responses (None
        otherwise).  The ``vote`` weighting of :class:`~roembed.RobustOrdinalEmbedding` counts it half for
        the edge and half for its reverse.

    Index arrays are int32 while the counts fit (int64 beyond 2^31), so a graph costs about
    36 bytes per distinct triplet (plus 16 for :attr:`edge_objects` once a factored solver asks).  Aggregation is two stable counting sorts (object pairs by
    their objects, edges by their pairs; :mod:`roembed._kernels`): linear time, no int64 keys; or, given a
    torch ``device``, ``torch.unique`` of int64 keys there (the same arrays).
    """

    query_share = None
    undecided = None

    def __init__(self, comparisons: Comparisons, device=None):
        self.comparisons = comparisons
        n, quads = comparisons.n_objects, comparisons.quadruplets
        idx = index_dtype(max(n, 2 * len(quads) + 1))
        build = _counting_sort_graph if device is None else _torch_sort_graph
        pairs, edge_pairs, response_edge = build(quads, n, idx, device)
        self.pairs, self.edge_pairs, self.response_edge = _frozen(pairs), _frozen(edge_pairs), _frozen(response_edge)
        self.votes = _frozen(np.bincount(response_edge, weights=comparisons.weight, minlength=len(edge_pairs)))

    @property
    def copies(self) -> np.ndarray:
        """(E,) float64: independent draws of the edge's query that its votes stand for, the mean of its
        responses' ``copies`` (ones unless the comparisons carry them, as a bootstrap resample does).

        The weightings that combine the votes within a query read the votes of one draw,
        ``votes / copies``, and count the result ``copies`` times."""
        return _ones(len(self)) if self.comparisons._copies is None else self._given_copies

    @cached_property
    def _given_copies(self) -> np.ndarray:
        total = np.bincount(self.response_edge, weights=self.comparisons.copies, minlength=len(self))
        return _frozen(total / self.n_responses)

    @cached_property
    def n_responses(self) -> np.ndarray:
        """(E,) the number of responses on each edge."""
        return _frozen(np.bincount(self.response_edge, minlength=len(self)).astype(self.response_edge.dtype))

    @cached_property
    def edge_objects(self) -> np.ndarray:
        """(E, 4) the objects of each edge's near pair and far pair, ``pairs[edge_pairs]`` side by side
        (what the factored solvers read; unlike :attr:`edges` not in canonical order within a pair)."""
        return _frozen(_edge_objects(self.pairs, self.edge_pairs))

    def scaled(self, factor) -> "ComparisonGraph":
        """The graph of the same responses with their weights times ``factor`` ((m,), in [0, 1]; e.g. the
        probability that the response's annotator answers as the embedding does), with ``query_share``:
        per edge, ``min(1, n_q f_q)``, where ``n_q`` counts the responses of the edge's query
        (both directions) and ``f_q`` is the share of their weight that the factors keep.  So a query
        whose responses are all scaled to nothing counts for nothing under a majority vote, one with a
        single response scaled by 0.3 counts 0.3, and one with at least one whole response's worth left
        counts once, as before.  (Scaling the weights alone would not reach a majority vote, which reads
        only which side has more.)  And with ``undecided``: per edge, the weight the factors took off its
        responses, ``sum_r w_r (1 - f_r)``, which the ``vote`` weighting counts half each way.  The edges
        are this graph's, in the same order."""
        factor = np.asarray(factor, dtype=np.float64)
        if factor.shape != (len(self.comparisons),) or not np.all((factor >= 0) & (factor <= 1)):
            raise ValueError(f"factor must be {len(self.comparisons)} numbers in [0, 1]")
        graph = self._reweighted(self.comparisons.with_weight(self.comparisons.weight * factor))

        def query_total(per_edge):  # both directions of each edge's query
            return per_edge + self._opposite(per_edge, self.reverse_edge)

        raw, kept = query_total(self.votes), query_total(graph.votes)
        share = np.divide(kept, raw, out=np.ones(len(self)), where=raw > 0)
        graph.query_share = _frozen(np.minimum(1.0, query_total(self.n_responses.astype(np.float64)) * share))
        graph.undecided = _frozen(np.bincount(self.response_edge, weights=self.comparisons.weight * (1.0 - factor),
                                              minlength=len(self)))
        return graph

    _STRUCTURE = ("n_responses", "edges", "reverse_edge", "edge_query", "_response_order")
    """The cached arrays that depend only on which responses there are, not on their weights."""

    def _reweighted(self, comparisons: Comparisons) -> "ComparisonGraph":
        """The graph of ``comparisons``, the same responses as this graph's with other weights: this graph's
        pairs, edges and cached structure (what aggregating them again would give, bit for bit) with
        their votes.  A cut-out graph (:meth:`subgraph`, whose pairs are its parent's) is aggregated anew."""
        if type(self) is not ComparisonGraph:
            return ComparisonGraph(comparisons)
        graph = object.__new__(ComparisonGraph)
        graph.comparisons = comparisons
        graph.pairs, graph.edge_pairs, graph.response_edge = self.pairs, self.edge_pairs, self.response_edge
        graph.votes = _frozen(np.bincount(self.response_edge, weights=comparisons.weight, minlength=len(self)))
        graph.__dict__.update({k: v for k, v in self.__dict__.items() if k in self._STRUCTURE})
        return graph

    def forget(self, *names: str) -> None:
        """Drops the cached arrays ``names`` (e.g. ``"edge_objects"``) to free their memory; they are computed
        again on the next use."""
        for name in names:
            self.__dict__.pop(name, None)

    def edge_quadruplets(self, edges=None) -> np.ndarray:
        """Canonical quadruplets (int64) of the given edges (all by default)."""
        ep = self.edge_pairs if edges is None else self.edge_pairs[np.asarray(edges)]
        return canonical_quadruplets(_edge_objects(self.pairs, ep))

    @cached_property
    def edges(self) -> np.ndarray:
        """(E, 4) canonical quadruplets, one per edge (see the class docstring)."""
        return _frozen(self.edge_quadruplets())

    @cached_property
    def reverse_edge(self) -> np.ndarray:
        """(E,) the opposite edge of each edge, -1 where nobody voted for it."""
        near, far = np.ascontiguousarray(self.edge_pairs[:, 0]), np.ascontiguousarray(self.edge_pairs[:, 1])
        return _frozen(reverse_edges(near, far, len(self.pairs), np.empty(len(self), self.response_edge.dtype)))

    n_objects = property(lambda self: self.comparisons.n_objects)
    object_names = property(lambda self: self.comparisons.object_names)

    def __len__(self) -> int:
        return len(self.edge_pairs)

    def __repr__(self) -> str:
        return (f"ComparisonGraph({len(self)} edges from {len(self.comparisons)} responses, "
                f"{len(self.pairs)} object pairs, {self.n_objects} objects)")

    @cached_property
    def _response_order(self) -> tuple[np.ndarray, np.ndarray]:
        order = np.argsort(self.response_edge, kind="stable")
        indptr = np.concatenate([[0], np.cumsum(self.n_responses)])
        return order, indptr

    def edge_responses(self, edge: int) -> np.ndarray:
        """Indices of the raw responses that make up ``edge``."""
        order, indptr = self._response_order
        return order[indptr[edge]: indptr[edge + 1]]

    def edge_annotators(self, edge: int) -> list:
        """Distinct annotator ids voting for ``edge`` (empty if there are none): numbers by value, other ids
        (text, or numbers beside text) as text."""
        ann = self.comparisons.annotator
        if ann is None:
            return []
        ids = set(ann[self.edge_responses(edge)].tolist())
        numeric = np.asarray(ann).dtype.kind in "biuf"
        return sorted(ids) if numeric else sorted(ids, key=str)

    @cached_property
    def edge_query(self) -> np.ndarray:
        """The query of each edge: ``min(c, c-bar)``, shared by both directions of a comparison."""
        rev = self.reverse_edge
        edge = np.arange(len(rev), dtype=rev.dtype)  # int32 like the other index arrays
        return _frozen(np.where(rev >= 0, np.minimum(edge, rev), edge))

    @property
    def n_queries(self) -> int:
        """The number of distinct queries (edges whose opposite edge is absent or comes later)."""
        rev = self.reverse_edge
        return int(np.count_nonzero((rev < 0) | (rev > np.arange(len(rev), dtype=rev.dtype))))

    @property
    def n_voted_queries(self) -> int:
        """The distinct queries with votes in either direction: :attr:`n_queries` less those whose responses all
        weigh 0, which count for nothing (what the scarcity rules count)."""
        votes = self.votes
        if (votes > 0).all():
            return self.n_queries
        return int(np.count_nonzero(np.bincount(self.edge_query, weights=votes, minlength=len(votes)) > 0))

    @property
    def response_query(self) -> np.ndarray:
        """The query of each raw response (all votes on one comparison, either direction, share it)."""
        return self.edge_query[self.response_edge]

    @property
    def opposing_votes(self) -> np.ndarray:
        """``w_c-bar``: the votes of the opposite edge (0 when absent)."""
        return self._opposite(self.votes, self.reverse_edge)

    @staticmethod
    def _opposite(per_edge: np.ndarray, reverse: np.ndarray) -> np.ndarray:
        """The values ``per_edge`` of the opposite edges ``reverse`` (0 where -1)."""
        return np.where(reverse >= 0, per_edge[np.maximum(reverse, 0)], 0.0)

    def edge_table(self, edges=None) -> pd.DataFrame:
        """A readable table of edges: objects (and names), votes, opposing votes, annotators."""
        edges = np.arange(len(self)) if edges is None else np.asarray(edges, dtype=np.int64)
        q = self.edge_quadruplets(edges)
        columns = {"edge": edges, "i": q[:, 0], "j": q[:, 1], "l": q[:, 2], "k": q[:, 3]}
        names = self.object_names
        if names is not None:
            names = np.asarray(names, dtype=object)
            for col in "ijlk":
                columns[f"{col}_name"] = names[columns[col]]
        columns["votes"] = self.votes[edges]
        columns["opposing_votes"] = self._opposite(self.votes, self.reverse_edge[edges])  # these edges' only
        columns["n_responses"] = self.n_responses[edges]
        if self.comparisons.annotator is not None:
            columns["annotators"] = self._distinct_per_edge(self.comparisons.annotator, edges)
        for key, values in self.comparisons.extra.items():  # distinct values of the edge's responses
            columns[key] = self._distinct_per_edge(values, edges)
        return pd.DataFrame(columns)  # built at once: column by column cost 3 ms for eight columns

    def _distinct_per_edge(self, values: np.ndarray, edges: np.ndarray) -> list[str]:
        """``"a;b"`` per edge: the distinct values of its responses as text, numbers by value (``7;35``), other
        values sorted as text (as :meth:`edge_annotators`).  Only the distinct values become text (the
        annotators of a robust fit's 814 flagged edges on a 45,000-response THINGS cell: 3.8 -> 1.6 ms; turning
        each response's value into text was most of it)."""
        wanted = np.zeros(len(self), bool)
        wanted[edges] = True
        rows = wanted[self.response_edge]
        if not rows.any():
            return [""] * len(edges)
        raw, code = distinct_values(np.asarray(values)[rows])
        text = pd.Series(raw, dtype=object).map(str).to_numpy(dtype=object)
        distinct, first, text_code = np.unique(text, return_index=True, return_inverse=True)  # equal texts merged
        rank = np.arange(len(distinct))
        if raw.dtype.kind in "biuf":  # numbers: each text at its value's place (mixed types stay sorted as text)
            order = np.argsort(first)
            distinct, rank[order] = distinct[order], np.arange(len(order))
        code = rank[text_code.reshape(-1)][code]
        pair = np.unique(self.response_edge[rows].astype(np.int64) * len(distinct) + code)
        edge, text = pair // len(distinct), distinct[pair % len(distinct)]  # by edge, then text
        first = np.r_[True, edge[1:] != edge[:-1]]
        text = np.where(first, text, ";" + text)  # object arrays: str + str per element
        joined = dict(zip(edge[first].tolist(), np.add.reduceat(text, np.flatnonzero(first)).tolist()))
        return [joined.get(e, "") for e in edges.tolist()]

    def to_comparisons(self) -> Comparisons:
        """One weighted response per edge (weight = votes); metadata is dropped."""
        return Comparisons(self.edges, n_objects=self.n_objects, weight=self.votes,
                           object_names=self.object_names)

    def subgraph(self, responses) -> "ComparisonGraph":
        """The graph of the responses picked by the boolean mask ``responses``, which must hold whole edges
        (all of an edge's responses or none, as a split by query does), cut out of this graph in linear
        time without sorting: the edges of ``self.comparisons[responses].aggregate()`` in the same order,
        with the same objects, votes, copies, opposite edges and responses, bit for bit.  Its ``pairs`` are
        this graph's (shared, not renumbered: some are in none of its edges, and ``edge_pairs`` index
        them); ``kept_edges`` marks this graph's edges it holds.  The picked responses themselves
        (``comparisons``, ``response_edge``) are copied out only when asked for: the self-tuning fit trains
        on such a graph and never asks, which saves a copy of 80% of the responses (40 bytes each)
        beside the full graph."""
        return _Subgraph(self, responses)


class _Subgraph(ComparisonGraph):
    """:meth:`ComparisonGraph.subgraph`: the edges of whole-edge responses of a ``parent`` graph."""

    def __init__(self, parent: ComparisonGraph, responses):
        responses = np.asarray(responses)
        if responses.dtype != bool or responses.shape != (len(parent.comparisons),):
            raise ValueError(f"responses must be a boolean mask of shape ({len(parent.comparisons)},), "
                             f"got {responses.dtype} {responses.shape}")
        keep = np.zeros(len(parent), bool)
        keep[parent.response_edge[responses]] = True
        if not np.array_equal(keep[parent.response_edge], responses):
            raise ValueError("the responses must hold whole edges: some edge has responses on both sides")
        self._parent, self._responses, self.kept_edges = parent, responses, _frozen(keep)
        self.pairs = parent.pairs  # shared, not renumbered: some pairs are in no edge of the subgraph
        self._n_edges = int(np.count_nonzero(keep))

    def __len__(self) -> int:
        return self._n_edges

    # Built only when asked: a solve that goes edge by edge reads the edge objects, not the pair indices.
    @cached_property
    def edge_pairs(self) -> np.ndarray:
        return _frozen(self._parent.edge_pairs[self.kept_edges])

    @cached_property
    def edge_objects(self) -> np.ndarray:
        return _frozen(_edge_objects(self.pairs, self._parent.edge_pairs, self.kept_edges))

    # Cut out of the parent's arrays on each use, not kept: the fit reads them once, for its loss weights.
    @property
    def votes(self) -> np.ndarray:
        return _frozen(self._parent.votes[self.kept_edges])

    @property
    def reverse_edge(self) -> np.ndarray:
        """The parent's opposite edges renumbered; -1 where the opposite edge is not in the subgraph."""
        reverse = self._parent.reverse_edge[self.kept_edges]
        kept = reverse >= 0
        kept[kept] = self.kept_edges[reverse[kept]]
        return _frozen(np.where(kept, self._edge_number()[np.maximum(reverse, 0)], -1).astype(self.pairs.dtype))

    def _edge_number(self) -> np.ndarray:
        """The subgraph's number of each parent edge (meaningful where kept)."""
        return (np.cumsum(self.kept_edges) - 1).astype(self.pairs.dtype)

    @cached_property
    def comparisons(self) -> Comparisons:
        return self._parent.comparisons[self._responses]

    @cached_property
    def response_edge(self) -> np.ndarray:
        return _frozen(self._edge_number()[self._parent.response_edge[self._responses]])

    @property
    def copies(self) -> np.ndarray:
        parent = self._parent
        return _ones(len(self)) if parent.comparisons._copies is None else parent._given_copies[self.kept_edges]

    @property
    def query_share(self):
        share = self._parent.query_share
        return None if share is None else _frozen(share[self.kept_edges])

    @property
    def undecided(self):
        undecided = self._parent.undecided
        return None if undecided is None else _frozen(undecided[self.kept_edges])

    n_objects = property(lambda self: self._parent.n_objects)
    object_names = property(lambda self: self._parent.object_names)
