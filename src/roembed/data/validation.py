"""Checks on raw comparison arrays, with errors that name the offending row.

Every check raises :class:`InvalidComparisonsError` (a ``ValueError``) whose
message names the first offending row (and, when the rows came from a file,
the file and its line) and says what is wrong.  ``on_invalid="skip"`` in the
readers drops such rows instead, and reports how many and which.
"""
from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from .. import _warn


def count_noun(n: int, noun: str, plural: str | None = None) -> str:
    """``"1 query"``, ``"2 queries"``: a count and its noun, in the singular for one (messages)."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


class InvalidComparisonsError(ValueError):
    """Raised for comparison data that cannot be used as it is."""


class InvalidRowsError(InvalidComparisonsError):
    """Raised by a reader for its earliest invalid row when ``on_invalid="raise"``: rows that
    ``on_invalid="skip"`` would drop (and report), unlike a problem with the file as a whole."""


class SkippedRowsWarning(UserWarning):
    """Warns that rows were dropped (``on_invalid="skip"`` or a loader's cleaning)."""


#: A source ending in one of these counts its own units, not lines.
_UNITS = (" row", " record", " query", " index", " response")


def _label(value) -> str:
    """A line number or a table's index label as written in a message: ``7`` (not ``7.0`` or ``np.int64(7)``),
    another label as Python writes it (``'e'``, ``('s1', 4)``), which ``frame.loc[...]`` takes back."""
    if isinstance(value, (int, np.integer)) or isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return repr(value.item() if isinstance(value, np.generic) else value)


@dataclass
class RowLocator:
    """Turns a row number into words: ``"row 3"`` or ``"data.csv line 5"``.

    ``lines[r]`` is the 1-based file line of row ``r`` when known; without a
    ``source`` it is the row number in the caller's input (for expanded rows).
    ``sources[r]``, when given, is the file of row ``r`` (rows read from several files).
    """

    source: str | None = None
    lines: np.ndarray | None = None
    sources: np.ndarray | None = None

    def __call__(self, row: int) -> str:
        source = self.source if self.sources is None else str(self.sources[row])
        if source is None:
            return f"row {row if self.lines is None else _label(self.lines[row])}"
        if self.lines is not None:
            return f"{source} {_label(self.lines[row])}" if source.endswith(_UNITS) else \
                f"{source} line {_label(self.lines[row])}"
        return f"{source} row {row}"

    def subset(self, keep: np.ndarray) -> "RowLocator":
        """The locator of ``rows[keep]`` (a mask or an index array, repeats allowed)."""
        lines = None if self.lines is None else np.asarray(self.lines)[keep]
        sources = None if self.sources is None else np.asarray(self.sources)[keep]
        return RowLocator(self.source, lines, sources)

    @staticmethod
    def concat(parts: list["RowLocator"], lengths: list[int]) -> "RowLocator":
        """One locator for rows read from several sources, one after the other (a source without
        line numbers counts its rows from 0, as ``"row r"`` would)."""
        lines = np.concatenate([np.arange(n) if p.lines is None else np.asarray(p.lines)
                                for p, n in zip(parts, lengths)])
        sources = np.concatenate([np.full(n, p.source if p.lines is not None else f"{p.source} row", dtype=object)
                                  for p, n in zip(parts, lengths)])
        return RowLocator(None, lines, sources)


@dataclass
class SkipReport:
    """What ``on_invalid="skip"`` removed: a count and the first few reasons; ``n_rows``, the rows read, valid
    or not, where known (the message then gives the share: 9,088 of 9,107 music rows skipped, with a names file of
    49 names, read as "skipped 9088 invalid row(s)" alone)."""

    n_skipped: int = 0
    examples: list[str] = field(default_factory=list)
    n_rows: int | None = None

    def add(self, rows: np.ndarray, reason: str, where: RowLocator, max_examples: int = 5) -> None:
        self.n_skipped += len(rows)
        for r in rows[: max(0, max_examples - len(self.examples))]:
            self.examples.append(f"{where(int(r))}: {reason}")

    def merge(self, other: "SkipReport", max_examples: int = 5) -> None:
        """Adds what ``other`` skipped (a later part of the same input)."""
        self.n_skipped += other.n_skipped
        self.examples += other.examples[: max(0, max_examples - len(self.examples))]

    def warn(self) -> None:
        """Emits a :class:`SkippedRowsWarning` when anything was skipped."""
        if self.n_skipped:
            _warn.warn(str(self), SkippedRowsWarning)

    def __str__(self) -> str:
        """``skipped 17 invalid row(s) of music.csv, e.g. line 5033: ...; line 5044: ...``: the file is named once
        where every example comes from the same one (it was repeated in each, five long paths on one line)."""
        if not self.n_skipped:
            return "no invalid rows"
        where = [re.match(r"(.*?) (line \d+: .*)", example, re.DOTALL) for example in self.examples]
        sources = {m.group(1) if m else None for m in where}
        source = sources.pop() if len(sources) == 1 else None
        share = ""
        if self.n_rows:  # over half: the options that read the rows are the likelier fault than the rows
            share = (f" ({self.n_skipped / self.n_rows:.1%} of {self.n_rows} rows read"
                     + (": over half; are the names, the index base and the columns right?)"
                        if 2 * self.n_skipped > self.n_rows else ")"))
        if source is None:
            return f"skipped {self.n_skipped} invalid row(s){share}, e.g. {'; '.join(self.examples)}"
        lines = [m.group(2) for m in where]
        return f"skipped {self.n_skipped} invalid row(s) of {source}{share}, e.g. {'; '.join(lines)}"


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def index_array(values, where: RowLocator, what: str = "index") -> np.ndarray:
    """Converts object indices to int64, refusing NaN, fractions and non-numbers."""
    arr = np.asarray(values)
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64, copy=False)
    if arr.dtype.kind == "b":
        raise InvalidComparisonsError(f"{what} columns hold booleans, not object indices")
    try:
        as_float = arr.astype(np.float64)
    except (TypeError, ValueError):
        flat = arr.reshape(len(arr), -1)
        for r in range(len(flat)):
            for v in flat[r]:
                try:
                    float(v)
                except (TypeError, ValueError):
                    v = v.item() if isinstance(v, np.generic) else v  # 'x', not np.str_('x')
                    raise InvalidComparisonsError(
                        f"{where(r)}: {what} {v!r} is not an integer object index"
                    ) from None
        raise
    bad = ~np.isfinite(as_float)
    if bad.any():
        r = _first(bad.reshape(len(arr), -1).any(axis=1))
        raise InvalidComparisonsError(f"{where(r)}: {what} is missing (NaN) or infinite")
    frac = as_float != np.round(as_float)
    if frac.any():
        r = _first(frac.reshape(len(arr), -1).any(axis=1))
        values = tuple(as_float.reshape(len(arr), -1)[r].tolist())
        raise InvalidComparisonsError(f"{where(r)}: {what} is not an integer: {values}")
    return as_float.astype(np.int64)


