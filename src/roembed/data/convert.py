"""Conversions between :class:`Comparisons` and other comparison formats.

* plain arrays: ``Comparisons(array)`` / :func:`to_array`;
* cblearn (:func:`from_cblearn`, :func:`to_cblearn`): ``list-order`` (ordered triplets
  or quadruplets), ``list-boolean`` (queries + ``True`` when the query's order is the
  answer) and ``list-count`` (queries + signed counts, ``+-1`` per response);
* pandas (:func:`from_frame`, :func:`to_frame`): named columns, detected automatically
  (:data:`FORMATS`), including salmon/NEXT responses (``head, left, right, winner, puid``;
  :func:`to_salmon`) and odd-one-out answers;
* odd-one-out answers and psiz's rank trials: :mod:`roembed.data.answers`.
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from .._factorize import factorize
from .._warn import warn
from .answers import _odd_one_out_problems, from_odd_one_out
from .comparisons import Comparisons
from .validation import (
    InvalidComparisonsError, InvalidRowsError, RowLocator, SkipReport, _first, check_n_objects, index_array,
    invalid_quadruplet_rows, names_sequence,
)

__all__ = [
    "FORMATS", "from_cblearn", "to_cblearn", "from_frame", "to_frame", "to_salmon", "to_array",
    "split_ties", "TIE_COLUMNS",
]


#: the largest object index a file may use (larger ones are typos or ids that are not indices)
MAX_INDEX = 2**31 - 1


# -- plain arrays and cblearn ---------------------------------------------------------------
def to_array(comparisons: Comparisons) -> np.ndarray:
    """(m, 3) triplets when every row is a triplet, else (m, 4) quadruplets (weights dropped)."""
    return np.array(comparisons.triplets if comparisons.is_triplet else comparisons.quadruplets)


_CBLEARN_FORMATS = ("list-order", "list-boolean", "list-count", "tensor-count")


def is_tensor(data) -> bool:
    """Whether ``data`` is in cblearn's ``tensor-count`` form: an n x n x n (triplets) or n x n x n x n
    (quadruplets) array, sparse (pydata ``sparse.COO``, which cblearn returns, or anything with ``coords`` and
    ``data``) or dense; the rows of comparisons roembed takes otherwise are 2-D."""
    shape = getattr(data, "shape", None)
    return (shape is not None and len(shape) in (3, 4) and len(set(shape)) == 1
            and (hasattr(data, "coords") and hasattr(data, "data") or isinstance(data, np.ndarray)))


def _tensor_entries(tensor) -> tuple[np.ndarray, np.ndarray]:
    """``(queries, counts)`` of a ``tensor-count`` tensor's nonzero entries: entry ``(i, j, k)`` (or
    ``(i, j, l, k)``) holds the signed number of responses to that query, as cblearn's ``list-count``."""
    if hasattr(tensor, "coords"):
        queries, counts = np.asarray(tensor.coords).T, np.asarray(tensor.data).reshape(-1)
    else:
        queries = np.argwhere(tensor)
        counts = tensor[tuple(queries.T)]
    keep = counts != 0  # a sparse tensor may store explicit zeros: no response
    return queries[keep], counts[keep]


def from_cblearn(queries, responses=None, *, format: str | None = None, **kwargs) -> Comparisons:
    """Comparisons from cblearn's list formats, or its ``tensor-count`` tensor.

    ``list-order`` (no responses): rows are answers, ``(i, j, k)`` / ``(i, j, l, k)``.
    ``list-boolean``: ``responses[r]`` True keeps query ``r``'s order, False reverses it.
    ``list-count``: the sign of ``responses[r]`` gives the direction and ``|responses[r]|``
    the number of identical responses (as in cblearn, they are unrolled); 0 is refused.
    ``tensor-count`` (no responses; :func:`is_tensor`): an n x n x n (or n^4) array, sparse as cblearn returns it
    or dense, whose nonzero entries are ``list-count`` responses to the queries they index; ``n_objects`` is n.
    ``format`` defaults to what ``queries`` and ``responses`` look like.  ``kwargs`` go to :class:`Comparisons`.
    """
    if format == "tensor-count" or (format is None and is_tensor(queries)):
        if responses is not None:
            raise InvalidComparisonsError("tensor-count comparisons take no responses: the tensor's entries are")
        if not is_tensor(queries):
            raise InvalidComparisonsError(f"tensor-count comparisons are an n x n x n (or n^4) array, got shape "
                                          f"{getattr(queries, 'shape', None)}")
        entries, counts = _tensor_entries(queries)
        return from_cblearn(entries, counts, format="list-count", **{"n_objects": queries.shape[0], **kwargs})
    queries = np.asarray(queries)
    if format is None:
        format = "list-order" if responses is None else (
            "list-boolean" if np.asarray(responses).dtype.kind == "b" else "list-count")
    if format not in _CBLEARN_FORMATS:
        raise ValueError(f"format must be one of {_CBLEARN_FORMATS}, got {format!r}")
    if format == "list-order":
        if responses is not None:
            raise InvalidComparisonsError("list-order comparisons take no responses")
        return Comparisons(queries, **kwargs)
    if responses is None:
        raise InvalidComparisonsError(f"{format} comparisons need responses")
    responses = np.asarray(responses).reshape(-1)
    if len(responses) != len(queries):
        raise InvalidComparisonsError(f"got {len(responses)} responses for {len(queries)} queries")
    if format == "list-boolean":
        if responses.dtype.kind != "b" and not np.isin(responses, (0, 1)).all():
            r = _first(~np.isin(responses, (0, 1)))
            raise InvalidComparisonsError(f"row {r}: list-boolean response {responses[r].item()!r} is not True/False")
        counts = np.where(responses.astype(bool), 1, -1)
    else:
        counts = index_array(responses, RowLocator(), what="list-count response")
        if (counts == 0).any():
            raise InvalidComparisonsError(f"row {_first(counts == 0)}: list-count response 0 (undecided) is not a comparison")
    quads = Comparisons(queries, **kwargs)  # validates the queries with their own row numbers
    rows = np.repeat(np.arange(len(quads)), np.abs(counts))
    return quads[rows].flipped(np.flatnonzero(counts[rows] < 0))


def _standard_queries(quads: np.ndarray, is_triplet: bool) -> tuple[np.ndarray, np.ndarray]:
    """cblearn's standard query form and whether each answer agrees with it.

    Triplet ``(i, j, k)`` -> ``(i, min(j, k), max(j, k))``; quadruplet: both pairs sorted,
    the pair holding the smallest index first.
    """
    i, j, l, k = quads.T
    if is_triplet:
        query = np.stack([i, np.minimum(j, k), np.maximum(j, k)], axis=1)
        return query, j < k
    near = np.sort(quads[:, :2], axis=1)
    far = np.sort(quads[:, 2:], axis=1)
    keep = near[:, 0] <= far[:, 0]  # as cblearn: the pair holding the (first) smallest index first
    query = np.where(keep[:, None], np.hstack([near, far]), np.hstack([far, near]))
    return query, keep


def _unit_rows(comparisons: Comparisons, what: str) -> np.ndarray:
    """Rows repeated by their (integer) weight: formats without weights count responses."""
    w = comparisons.weight
    if np.all(w == 1):
        return np.arange(len(comparisons))
    if not np.all(w == np.round(w)):
        r = _first(w != np.round(w))
        raise InvalidComparisonsError(f"row {r}: weight {w[r]} is not a whole number of responses; {what} cannot hold it")
    return np.repeat(np.arange(len(comparisons)), w.astype(np.int64))


def to_cblearn(comparisons: Comparisons, format: str = "list-order"):
    """Comparisons in a cblearn list format.

    Returns the ordered array for ``list-order``, else ``(queries, responses)`` with
    queries in cblearn's standard form.  Integer weights become repeated responses
    (``list-count``: signed counts); fractional weights raise.  Annotators and other
    metadata have no place in these formats and are not returned.
    """
    if format not in _CBLEARN_FORMATS:
        raise ValueError(f"format must be one of {_CBLEARN_FORMATS}, got {format!r}")
    rows = _unit_rows(comparisons, format)
    if format == "list-order":
        return to_array(comparisons[rows])
    query, agrees = _standard_queries(comparisons.quadruplets, comparisons.is_triplet)
    if format == "list-boolean":
        return query[rows], agrees[rows]
    counts = np.bincount(rows, minlength=len(comparisons))
    return query[counts > 0], np.where(agrees, counts, -counts)[counts > 0]