def invalid_quadruplet_rows(quads: np.ndarray, n_objects: int | None, triplets: bool = False) -> list[tuple[np.ndarray, str]]:
    """Lists ``(row_mask, reason)`` for every kind of invalid quadruplet (worded for triplets if asked)."""
    i, j, l, k = quads.T
    problems = [
        ((quads < 0).any(axis=1), "negative object index"),
    ]
    if n_objects is not None:
        problems.append(((quads >= n_objects).any(axis=1), f"object index out of range (n_objects={n_objects})"))
    same_pair = ((i == l) & (j == k)) | ((i == k) & (j == l))
    why = ("(closer == anchor)", "(farther == anchor)", "(closer == farther)") if triplets else \
        ("(i == j)", "(l == k)", "((i, j) == (l, k))")
    problems += [(i == j, f"the first pair repeats an object {why[0]}"),
                 (l == k, f"the second pair repeats an object {why[1]}"),
                 (same_pair, f"both pairs are the same pair {why[2]}")]
    return problems


def check_quadruplets(quads: np.ndarray, n_objects: int | None, where: RowLocator | None = None,
                      triplets: bool = False) -> None:
    """Raises on the earliest invalid row, naming it, its problem and its indices."""
    where = where or RowLocator()
    if quads.ndim != 2 or quads.shape[1] != 4:
        raise InvalidComparisonsError(f"expected an (m, 4) array of quadruplets, got shape {quads.shape}")
    if len(quads) == 0:
        raise InvalidComparisonsError("no comparisons: the input is empty")
    found = [(_first(mask), reason) for mask, reason in invalid_quadruplet_rows(quads, n_objects, triplets) if mask.any()]
    if found:
        r, reason = min(found, key=lambda f: f[0])
        shown = quads[r, [0, 1, 3]] if triplets else quads[r]
        raise InvalidComparisonsError(f"{where(r)}: {reason}: {tuple(int(v) for v in shown)}")


def check_copies(copies, m: int, where: RowLocator | None = None) -> np.ndarray:
    """Returns float64 ``copies`` of length ``m`` (see :class:`Comparisons`); zero or negative ones raise."""
    where = where or RowLocator()
    c = check_weights(copies, m, where, what="copies")
    if (c == 0).any():
        raise InvalidComparisonsError(f"{where(_first(c == 0))}: copies is 0 (a response stands for at least "
                                      "part of one draw of its query)")
    return c


def _per_response(values, m: int, what: str, not_numbers: str) -> np.ndarray:
    """``values`` as float64 of length ``m``; raises ``not_numbers`` when they are not numbers (dates and
    durations included: ``float(datetime64)`` counts days since 1970), and names ``what`` when their count is wrong."""
    try:
        given = np.asarray(values)
        if given.dtype.kind in "mM":
            raise TypeError
        out = given.astype(np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise InvalidComparisonsError(not_numbers) from None
    if out.shape != (m,):
        raise InvalidComparisonsError(f"got {out.size} {what} for {m} comparisons")
    return out


def per_comparison_shape(values: np.ndarray, m: int, what: str) -> None:
    """Raises unless ``values`` holds one value per comparison, shape ``(m,)`` (a column ``(m, 1)`` was "got 4
    values for 4 comparisons")."""
    if values.shape == (m,):
        return
    if values.size == m:
        raise InvalidComparisonsError(f"{what}: give one value per comparison, shape ({m},); got shape {values.shape}")
    raise InvalidComparisonsError(f"got {values.size} {what} values for {m} comparisons")


def check_weights(weight, m: int, where: RowLocator | None = None, what: str = "weight") -> np.ndarray:
    """Returns float64 weights of length ``m``; NaN, negative or infinite ones raise, naming ``what``."""
    where = where or RowLocator()
    if weight is None:
        ones = np.ones(m)
        ones.flags.writeable = False  # fresh and read-only: Comparisons keeps it without a copy
        return ones
    noun = "weights" if what == "weight" else f"{what} values"
    w = _per_response(weight, m, noun, f"{noun} must be real numbers")
    for mask, reason in ((np.isnan(w), f"{what} is NaN"), (np.isinf(w), f"{what} is infinite"),
                         (w < 0, f"{what} is negative")):
        if mask.any():
            r = _first(mask)
            raise InvalidComparisonsError(f"{where(r)}: {reason} ({w[r]})")
    return w


def check_gold(gold, m: int, where: RowLocator | None = None) -> np.ndarray:
    """Known-answer marks as float64 of length ``m``: 1 (answered right), 0 (wrong), NaN (an ordinary question).

    Booleans are read as 1 / 0; anything else raises, naming the row."""
    where = where or RowLocator()
    g = _per_response(gold, m, "gold values", "gold values must be 1 (right), 0 (wrong) or NaN (not a known-answer "
                                              "question)")
    bad = ~(np.isnan(g) | (g == 0) | (g == 1))
    if bad.any():
        r = _first(bad)
        raise InvalidComparisonsError(f"{where(r)}: gold is {g[r]:g}, expected 1 (right), 0 (wrong) or empty "
                                      "(not a known-answer question)")
    return g


def check_extra(extra) -> None:
    """Raises unless ``extra`` is None or a mapping of column names to values (an array was "the truth value
    of an array ... is ambiguous"; 0 was taken for no columns)."""
    if extra is not None and not isinstance(extra, Mapping):
        raise TypeError(f"extra must be a mapping of column names to values, one per comparison; got "
                        f"{type(extra).__name__}")


def check_n_objects(n_objects) -> None:
    """Raises unless ``n_objects`` is None or a whole number >= 1 (``1.5`` was cut to 1 and then blamed on the
    rows: "object index out of range (n_objects=1)"; ``True`` read as 1; text and NaN were Python's errors)."""
    if n_objects is not None and (isinstance(n_objects, (bool, np.bool_))
                                  or not isinstance(n_objects, (int, np.integer)) or n_objects < 1):
        raise InvalidComparisonsError(f"n_objects must be a positive integer or None, got {n_objects!r}")


def names_sequence(names, what: str = "object_names") -> tuple[str, ...]:
    """``names`` (a sequence) as a tuple of texts.  A text or path is refused: read as a sequence, ``"names.txt"``
    named nine objects after its letters (or, repeating "/", failed on a puzzle)."""
    if isinstance(names, (str, bytes, os.PathLike)):
        raise TypeError(f"{what}: got a text or path ({str(names)!r}); give a sequence of names (a names file: "
                        f"roembed.data.read_names(path), or read_comparisons(..., names=path))")
    if np.ndim(names) != 1:  # a number was "'int' object is not iterable"; a column (n, 1) named objects "[1.]"
        raise TypeError(f"{what}: give a sequence of names, one per object; got "
                        + (f"shape {np.shape(names)}" if np.ndim(names) else f"{type(names).__name__} {names!r}"))
    return tuple(str(s) for s in names)


def check_annotators(annotator, m: int, where: RowLocator | None = None) -> np.ndarray:
    """Annotator ids as an array of length ``m``: none missing, and all numbers or all text (the fit numbers them
    in sorted order, and a 7 beside a "7" would be two annotators that print alike); anything else raises,
    naming the row."""
    import pandas as pd

    where = where or RowLocator()
    values = np.asarray(annotator)
    per_comparison_shape(values, m, "annotator")
    missing = pd.isna(values)
    if missing.any():
        raise InvalidComparisonsError(f"{where(_first(missing))}: annotator id is missing")
    if values.dtype == object and pd.api.types.infer_dtype(values, skipna=False).startswith("mixed"):
        text = np.fromiter((isinstance(v, str) for v in values.tolist()), bool, m)
        if text.all() or not text.any():  # e.g. 7 beside 7.5: numbers, which sort together
            return values
        r = _first(text != text[0])
        raise InvalidComparisonsError(f"{where(r)}: annotator id {values[r]!r} is {'text' if text[r] else 'not text'}, "
                                      f"the first is {values[0]!r}: give the ids all as text or all as numbers")
    return values


def check_positions(position, m: int, where: RowLocator | None = None) -> np.ndarray:
    """Screen positions of the chosen options as int64 of length ``m``: whole numbers >= 0; anything else
    raises, naming the row."""
    where = where or RowLocator()
    values = _per_response(position, m, "position values",
                           "position values must be whole numbers >= 0 (0 = the first option shown)")
    bad = ~(np.isfinite(values) & (values >= 0) & (values == np.round(values)))
    if bad.any():
        r = _first(bad)
        raise InvalidComparisonsError(f"{where(r)}: position is {values[r]:g}, expected a whole number >= 0 "
                                      "(0 = the first option shown)")
    return values.astype(np.int64)