# -- pandas data frames --------------------------------------------------------------------
#: Column names recognised for each format (matched case-insensitively, spaces as ``_``).
FORMATS = {
    "salmon": [("head", "left", "right", "winner")],
    "odd-one-out": [(a, b, c, odd) for a, b, c in (("a", "b", "c"), ("item1", "item2", "item3"),
                                                     ("object1", "object2", "object3"), ("obj1", "obj2", "obj3"),
                                                     ("first", "second", "third"))
                    for odd in ("odd", "odd_position")],
    "quadruplets": [("i", "j", "l", "k")],
    "triplets": [("anchor", "closer", "farther"), ("anchor", "near", "far"), ("anchor", "positive", "negative"),
                 ("i", "j", "k")],
}
#: Other names of salmon's ``head`` and ``winner``, read beside ``left`` and ``right`` where the file lacks salmon's
#: own name and has exactly one of these: NEXT's Triplets app exports ``Participant ID,Timestamp,Center,Left,Right,
#: Answer,Alg Label`` (the answer is the object chosen); experiments of one's own say anchor, query or reference for
#: the head and choice or chosen for the winner ("anchor,left,right,winner" was "unknown columns").
SALMON_ALIASES = {"head": ("center", "anchor", "query", "reference", "target", "probe"),
                  "winner": ("answer", "choice", "chosen", "selected", "selection", "response")}
#: Per-response metadata columns and their accepted names.
METADATA = {
    "annotator": ("annotator", "annotator_id", "puid", "worker", "worker_id", "workerid", "participant",
                  "participant_id", "prolific_pid", "subject", "subject_id", "user", "user_id", "rater", "rater_id"),
    "weight": ("weight", "weights", "sample_weight", "count", "votes"),
    "timestamp": ("timestamp", "datetime_received", "time_received", "datetime", "time", "date"),
    "response_time": ("response_time", "rt", "reaction_time"),
    "gold": ("gold", "gold_correct", "is_gold_correct", "gold_right"),
    "position": ("position", "screen_position", "chosen_position"),
}
#: Metadata the reader parses itself (the others are kept as the file has them).
PARSED = ("weight", "gold", "position")
_GOLD = {**dict.fromkeys(("1", "1.0", "true", "t", "yes", "y", "right", "correct"), 1.0),
         **dict.fromkeys(("0", "0.0", "false", "f", "no", "n", "wrong", "incorrect"), 0.0),
         **dict.fromkeys(("", "nan", "na", "null", "none"), np.nan)}
#: Names of a column that marks "same / can't decide" answers (see :func:`split_ties`).
TIE_COLUMNS = ("tie", "is_tie", "undecided", "cannot_decide", "cant_decide", "no_preference")
_TRUE = {"1", "1.0", "true", "t", "yes", "y"}
_FALSE = {"0", "0.0", "false", "f", "no", "n", "", "nan", "none"}


def _norm(name) -> str:
    return str(name).strip().lower().replace(" ", "_").replace("-", "_")


#: Every column name roembed reads a role from: the formats' object columns, metadata, ties.
ROLE_NAMES = frozenset({c for candidates in FORMATS.values() for cols in candidates for c in cols}
                       | {alias for aliases in METADATA.values() for alias in aliases} | set(TIE_COLUMNS))


def repeated_role(columns: Sequence[str]) -> str | None:
    """The first column name that repeats and names a role (:data:`ROLE_NAMES`), or None: which ``anchor`` of
    a header ``anchor,closer,farther,anchor`` is the anchor cannot be told (pandas read the second as
    ``anchor.1``, kept it as an extra column and fitted the first, without a word)."""
    seen = set()
    for column in columns:
        name = _norm(column)
        if name in seen and name in ROLE_NAMES:
            return str(column)
        seen.add(name)
    return None


def _detect(columns: Sequence[str], format: str, source: str, first_values=()) -> tuple[str, tuple[str, ...]]:
    """The format and its object columns (in canonical order) among normalised ``columns``; ``first_values``
    (some of the first rows' values) only shape the error's hint."""
    present = set(columns)
    wanted = FORMATS if format == "auto" else {format: FORMATS.get(format)}
    if format != "auto" and format not in FORMATS:
        raise ValueError(f"format must be 'auto' or one of {list(FORMATS)}, got {format!r}")
    for name, candidates in wanted.items():
        for cols in candidates:
            if present.issuperset(cols):
                return name, cols
    accepted = "; ".join(" | ".join(",".join(c) for c in FORMATS[f][:2 if f == "odd-one-out" else None])
                         for f in wanted)
    looks_like_data = sum(str(c).lstrip("-+").isdigit() for c in columns) >= 3  # object indices, not names
    # three or four names, none a column name roembed knows, that recur as values below: objects' names in a first
    # row of data (a header "query,similar,dissimilar" over indices gets the renaming hint alone)
    known = ROLE_NAMES
    names_as_header = (not looks_like_data and len(columns) in (3, 4) and not known & set(columns)
                       and bool(set(columns) & {_norm(v) for v in first_values}))
    mturk = [c for c in columns if str(c).startswith(("input.", "answer."))]  # Mechanical Turk batch results
    shown = list(columns) if len(columns) <= 12 else [*columns[:12], f"... {len(columns)} in all"]
    raise InvalidComparisonsError(
        f"{source}: unknown columns {shown}: found no comparison columns; expected {accepted}"
        + ("; the first line looks like data: name the columns of a file without a header (roembed fit "
           "--columns, or columns=[...] in Python)" if looks_like_data else "")
        + (_mturk_hint(mturk) if mturk else "")
        + ("; to read a file whose columns have other names, rename them, e.g. roembed fit --columns "
           "query=anchor,similar=closer,dissimilar=farther (columns={...} in Python)"
           if not (looks_like_data or mturk or names_as_header) else "")
        + ("; if the first line is already data (a file of names without a header), name the columns: roembed fit "
           f"--columns {','.join(FORMATS['triplets'][0] if len(columns) == 3 else FORMATS['quadruplets'][0])} "
           "(columns=[...] in Python)" if names_as_header else "")
    )


#: Suffixes of a Mechanical Turk batch's ``Input.*`` column that hold the shown object comparisons are made to.
_MTURK_HEAD = ("head", "anchor", "center", "centre", "query", "target", "reference", "probe", "main")


def _mturk_questions(mturk: Sequence[str]) -> tuple[list[str], list[str]]:
    """``(stems, numbers)`` of a Mechanical Turk batch that asks several numbered questions per HIT
    (``input.anchor1 ... input.anchor5``, ``answer.choice1 ...``): the column stems each number has, and the
    numbers; ``([], [])`` where the columns are not so numbered (one question per row)."""
    found: dict[str, set] = {}
    for column in mturk:
        stem = column.rstrip("0123456789")
        if stem != column:
            found.setdefault(column[len(stem):], set()).add(stem)
    stems = set.intersection(*found.values()) if len(found) > 1 else set()
    if len(stems) < 3:
        return [], []
    return sorted(stems, key=lambda c: (c.startswith("answer."), c)), sorted(found, key=int)


def _mturk_hint(mturk: Sequence[str]) -> str:
    """The unknown-columns hint for a Mechanical Turk batch: the ``--columns`` roles of its columns
    (:func:`_mturk_roles`), or, where each row holds several numbered questions, how to make one row per question
    first (read as they are, all but one question of each HIT would be left out)."""
    stems, numbers = _mturk_questions(mturk)
    if not stems:
        return (f"; a Mechanical Turk batch file? name the roles of its {', '.join(mturk[:4])} columns, e.g. roembed "
                f"fit --columns {_mturk_roles(mturk)} (columns={{...}} in Python)")
    columns = {column: role for role, column in _mturk_columns(stems).items()}
    return (f"; a Mechanical Turk batch of {len(numbers)} questions per row ({stems[0]}{numbers[0]} ... "
            f"{stems[0]}{numbers[-1]})? make one row per question first, e.g. long = pandas.wide_to_long("
            f"df.rename(columns=str.lower).reset_index(), {stems!r}, i='index', j='question'), then "
            f"roembed.from_frame(long, columns={columns!r})")


def _mturk_columns(mturk: Sequence[str]) -> dict[str, str]:
    """Salmon's roles (``head``, ``left``, ``right``, ``winner``) and the Mechanical Turk batch's ``Input.*`` /
    ``Answer.*`` column (normalised name) guessed for each from the suffixes: the one holding a head word is
    ``head``, those holding ``left`` / ``right`` are ``left`` / ``right``, a single answer column is ``winner``.
    A role it cannot place keeps the generic example's column name."""
    inputs = [c for c in mturk if c.startswith("input.")]
    answers = [c for c in mturk if c.startswith("answer.")]
    return {"head": next((c for c in inputs if c.split(".", 1)[1] in _MTURK_HEAD), "Input.head"),
            "left": next((c for c in inputs if "left" in c.split(".", 1)[1]), "Input.left"),
            "right": next((c for c in inputs if "right" in c.split(".", 1)[1]), "Input.right"),
            "winner": answers[0] if len(answers) == 1 else "Answer.choice"}


def _mturk_roles(mturk: Sequence[str]) -> str:
    """A ``--columns`` value naming salmon's roles of a Mechanical Turk batch's columns (:func:`_mturk_columns`)."""
    return ",".join(f"{column}={role}" for role, column in _mturk_columns(mturk).items())


class _RowProblems:
    """Collects invalid rows with their first problem; then raises at the earliest or skips them.

    ``shown`` (the object columns) is only looked at for the rows an error or example names.
    """

    def __init__(self, n_rows: int, where: RowLocator, on_invalid: str, shown: pd.DataFrame):
        if on_invalid not in ("raise", "skip"):
            raise ValueError(f"on_invalid must be 'raise' or 'skip', got {on_invalid!r}")
        self.bad = np.zeros(n_rows, dtype=bool)
        self.reason = np.empty(n_rows, dtype=object)
        self.where, self.skip, self.shown = where, on_invalid == "skip", shown

    def flag(self, mask, reason: str) -> None:
        mask = np.asarray(mask) & ~self.bad
        self.reason[mask] = reason
        self.bad |= mask

    def _describe(self, r: int) -> str:
        row = self.shown.iloc[[r]].to_numpy(dtype=object)[0]
        spans = any(isinstance(v, str) and "\n" in v for v in row)
        return (f"{self.reason[r]}: ({', '.join(_id_text(v) for v in row)})"
                + ("; a field spans several lines: a stray quote mark (\") opens it" if spans else ""))

    def resolve(self) -> SkipReport:
        """Raises for the earliest bad row, or (skipping) reports them all."""
        report = SkipReport()
        rows = np.flatnonzero(self.bad)
        if len(rows) and not self.skip:
            raise InvalidRowsError(f"{self.where(int(rows[0]))}: {self._describe(int(rows[0]))}")
        report.n_skipped = len(rows)
        report.examples = [f"{self.where(int(r))}: {self._describe(int(r))}" for r in rows[:5]]
        return report


def _is_integer_like(values: np.ndarray) -> np.ndarray:
    """Which entries of an object array read as numbers (missing ones count as numbers)."""
    num = pd.to_numeric(pd.Series(values.ravel()), errors="coerce").to_numpy()
    missing = pd.isna(values.ravel())
    return (~np.isnan(num) | missing).reshape(values.shape)


ZERO_PADDED = r"0\d+"
"""A whole number written with a leading zero (``007``): text, not a number (:func:`_zero_padded`)."""


def _zero_padded(values: np.ndarray) -> bool:
    """Whether any entry is a whole number written with a leading zero (``"007"``): such ids are text (as a
    number, ``007`` would be object 7 and be written back as ``7``), so the ids are names."""
    return bool(pd.Series(values.ravel(), dtype=object).astype(str).str.strip().str.fullmatch(ZERO_PADDED).any())


def _one_way_each(names: Sequence[str], source: str) -> None:
    """An error where two names found in the data are one whole number written two ways (``7`` and ``007``):
    with a leading zero the ids are names (:func:`_zero_padded`), and each spelling would be an object."""
    digits = pd.Series([n for n in names if n.isdecimal()], dtype=object)
    number = digits.map(int)
    twice = number.duplicated(keep=False)
    if twice.any():
        first = digits[number == number[twice].iloc[0]].tolist()
        raise InvalidComparisonsError(
            f"{source}: object ids {' and '.join(map(repr, first[:2]))} are one number written two ways (ids written "
            "with a leading zero are names, kept as written, so each would be an object): write every id alike")


def _id_text(value, longest: int = 40) -> str:
    """One object id as text: integral floats lose their ``.0``; missing is empty; text with line breaks or
    other control characters quoted as Python writes it (so a message stays one line), and cut after
    ``longest`` characters; a list or other container (a JSON cell) as Python writes it."""
    if not pd.api.types.is_scalar(value):
        text = repr(value.tolist() if isinstance(value, np.ndarray) else value)
    elif pd.isna(value):
        return ""
    elif isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    else:
        text = str(value)
    short = text if len(text) <= longest else text[:longest] + "..."
    return short if short.isprintable() else repr(short)


def _name_strings(block: pd.DataFrame) -> np.ndarray:
    """Object id columns as an object array of strings (None where missing), without the spaces around them:
    a stray space after a name in one cell ("ant ") would otherwise make a second object (a names file is
    read stripped too)."""
    out = []
    for col in block.columns:
        values = block[col]
        present = values.notna().to_numpy()
        if values.dtype.kind == "f" and np.all(values[present] == np.round(values[present])):
            values = values.astype("Int64")
        text = values.astype(str).str.strip().to_numpy(dtype=object)
        text[~present | (text == "")] = None
        out.append(text)
    return np.stack(out, axis=1)


_PLAIN_KINDS = ("string", "integer", "floating", "mixed-integer-float", "decimal", "empty")
"""``pandas.api.types.infer_dtype`` kinds of a column whose ids need no look cell by cell (:func:`_odd_ids`)."""


def _odd_ids(block: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Per row: an object id that is true or false; one that is a container (a JSON object or list).  Read as
    numbers, ``true`` was object 1; as names, ``{"id": 1}`` was the object "{'id': 1}"."""
    boolean = np.zeros(len(block), dtype=bool)
    container = np.zeros(len(block), dtype=bool)
    for column in block.columns:
        values = block[column]
        if values.dtype.kind == "b":
            boolean |= values.notna().to_numpy()
        elif values.dtype == object and pd.api.types.infer_dtype(values, skipna=True) not in _PLAIN_KINDS:
            cells = values.to_numpy()
            boolean |= np.fromiter((isinstance(v, (bool, np.bool_)) for v in cells), bool, len(cells))
            container |= np.fromiter((isinstance(v, (dict, list, tuple, set, np.ndarray)) for v in cells), bool,
                                     len(cells))
    return boolean, container


def _index_codes(block: pd.DataFrame, numeric_dtypes: bool, problems: _RowProblems) -> np.ndarray:
    """Object ids read as indices: float codes (NaN where unusable), each way a number can fail flagged."""
    if numeric_dtypes:
        num = block.to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        values = block.to_numpy(dtype=object)
        num = pd.to_numeric(pd.Series(values.ravel()), errors="coerce").to_numpy(np.float64).reshape(values.shape)
        problems.flag((np.isnan(num) & ~pd.isna(values)).any(axis=1),
                      "object id is not an integer object index (most ids are numbers, read as indices 0, 1, ...; if "
                      "they are names, some of them numbers, list every name in a names file: roembed fit --names, "
                      "names= in Python)")
    problems.flag(np.isnan(num).any(axis=1), "object index is missing")
    problems.flag(np.isinf(num).any(axis=1), "object index is infinite")
    problems.flag((np.isfinite(num) & (num > MAX_INDEX)).any(axis=1),
                  f"object index is too large (at most {MAX_INDEX:,}; ids that are not positions 0, 1, ... read "
                  "as names when they are text: write o123 for 123)")
    problems.flag((np.isfinite(num) & (num != np.round(num))).any(axis=1), "object index is not an integer")
    return num


def _numbers_after_names(strings: np.ndarray, found: pd.Index) -> np.ndarray:
    """Rows of a later frame (chunk, file) with a whole-number id, where that frame's distinct ids are mostly
    whole numbers written plainly (as the first frame's rule would read as indices) while the first frame's ids
    were names: a file of indices read with a file of names.  Read as names, its numbers would be objects of
    their own ("0", "1", ...), disconnected from the named ones (the other order stops at the first name, as a
    typo in a file of indices).  ``found``: the frame's distinct ids; only they are tested, so a long file of
    names costs one test per new name, not per cell."""
    ids = pd.Series(found, dtype=object)
    whole = ids.str.fullmatch(r"[+-]?\d+", na=False).to_numpy(dtype=bool)
    if not len(ids) or whole.mean() <= 0.5 or _zero_padded(ids.to_numpy()):
        return np.zeros(len(strings), dtype=bool)
    cells = pd.Series(strings.ravel(), dtype=object).isin(set(ids[whole])).to_numpy()
    return cells.reshape(strings.shape).any(axis=1)


def _other_form(strings: np.ndarray, unknown: np.ndarray, given: Sequence[str], fold=None) -> np.ndarray:
    """Rows with an unknown name (``unknown``, per cell) that is one of ``given`` in another Unicode form (the
    file's decomposed ``café``, as macOS writes file names, against a names file's composed one): both print
    alike, so "not in names" would puzzle.  With ``fold`` (``str.casefold``), in other letter case as well
    (``Apple`` against a names file's ``apple``)."""
    cells = unknown & ~pd.isna(strings)
    rows = np.zeros(len(strings), dtype=bool)
    if cells.any():
        def form(name: str) -> str:
            name = unicodedata.normalize("NFC", name)
            return fold(name) if fold is not None else name

        forms = {form(name) for name in given}
        rows[np.nonzero(cells)[0][[form(s) in forms for s in strings[cells]]]] = True
    return rows


class _ObjectIds:
    """Object ids across the frames (chunks, files) of one input: indices or names.

    Numbers are indices, unless one is written with a leading zero (``007``).  Text ids are names: looked up
    in ``names`` when given, else the distinct names in sorted order become the objects.  A column of numbers with a
    few words among them (at least half numbers) is taken as a typo, not as names.
    The first frame decides between indices and names for all of them (a file is one
    or the other).  Names found without ``names`` get provisional codes in order of first
    appearance, so every chunk is coded as it comes; :meth:`finish` sorts them and says
    how to renumber.
    """

    def __init__(self, names=None):
        self.given = check_names(names)
        self.index = pd.Index(self.given if self.given is not None else [], dtype=object)
        self.numeric: bool | None = None
        self.salmon_pairs: list | None = []  # (index, name) pairs of salmon's <role>_filename columns
        self.in_kept_rows = np.zeros(0, dtype=bool)  # per provisional name code: named by a kept row

    def codes(self, block: pd.DataFrame, problems: _RowProblems) -> np.ndarray:
        """Float codes of ``block``'s object ids (NaN where unusable, with the reason flagged)."""
        numeric_dtypes = all(block[c].dtype.kind in "iufb" for c in block.columns)
        boolean, container = _odd_ids(block)
        problems.flag(boolean, "object id is true or false, not an object index or name")
        problems.flag(container, "object id is a JSON object or list, not an object index or name (flatten the "
                                 "file first, e.g. pandas.json_normalize, and name the field that holds the id)")
        first_frame = self.numeric is None
        if first_frame:
            values = block.to_numpy(dtype=object)
            self.numeric = numeric_dtypes or (
                self.given is None and _is_integer_like(values).mean() > 0.5 and not _zero_padded(values))
        if self.numeric:
            return _index_codes(block, numeric_dtypes, problems)
        strings = _name_strings(block)
        problems.flag(pd.isna(strings).any(axis=1), "object name is missing")
        if self.given is None:
            found = pd.Index(pd.unique(strings[~problems.bad].ravel()), dtype=object).dropna()
            numbers = np.zeros(0, dtype=bool) if first_frame else _numbers_after_names(strings, found)
            if numbers.any():
                problems.flag(numbers,
                              "object id is a number where the first rows' ids are names (a file of indices read "
                              "with one of names?): write every id as a name; names that are numbers: list every "
                              "name in a names file (roembed fit --names, names= in Python)")
                found = pd.Index(pd.unique(strings[~problems.bad].ravel()), dtype=object).dropna()
            self.index = self.index.append(found.difference(self.index, sort=False))
        codes = self.index.get_indexer(strings.ravel()).astype(np.float64).reshape(strings.shape)
        codes[codes < 0] = np.nan
        if self.given is not None:
            problems.flag(_other_form(strings, np.isnan(codes), self.given),
                          "unknown object name: one of names in another Unicode form (a composed and a decomposed "
                          "é print alike); write both alike, unicodedata.normalize('NFC', name)")
            problems.flag(_other_form(strings, np.isnan(codes), self.given, str.casefold),
                          "unknown object name: one of names in other letter case (names are matched as written: "
                          "write both alike)")
        problems.flag(np.isnan(codes).any(axis=1), "unknown object name (not in names)")
        return codes

    def keep(self, codes: np.ndarray) -> None:
        """Notes the provisional name codes of the rows kept (names found, not given): a name that only skipped
        rows use names no object (until the seventieth session it named one, with no comparison and arbitrary
        coordinates in every output)."""
        if self.given is None and not self.numeric:
            grown = len(self.index) - len(self.in_kept_rows)  # names this chunk found
            if grown:
                self.in_kept_rows = np.concatenate([self.in_kept_rows, np.zeros(grown, dtype=bool)])
            self.in_kept_rows[codes.ravel()] = True

    def see_salmon(self, frame: pd.DataFrame) -> None:
        """Collects the target names of salmon's ``<role>_filename`` columns (see :func:`_salmon_names`)."""
        if self.salmon_pairs is not None:
            pairs = _salmon_pairs(frame)
            self.salmon_pairs = None if pairs is None else self.salmon_pairs + [pairs]

    def finish(self) -> tuple[tuple[str, ...] | None, np.ndarray | None]:
        """``(object_names, renumber)``: ``renumber[code]`` is the final index of a provisional code (or None)."""
        if self.given is not None:
            return self.given, None
        if not self.numeric:
            names = sorted(self.index[self.in_kept_rows])  # keep() saw every chunk's codes
            return tuple(names), pd.Index(names).get_indexer(self.index).astype(np.int32)
        if self.salmon_pairs:
            return _salmon_names(pd.concat(self.salmon_pairs).drop_duplicates()), None
        return None, None


def check_names(names) -> tuple[str, ...] | None:
    """Object names as a tuple of distinct strings (None stays None)."""
    if names is None:
        return None
    names = names_sequence(names, "names")
    seen = pd.Index(names)
    if seen.has_duplicates:
        raise InvalidComparisonsError(f"object name {seen[seen.duplicated()][0]!r} appears more than once in names")
    return names


def _salmon_pairs(frame: pd.DataFrame) -> pd.DataFrame | None:
    """The distinct ``(index, name)`` pairs of salmon's ``<role>_filename`` columns, or None without them or
    where a target is not an integer index (integers read as text count: a header repeated inside a joined
    export makes every column of its chunk text)."""
    roles = [r for r in ("head", "left", "right", "winner", "loser") if f"{r}_filename" in frame.columns]
    if not {"head", "left", "right"} <= set(roles):
        return None
    targets = {r: pd.to_numeric(frame[r], errors="coerce") for r in roles}
    if any(values.dtype.kind not in "iu" for values in targets.values()):
        return None
    return pd.DataFrame({"index": np.concatenate([targets[r].to_numpy() for r in roles]),
                         "name": np.concatenate([frame[f"{r}_filename"].astype(str).to_numpy() for r in roles])
                         }).drop_duplicates()


def _salmon_names(pairs: pd.DataFrame) -> tuple[str, ...] | None:
    """Target names from salmon's ``(index, name)`` pairs.

    A partial export (some targets never shown) names only some indices 0..n-1: the
    others get ``"#<index>"`` (they occur in no comparison).  Names that do not map one
    to one onto indices are not used, with a warning saying why.
    """
    clash = pairs["index"].duplicated(keep=False) | pairs["name"].duplicated(keep=False)
    if pairs["index"].min() < 0 or clash.any():
        first = pairs[clash].sort_values("index").head(2)
        warn(f"salmon target names not used: they do not map one to one onto target indices "
             f"(e.g. {', '.join(f'{i}: {n}' for i, n in zip(first['index'], first['name']))})",
             UserWarning)
        return None
    n = int(pairs["index"].max()) + 1
    names = [f"#{o}" for o in range(n)]
    for index, name in zip(pairs["index"], pairs["name"]):
        names[int(index)] = name
    return tuple(names) if len(set(names)) == n else None


def _checked_weight(frame: pd.DataFrame, column: str | None, problems: _RowProblems) -> np.ndarray | None:
    if column is None:
        return None
    raw = frame[column]
    weight = pd.to_numeric(raw, errors="coerce").to_numpy(np.float64)
    text = raw.astype(str).str.strip()
    missing = pd.isna(raw).to_numpy() | text.str.lower().isin(["nan", "na", "null"]).to_numpy()
    comma = np.isnan(weight) & text.str.fullmatch(r"[+-]?\d*,\d+").to_numpy()  # e.g. 1,5 from a European export
    grouped = np.isnan(weight) & text.str.fullmatch(r"[+-]?\d{1,3}(,\d{3})+").to_numpy()  # 1,234: 1234 or 1.234?
    for mask, reason in ((missing, "weight is NaN"),
                         (grouped, "weight is not a number: it has a comma, a thousands separator (write 1234 for "
                                   "1,234) or a decimal comma (write 1.234)"),
                         (comma, "weight is not a number: it has a decimal comma (write 1.5 for 1,5)"),
                         (np.isnan(weight), "weight is not a number"),
                         (np.isinf(weight), "weight is infinite"), (weight < 0, "weight is negative")):
        problems.flag(mask, reason)
    return weight


def _winner_by_side(frame: pd.DataFrame) -> pd.DataFrame:
    """Salmon-like responses whose ``winner`` names the side chosen, ``left`` or ``right`` (as some experiment
    exports record the answer), with the winner as that side's object.  A winner that is an object (one named
    "left" included) stays as it is."""
    winner = frame["winner"]
    if winner.dtype.kind != "O":
        return frame
    text = winner.to_numpy(dtype=object)  # Python's ==: no overflow on an id past int64 beside text columns
    an_object = (text == frame["left"].to_numpy(dtype=object)) | (text == frame["right"].to_numpy(dtype=object))
    if an_object.all():  # every winner an object: no text to look at
        return frame
    side = pd.Series("", index=frame.index)
    side[~an_object] = winner[~an_object].astype(str).str.strip().str.lower()
    left, right = (side == "left").to_numpy(), (side == "right").to_numpy()
    if not (left | right).any():
        return frame
    return frame.assign(winner=winner.where(~left, frame["left"]).where(~right, frame["right"]))


def _odd_one_out_rows(frame: pd.DataFrame, odd_col: str, ints: np.ndarray, problems: _RowProblems, base: int):
    """Shown objects and the odd one's position (0..2), from ``odd`` (an object) or ``odd_position``
    (positions counted from ``base``)."""
    if odd_col == "odd_position":
        pos = pd.to_numeric(frame[odd_col], errors="coerce").to_numpy(np.float64)
        problems.flag(np.isnan(pos) | (pos != np.round(pos)), "odd-one-out position is missing or not an integer")
        odd, odd_is = np.where(problems.bad, base, np.nan_to_num(pos)).astype(np.int64), "position"
    else:
        odd, odd_is = ints[:, 3], "object"
    structural, position = _odd_one_out_problems(ints[:, :3], odd, odd_is, base)
    one_based = base == 0 and odd_is == "position" and odd.min() >= 1 and odd.max() == 3  # THINGS, MATLAB
    for mask, reason in structural:
        if one_based and reason.startswith("the odd-one-out position"):
            reason += (f" (column {odd_col} holds 1, 2 and 3: if its positions count from 1, pass "
                       "odd_position_base=1, or --odd-position-base 1 to roembed fit)")
        problems.flag(mask, reason)
    return ints[:, :3], position


def _quadruplet_rows(kind: str, ints: np.ndarray, problems: _RowProblems) -> np.ndarray:
    """Quadruplets from triplet, quadruplet or salmon (``head, left, right, winner``) columns."""
    if kind == "salmon":
        head, left, right, winner = ints.T
        structural = [((head == left) | (head == right) | (left == right), "head, left and right are not distinct"),
                      ((winner != left) & (winner != right), "winner is neither the left nor the right object "
                                                                  "(nor the word left or right)")]
        quads = np.stack([head, winner, head, np.where(winner == left, right, left)], axis=1)
    else:
        quads = ints if kind == "quadruplets" else ints[:, [0, 1, 0, 2]]
        structural = invalid_quadruplet_rows(quads, None, triplets=kind == "triplets")
    for mask, reason in structural:
        problems.flag(mask, reason)
    return quads


def _renamed(frame: pd.DataFrame, columns) -> pd.DataFrame:
    """``frame`` with normalised column names, renamed or dropped as ``columns`` says (and other names of salmon's
    head and winner beside left and right as salmon's, :data:`SALMON_ALIASES`)."""
    frame = frame.rename(columns=_norm)
    if columns:
        mapping = {_norm(k): (None if v is None else _norm(v)) for k, v in dict(columns).items()}
        frame = frame.drop(columns=[k for k, v in mapping.items() if v is None and k in frame.columns])
        frame = frame.rename(columns={k: v for k, v in mapping.items() if v is not None})
    present = set(frame.columns)
    if {"left", "right"} <= present:
        found = {role: [a for a in aliases if a in present] for role, aliases in SALMON_ALIASES.items()}
        renames = {names[0]: role for role, names in found.items() if role not in present and len(names) == 1}
        if len(renames) + len(set(SALMON_ALIASES) & present) == len(SALMON_ALIASES):  # both roles named
            frame = frame.rename(columns=renames)
    if frame.columns.duplicated().any():
        raise InvalidComparisonsError(f"column {frame.columns[frame.columns.duplicated()][0]!r} appears twice")
    return frame


@dataclass
class _Layout:
    """Which column plays which role, decided once from the (normalised) column names."""

    kind: str
    object_cols: tuple[str, ...]
    meta: dict  # role -> column or None
    tie_col: str | None
    extra_cols: list[str]

    @property
    def odd_col(self) -> str | None:
        return self.object_cols[3] if self.kind == "odd-one-out" else None

    @property
    def id_cols(self) -> list[str]:
        """The columns holding object ids (an odd-one-out position is not one)."""
        return list(self.object_cols[:3] if self.odd_col == "odd_position" else self.object_cols)


def _layout(columns: list[str], format: str, source: str, first_values=()) -> _Layout:
    kind, object_cols = _detect(columns, format, source, first_values)
    meta = {role: next((c for c in aliases if c in columns), None) for role, aliases in METADATA.items()}
    for role in ("annotator", "weight", "gold"):  # two candidates would change the fit depending on which wins
        found = [c for c in METADATA[role] if c in columns]
        if len(found) > 1:
            raise InvalidComparisonsError(
                f"{source} line 1: columns {found[0]!r} and {found[1]!r} both look like the {role} column; "
                f"drop one (--columns {found[1]}= on the command line, columns={{{found[1]!r}: None}} in Python) "
                "or rename it")
    if meta["position"] is not None and kind in ("odd-one-out", "salmon"):
        where = "the odd one's position" if kind == "odd-one-out" else "which side (left or right) won"
        raise InvalidComparisonsError(f"{source}: column {meta['position']!r}: in {kind} answers the screen position is "
                                      f"{where}; drop the column (--columns {meta['position']}= on the command line, "
                                      f"columns={{{meta['position']!r}: None}} in Python)")
    tie_col = next((c for c in TIE_COLUMNS if c in columns), None)
    if tie_col is not None and kind == "odd-one-out":
        raise InvalidComparisonsError(f"{source}: column {tie_col!r}: ties are not supported for odd-one-out answers")
    consumed = set(object_cols) | set(meta.values()) | {tie_col}
    if kind == "salmon":
        consumed |= {"loser"} | {f"{r}_filename" for r in ("head", "left", "right", "winner", "loser")}
    return _Layout(kind, object_cols, meta, tie_col, [c for c in columns if c not in consumed])


def _joined(chunks: list) -> np.ndarray:
    """One array of the chunks' (emptying the list: numpy's promotion decides a column whose chunks differ)."""
    out = chunks[0] if len(chunks) == 1 else np.concatenate(chunks)
    chunks.clear()
    return out


def _one_object_per_text(values: np.ndarray, texts: dict) -> np.ndarray:
    """``values`` with each text one shared object (``texts``: text -> itself, across a file's blocks), where a
    column of text; other columns as they are.  pandas makes a string object per cell: 10^7 rows of worker ids
    ("w123") held 530 MB of strings; shared, the column is its 8-byte pointers."""
    if values.dtype != object or pd.api.types.infer_dtype(values, skipna=True) != "string":
        return values
    codes, distinct = factorize(values)  # a missing cell: -1, kept as it is
    shared = np.empty(len(distinct), dtype=object)
    shared[:] = [texts.setdefault(t, t) for t in distinct]
    return np.where(codes >= 0, shared[codes], values)


def _ids_as_read(ids: np.ndarray) -> np.ndarray:
    """A file's annotator ids, all text where some came back as numbers and some as text: pandas types each block
    of a file on its own (and JSON has both), so ids such as 44 and w7 in one column can arrive as the number 44
    in one block and the text "44" in another; then every id becomes its text (a whole number its digits), so
    the one worker stays one.  Ids of one kind are kept as they are, text without the spaces around it (as
    object names: "w1 " in one cell is still worker w1)."""
    kind = "" if ids.dtype != object else pd.api.types.infer_dtype(ids, skipna=False)
    if kind == "string":  # each distinct id stripped once, the ids staying shared objects (" w1" and "w1": one)
        codes, distinct = factorize(ids)
        stripped, same = np.empty(len(distinct), dtype=object), {}
        stripped[:] = [same.setdefault(t, t) for t in pd.Series(distinct, dtype=object).str.strip()]
        return stripped[codes]
    if not kind.startswith("mixed"):
        return ids
    whole = lambda v: isinstance(v, (int, float, np.number)) and not isinstance(v, bool) and float(v).is_integer()  # noqa: E731
    return np.array([str(int(v)) if whole(v) else str(v) for v in ids.tolist()], dtype=object)


def _joined_codes(chunks: list, renumber: np.ndarray | None, triplets: bool) -> np.ndarray:
    """The chunks' int32 object codes as one read-only int64 array, each chunk freed once copied.

    ``renumber`` maps provisional name codes to final ones; triplets ``(i, j, k)`` become
    quadruplets ``(i, j, i, k)`` on the way, so the result is built once at its final size.
    """
    order = [0, 1, 0, 2] if triplets else list(range(chunks[0].shape[1]))
    out = np.empty((sum(map(len, chunks)), len(order)), dtype=np.int64)
    start = 0
    chunks.reverse()
    while chunks:
        codes = chunks.pop()
        out[start:start + len(codes)] = (codes if renumber is None else renumber[codes])[:, order]
        start += len(codes)
    out.flags.writeable = False
    return out


def _empty_header_field(column) -> bool:
    """Whether ``column`` is pandas' name for an empty header field (``Unnamed: 3``, normalised ``unnamed:_3``),
    as a comma ending every line makes."""
    return _norm(column).startswith("unnamed:")


def _header_rows(frame: pd.DataFrame) -> np.ndarray | None:
    """Which rows of ``frame`` hold its column names, each field its own column's: a header inside the
    data, as where files that each begin with a header were joined into one.  Read as data, a file naming
    its objects would gain objects called "anchor", "closer" and "farther".  None where no row can: a
    column of numbers (a header in it would have made it text) or a column not named by text."""
    columns = [c for c in frame.columns if not _empty_header_field(c)]
    unnamed = [c for c in frame.columns if c not in columns]  # empty in a repeated header too
    if not len(frame) or not columns or not all(isinstance(c, str) and frame[c].dtype.kind == "O" for c in columns):
        return None
    rows = np.ones(len(frame), dtype=bool)
    for column in columns:
        rows &= frame[column].to_numpy(dtype=object) == column
        if not rows.any():
            return None
    for column in unnamed:
        rows &= frame[column].isna().to_numpy()
    return rows if rows.any() else None


class ComparisonsBuilder:
    """Builds one :class:`Comparisons` from frames added one after another: the chunks of a
    file (:func:`roembed.data.read_comparisons`), several files, or one frame (:func:`from_frame`).

    Each frame is checked as it comes -- column roles from the first frame, every row with
    the reason it is bad (``on_invalid="raise"`` stops at the first, naming it) -- and only
    its valid rows are kept, compactly: int32 object codes (a valid index is below 2**31),
    weights, tie flags and the metadata columns.  :meth:`finish` joins them once.  So a
    file read in chunks costs the result plus one chunk, and a file read whole is the same
    code with one chunk.  A metadata column whose chunks were parsed as different types is
    joined by numpy's promotion (numbers stay numbers; with text it becomes mixed objects),
    as pandas does for a large file it parses in pieces.
    """

    def __init__(self, *, format: str = "auto", names=None, columns=None, n_objects: int | None = None,
                 on_invalid: str = "raise", source: str | None = None, odd_position_base: int = 0,
                 index_base: int = 0):
        for name, base in (("odd_position_base", odd_position_base), ("index_base", index_base)):
            if base not in (0, 1):
                raise ValueError(f"{name} must be 0 or 1, got {base!r}")
        check_n_objects(n_objects)  # 1.5 was blamed on the file ("line 2: object index out of range (n_objects=1.5)")
        self.odd_position_base, self.index_base = int(odd_position_base), int(index_base)  # True reads as 1
        self.ids = _ObjectIds(names)
        if self.ids.given is not None and n_objects is not None and n_objects != len(self.ids.given):
            raise InvalidComparisonsError(f"n_objects={n_objects} but {len(self.ids.given)} object names")
        self.format, self.columns, self.n_objects, self.on_invalid = format, columns, n_objects, on_invalid
        self.source = source or "input"
        self.layout: _Layout | None = None
        self.n_rows, self.report = 0, SkipReport()
        self.zero_seen, self.out_max = False, -1  # for the check of a file counting from 1 (:meth:`_from_one_error`)
        self.codes, self.positions, self.weights, self.ties, self.golds, self.values = [], [], [], [], [], {}
        self.texts = {}  # each text of the metadata columns met so far, as one object (_one_object_per_text)

    def add(self, frame: pd.DataFrame, where: RowLocator | None = None) -> None:
        """Checks the rows of ``frame`` (``where`` names them) and keeps the valid ones."""
        header = _header_rows(frame)
        frame = _renamed(frame, self.columns)
        if self.layout is None:
            self.layout = _layout(list(frame.columns), self.format, self.source, frame.head(20).to_numpy().ravel())
            if self.odd_position_base and self.layout.odd_col != "odd_position":
                raise InvalidComparisonsError(
                    f"{self.source}: odd_position_base={self.odd_position_base} but there is no odd_position column "
                    f"(columns: {', '.join(map(str, frame.columns))})")
        self.n_rows += len(frame)
        if len(frame):
            self._keep(frame, *self._checked(frame, where or RowLocator(), header))

    def _index_bound(self) -> int | None:
        """The number of objects every index must stay below, when known before the end."""
        if self.ids.given is not None:
            return len(self.ids.given)
        return self.n_objects if self.ids.numeric else None

    def _checked(self, frame: pd.DataFrame, where: RowLocator, header: np.ndarray | None = None):
        """``(frame, keep, codes, position, weight, tie)`` of one frame, its bad rows flagged and resolved
        (``header``: the rows that repeat the column names, see :func:`_header_rows`)."""
        lay = self.layout
        if lay.kind == "salmon":
            frame = _winner_by_side(frame)
        if lay.kind == "salmon" and self.ids.given is None:
            self.ids.see_salmon(frame if header is None else frame[~header])
        problems = _RowProblems(len(frame), where, self.on_invalid, frame[list(lay.object_cols)])
        if header is not None:  # flagged first, so that its column names never become object names
            problems.flag(header, "the header line again (were files joined into one? pass them as separate "
                                  "files: they are read as one)")
        problems.flag(frame.isna().all(axis=1).to_numpy(), "an empty row (every field missing, as in the rows a "
                                                           "spreadsheet writes below its data; delete it)")
        tie = None if lay.tie_col is None else _tie_flags(frame[lay.tie_col], problems)
        if tie is not None and lay.kind == "salmon":  # a tie needs no winner: take left
            frame = frame.assign(winner=frame["winner"].where(~(tie & frame["winner"].isna()), frame["left"]))
        codes = self.ids.codes(frame[lay.id_cols], problems)
        if self.index_base:
            codes = self._from_base(codes, problems)
        ints = np.where(problems.bad[:, None], 0, np.nan_to_num(codes)).astype(np.int64)
        problems.flag((ints < 0).any(axis=1), "negative object index")
        bound = self._index_bound()
        if bound is not None:
            out = (ints >= bound).any(axis=1)
            # one past the last name, never more, and no object 0: a file counting from 1 (MATLAB, THINGS)
            self.zero_seen |= bool((codes == 0).any())
            self.out_max = max(self.out_max, int(ints[out].max()) if out.any() else -1)
            from_one = (self.ids.given is not None and not self.index_base and out.any()
                        and self.out_max == bound and not self.zero_seen)
            problems.flag(out, "object index out of range " + (
                f"(n_objects={bound})" if self.ids.given is None else
                f"(names were given for {bound} objects: indices {self.index_base}-{self.index_base + bound - 1}"
                + ("; if the file counts objects from 1, read it with --index-base 1 / index_base=1)"
                   if from_one else ")")))
        position = None
        if lay.kind == "salmon" and tie is None:  # the screen position: 0 left, 1 right (none with ties)
            position = (ints[:, 3] == ints[:, 2]).astype(np.int64)
        elif lay.meta["position"] is not None:
            position = _positions(frame[lay.meta["position"]], problems)
        if lay.kind == "odd-one-out":
            ints, position = _odd_one_out_rows(frame, lay.odd_col, ints, problems, self.odd_position_base)
        elif lay.kind == "triplets":  # kept as (i, j, k): widened once, in finish
            _quadruplet_rows(lay.kind, ints, problems)
        else:
            ints = _quadruplet_rows(lay.kind, ints, problems)
        weight = _checked_weight(frame, lay.meta["weight"], problems)
        if lay.meta["annotator"] is not None:
            column = lay.meta["annotator"]
            problems.flag(pd.isna(frame[column]).to_numpy(), f"annotator id is missing (to fit without ids, drop "
                                                             f"the column: --columns {column}=, columns={{{column!r}: None}})")
        gold = None if lay.meta["gold"] is None else _gold_marks(frame[lay.meta["gold"]], problems)
        self.report.merge(problems.resolve())
        return ~problems.bad, ints, position, weight, tie, gold

    def _from_one_error(self) -> None:
        """With names given and ``on_invalid="skip"``: where no row uses object 0 and the largest index is one past
        the last name, the file counts its objects from 1 (MATLAB's and THINGS' exports), and skipping the rows that
        name the last object would leave a map whose every name belongs to the next object, quietly: an error
        naming ``index_base`` instead.  (With ``on_invalid="raise"`` the first such row already stops the read,
        with the same advice.)"""
        given = self.ids.given
        if given is None or self.index_base or self.zero_seen or self.out_max != len(given):
            return
        raise InvalidComparisonsError(
            f"{self.source}: its object indices run up to {len(given)} and none is 0, with {len(given)} names "
            f"given: the file counts objects from 1, and read from 0 every name would belong to the next object; "
            f"read it with --index-base 1 / index_base=1 (if it does count from 0, the rows naming {len(given)} lie "
            f"past the names: give {len(given) + 1} names, or drop those rows)")

    def _from_base(self, codes: np.ndarray, problems: _RowProblems) -> np.ndarray:
        """Indices counted from ``index_base`` as 0-based codes (an index below the base flagged)."""
        base = self.index_base
        if not self.ids.numeric:
            raise InvalidComparisonsError(f"{self.source}: index_base={base} applies to integer object indices, "
                                          "but this file names its objects")
        problems.flag((codes < base).any(axis=1), f"object index below {base}, but index_base={base} (indices "
                                                  f"count from {base})")
        return codes - base

    def _keep(self, frame, keep, codes, position, weight, tie, gold) -> None:
        self.codes.append(codes[keep].astype(np.int32))
        self.ids.keep(self.codes[-1])
        for chunks, values in ((self.positions, position), (self.weights, weight), (self.ties, tie),
                               (self.golds, gold)):
            if values is not None:
                chunks.append(values[keep])
        lay = self.layout
        for col in [c for role, c in lay.meta.items() if c is not None and role not in PARSED] + lay.extra_cols:
            self.values.setdefault(col, []).append(_one_object_per_text(frame[col].to_numpy()[keep], self.texts))

    def finish(self) -> tuple[Comparisons, SkipReport]:
        """The comparisons of every valid row added, and what was skipped (warned about)."""
        if self.n_rows == 0:
            raise InvalidComparisonsError(f"{self.source}: no comparisons: the input is empty")
        if not any(len(c) for c in self.codes):
            raise InvalidComparisonsError(f"{self.source}: no valid comparisons ({self.report})")
        self.report.n_rows = self.n_rows
        self._from_one_error()
        self.report.warn()
        lay, (names, renumber) = self.layout, self.ids.finish()
        if self.ids.given is None and not self.ids.numeric:
            _one_way_each(names, self.source)
        weight = _joined(self.weights) if self.weights else None
        if weight is not None and not (weight > 0).any():
            raise InvalidComparisonsError(f"{self.source}: all comparison weights are zero (a comparison of weight 0 "
                                          "counts for nothing)")
        codes = _joined_codes(self.codes, renumber, triplets=lay.kind == "triplets")
        if self.index_base and names is None:  # objects keep the file's numbers as names: "1", "2", ...
            n = self.n_objects if self.n_objects is not None else int(codes.max()) + 1
            names = tuple(str(o + self.index_base) for o in range(n))
        metadata = {role: None if col is None else _joined(self.values[col])
                    for role, col in lay.meta.items() if role not in PARSED}
        if metadata.get("annotator") is not None:
            metadata["annotator"] = _ids_as_read(metadata["annotator"])
        metadata["gold"] = _joined(self.golds) if self.golds else None
        extra = {c: _joined(self.values[c]) for c in lay.extra_cols}
        metadata["extra"] = {c: v for c, v in extra.items()  # not a trailing comma's column of nothing
                             if not (_empty_header_field(c) and pd.isna(v).all())}
        position = _joined(self.positions) if self.positions else None
        if lay.kind == "odd-one-out":
            # an odd one given as an object says nothing about the screen: no positions then
            odd = position if lay.odd_col == "odd_position" else codes[np.arange(len(codes)), position]
            comparisons = from_odd_one_out(codes, odd, odd_is="position" if lay.odd_col == "odd_position" else "object",
                                           weight=weight, n_objects=self.n_objects, object_names=names, **metadata)
        else:
            comparisons = Comparisons(codes, n_objects=self.n_objects, weight=weight, object_names=names,
                                      position=position, **metadata)
            if self.ties:
                comparisons = split_ties(comparisons, _joined(self.ties))
        return comparisons, self.report


def _tie_flags(values: pd.Series, problems: _RowProblems) -> np.ndarray:
    """A tie column as booleans (1/0, true/false, yes/no; empty = not a tie)."""
    text = values.astype(str).str.strip().str.lower().to_numpy()
    text[pd.isna(values).to_numpy()] = ""
    problems.flag(~np.isin(text, list(_TRUE | _FALSE)), "tie is not true/false (1/0, yes/no)")
    return np.isin(text, list(_TRUE))


def _positions(values: pd.Series, problems: _RowProblems) -> np.ndarray:
    """A screen-position column as 0-based whole numbers (missing, fractional or negative ones flagged)."""
    numbers = pd.to_numeric(values, errors="coerce").to_numpy(np.float64)
    problems.flag(~(np.isfinite(numbers) & (numbers >= 0) & (numbers == np.round(numbers))),
                  "position is not a whole number >= 0 (0 = the first option shown)")
    return np.where(problems.bad, 0, np.nan_to_num(numbers)).astype(np.int64)


def _gold_marks(values: pd.Series, problems: _RowProblems) -> np.ndarray:
    """A known-answer column as 1 (right: 1, true, yes, right, correct), 0 (wrong) or NaN (empty: an ordinary
    question)."""
    text = values.astype(str).str.strip().str.lower()
    text[pd.isna(values).to_numpy()] = ""
    marks = text.map(_GOLD).to_numpy(np.float64)
    problems.flag(~text.isin(list(_GOLD)).to_numpy(), "gold is not 1 (right), 0 (wrong) or empty (an ordinary "
                                                      "question)")
    return marks


def split_ties(comparisons: Comparisons, tie) -> Comparisons:
    r"""Turns "same / can't decide" answers into half a vote each way.

    A tied response on query ``(i, j, l, k)`` with weight ``w`` becomes two
    responses, ``d(i, j) < d(l, k)`` and ``d(l, k) < d(i, j)``, each of weight ``w / 2``
    (same annotator, time and extra columns; an extra column ``tie`` marks them).

    The likelihood this implies: with ``p`` the model's probability that the first pair
    is closer, a tie contributes :math:`\tfrac12 \log p + \tfrac12 \log(1 - p)`, which is
    largest at ``p = 1/2`` -- a tie pulls the two distances together.  For margin losses
    (SOE's hinge) it is :math:`\tfrac12 [1 + s]_+ + \tfrac12 [1 - s]_+`, flat (at its minimum)
    while the two squared distances differ by less than the margin: a tie asks that
    neither pair be clearly closer.  Every estimator sees it through the vote weights, so
    nothing else changes; the comparison graph shows a tie as votes on both edges.
    """
    tie = np.asarray(tie, dtype=bool).reshape(-1)
    if tie.shape != (len(comparisons),):
        raise InvalidComparisonsError(f"got {tie.size} tie flags for {len(comparisons)} comparisons")
    marked = comparisons.with_extra(tie=tie)
    if not tie.any():
        return marked
    rows = np.concatenate([np.arange(len(comparisons)), np.flatnonzero(tie)])
    doubled = marked[rows]
    weight = np.array(doubled.weight)
    weight[tie[rows]] /= 2.0
    return doubled.with_weight(weight).flipped(np.arange(len(comparisons), len(rows)))


def as_pandas(frame):
    """``frame`` as a pandas DataFrame when it is another library's (polars, pyarrow, ...), read by column name as
    pandas' is (``numpy.asarray`` would read its columns by position); anything else is returned as it is.

    Such a frame has column names and speaks the Arrow stream or the dataframe-interchange protocol.  Each
    column goes through ``numpy.asarray``, which polars does without pyarrow; nulls become NaN or None, which
    the checks report by row like pandas' own.  A lazy frame is computed first, once: a polars ``LazyFrame``
    collected, a dask DataFrame computed (to pandas)."""
    if hasattr(frame, "collect") and hasattr(frame, "collect_schema"):  # polars' LazyFrame (np.asarray: a 0-d array)
        frame = frame.collect()
    elif hasattr(frame, "compute") and hasattr(frame, "columns") and not isinstance(frame, pd.DataFrame):  # dask
        frame = frame.compute()
    if isinstance(frame, (pd.DataFrame, np.ndarray)) or not (
            hasattr(frame, "__arrow_c_stream__") or hasattr(frame, "__dataframe__")):
        return frame
    names = getattr(frame, "column_names", None)  # pyarrow's Table and RecordBatch; .columns holds their arrays
    if names is None:
        names = getattr(frame, "columns", None)
    if names is None or isinstance(names, str):
        return frame
    return pd.DataFrame({str(name): np.asarray(frame[name]) for name in names})


def from_frame(frame: pd.DataFrame, *, format: str = "auto", names=None, columns=None, n_objects=None,
               on_invalid: str = "raise", return_report: bool = False, odd_position_base: int = 0,
               index_base: int = 0):
    """Comparisons from a DataFrame with named columns (pandas, or polars and pyarrow: :func:`as_pandas`).

    Object columns (:data:`FORMATS`, detected unless ``format`` is given): triplets
    ``anchor, closer, farther`` (or ``i, j, k``), quadruplets ``i, j, l, k``, salmon/NEXT
    ``head, left, right, winner`` (winner = the one of left/right closer to head), or
    odd-one-out ``a, b, c`` with ``odd`` (object) or ``odd_position`` (0-based; ``odd_position_base=1``
    for positions 1, 2, 3 as in THINGS' exports).  ``index_base=1``: integer object indices count
    from 1 (MATLAB, THINGS); they become 0-based codes, and without ``names`` the file's numbers
    are kept as the object names ("1", "2", ...).
    Metadata (:data:`METADATA`): annotator (``puid``, ``worker_id`` ...), weight,
    timestamp, response_time; a ``tie`` column (:data:`TIE_COLUMNS`) marks "same / can't
    decide" answers, which become half a vote each way (:func:`split_ties`).  Every other
    column is kept per response in ``Comparisons.extra``.  Object ids may be indices or
    names; ``names`` fixes the name order.  ``columns`` renames (``{"rater": "annotator"}``)
    or drops (``{"x": None}``) columns.
    Invalid rows raise, naming the row (by its index label where the index is not 0, 1, ...: ``"row with
    index 14"`` in a filtered table), or with ``on_invalid="skip"`` are dropped with a
    :class:`SkippedRowsWarning`; ``return_report=True`` also returns the :class:`SkipReport`.
    """
    builder = ComparisonsBuilder(format=format, names=names, columns=columns, n_objects=n_objects,
                                 on_invalid=on_invalid, odd_position_base=odd_position_base,
                                 index_base=index_base)
    frame = as_pandas(frame)
    if not isinstance(frame, pd.DataFrame):  # a Series or an array was "... has no attribute 'columns'"
        raise TypeError(f"from_frame takes a table with named columns (pandas, polars, pyarrow); got "
                        f"{type(frame).__name__} (rows of object indices: Comparisons(rows) or as_comparisons(rows))")
    twice = frame.columns[frame.columns.duplicated()]
    if len(twice):  # was "'DataFrame' object has no attribute 'dtype'"
        raise InvalidComparisonsError(f"input: column {twice[0]!r} appears more than once")
    try:
        builder.add(frame, _index_locator(frame))
    except InvalidComparisonsError as exc:
        indexed = [n for n in frame.index.names if n is not None and _norm(n) in ROLE_NAMES]
        if indexed and "unknown columns" in str(exc):  # frame.set_index("anchor"): its column is the index now
            raise InvalidComparisonsError(f"{exc}; {indexed[0]!r} is the table's index, not a column: "
                                          "frame.reset_index() makes it one") from None
        raise
    comparisons, report = builder.finish()
    return (comparisons, report) if return_report else comparisons


def _index_locator(frame) -> RowLocator | None:
    """Rows named by their index labels where those are not the positions 0, 1, ... (a filtered or re-indexed
    pandas table, where ``frame.loc[label]`` finds the row and ``"row 5"`` would point at another), by position
    otherwise (also where labels repeat, as in a concatenated or dask-computed table)."""
    index = getattr(frame, "index", None)
    if not isinstance(index, pd.Index) or index.equals(pd.RangeIndex(len(index))) or not index.is_unique:
        return None
    return RowLocator("row with index", lines=np.asarray(index))


def _object_column(comparisons: Comparisons, indices: np.ndarray, names: bool):
    if names and comparisons.object_names is not None:
        return np.asarray(comparisons.object_names, dtype=object)[indices]
    return indices


def _metadata_columns(comparisons: Comparisons, frame: pd.DataFrame, annotator: str = "annotator",
                      position: bool = True) -> pd.DataFrame:
    """``frame`` with the responses' metadata columns (``position`` only when ``position``: a salmon file says
    it by which side won)."""
    if not np.all(comparisons.weight == 1):
        frame["weight"] = comparisons.weight
    for role, col in (("annotator", annotator), ("timestamp", "timestamp"), ("response_time", "response_time"),
                      ("gold", "gold"), ("position", "position")):
        values = getattr(comparisons, role)
        if values is not None and (position or role != "position"):
            frame[col] = values
    for col, values in comparisons.extra.items():
        frame[col] = values
    return frame


def to_frame(comparisons: Comparisons, *, names: bool = False) -> pd.DataFrame:
    """One row per response: ``anchor, closer, farther`` for triplets, else ``i, j, l, k``.

    With ``names=True`` the object columns hold object names (when there are any).
    Metadata columns follow; ``weight`` only when some weight is not 1.
    """
    if comparisons.is_triplet:
        cols, values = ("anchor", "closer", "farther"), comparisons.triplets
    else:
        cols, values = ("i", "j", "l", "k"), comparisons.quadruplets
    frame = pd.DataFrame({c: _object_column(comparisons, values[:, t], names) for t, c in enumerate(cols)})
    return _metadata_columns(comparisons, frame)


def to_salmon(comparisons: Comparisons, *, names: bool = False) -> pd.DataFrame:
    """Triplets as salmon/NEXT responses: ``head, left, right, winner, loser`` (+ ``puid``).

    ``left``/``right`` are the two candidates where they were on the screen when the responses carry screen
    positions of two sides (0 left, 1 right, as :func:`from_frame` reads a salmon file), else in increasing
    index order (other positions, e.g. an odd one's of three, are not written).
    """
    head, closer, farther = comparisons.triplets.T
    position = comparisons.position
    if position is not None and position.max() <= 1:
        left, right = np.where(position == 0, closer, farther), np.where(position == 0, farther, closer)
    else:
        left, right = np.minimum(closer, farther), np.maximum(closer, farther)
    frame = pd.DataFrame({col: _object_column(comparisons, v, names) for col, v in
                          (("head", head), ("left", left), ("right", right), ("winner", closer), ("loser", farther))})
    return _metadata_columns(comparisons, frame, annotator="puid", position=False)
