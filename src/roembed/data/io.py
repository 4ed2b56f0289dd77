"""Reading and writing comparison files: CSV/TSV, and Parquet when pyarrow is installed.

Columns are recognised by name (see :data:`roembed.data.convert.FORMATS` and
``METADATA``).  A file without a header must hold 3 (triplet) or 4 (quadruplet)
integer columns.  Errors name the file and line (the header is line 1).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from .._io import atomic_path, atomic_write
from .comparisons import Comparisons
from .convert import check_names, frame_to_comparisons, to_frame
from .validation import InvalidComparisonsError, RowLocator

__all__ = ["read_comparisons", "write_comparisons", "read_names"]

_PARQUET = (".parquet", ".pq")
_META_KEY = b"roembed"
_HEADERLESS = {3: ["anchor", "closer", "farther"], 4: ["i", "j", "l", "k"]}


def _is_parquet(path: Path) -> bool:
    return path.suffix.lower() in _PARQUET


def _separator(path: Path, first_line: str) -> str:
    if path.suffix.lower() in (".tsv", ".tab") or "\t" in first_line:
        return "\t"
    if "," in first_line or ";" not in first_line:
        return ","
    return ";"


def read_names(source) -> tuple[str, ...]:
    """Object names from a sequence or a text file with one name per line (blank lines skipped)."""
    if isinstance(source, (str, Path)):
        lines = Path(source).read_text(encoding="utf-8").splitlines()
        source = [line.strip() for line in lines if line.strip()]
    return check_names(source)


def _mixed_width_error(frame: pd.DataFrame, where: RowLocator) -> None:
    """A headerless file whose rows end early mixes triplets and quadruplets."""
    present = frame.notna().to_numpy()
    width = present.sum(axis=1)
    trailing_gap = np.array([row[:w].all() and not row[w:].any() for row, w in zip(present, width)])
    short = trailing_gap & (width > 0) & (width < frame.shape[1])
    if short.any():
        r = int(np.flatnonzero(short)[0])
        raise InvalidComparisonsError(
            f"{where(r)}: has {width[r]} indices but other rows have {frame.shape[1]}: "
            "triplets (3) and quadruplets (4) cannot be mixed in one file"
        )


def _read_text(path: Path, columns):
    with open(path, encoding="utf-8") as fh:
        first = fh.readline()
    if not first.strip():
        raise InvalidComparisonsError(f"{path}: no comparisons: the file is empty")
    sep = _separator(path, first)
    fields = [f.strip() for f in first.rstrip("\r\n").split(sep)]
    headerless = all(re.fullmatch(r"[-+]?\d+(\.\d*)?", f) for f in fields)
    if headerless and not isinstance(columns, (list, tuple)):
        if len(fields) not in _HEADERLESS:
            raise InvalidComparisonsError(
                f"{path} line 1: a file without a header must have 3 (triplet) or 4 (quadruplet) columns, "
                f"got {len(fields)}; add a header or pass columns=[names...]"
            )
        columns = _HEADERLESS[len(fields)]
    rename = None if isinstance(columns, (list, tuple)) or columns is None else columns
    names = list(columns) if isinstance(columns, (list, tuple)) else None
    try:
        frame = pd.read_csv(path, sep=sep, header=None if headerless else 0, names=names if headerless else None,
                            skip_blank_lines=False, keep_default_na=False, na_values=[""], skipinitialspace=True)
    except pd.errors.ParserError as exc:
        found = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(exc))
        if not found:
            raise InvalidComparisonsError(f"{path}: cannot parse: {exc}") from None
        expected, line, saw = map(int, found.groups())
        mixed = ": triplets (3) and quadruplets (4) cannot be mixed" if {expected, saw} == {3, 4} else ""
        raise InvalidComparisonsError(f"{path} line {line}: has {saw} fields but line 1 has {expected}{mixed}") from None
    if not headerless and names is not None:
        frame.columns = names
    where = RowLocator(str(path), lines=np.arange(len(frame)) + (1 if headerless else 2))
    if headerless:
        _mixed_width_error(frame, where)
    return frame, where, rename


def _read_parquet(path: Path):
    try:
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - pyarrow is in the test extra
        raise ImportError(f"reading {path} needs pyarrow: pip install 'roembed[parquet]'") from None
    table = pq.read_table(path)
    stored = json.loads((table.schema.metadata or {}).get(_META_KEY, b"{}"))
    return table.to_pandas(), stored


def read_comparisons(path, format: str = "auto", names=None, on_invalid: str = "raise", *, columns=None,
                     n_objects: int | None = None, return_report: bool = False):
    """Reads comparisons from a CSV/TSV (separator guessed) or Parquet file.

    ``format``: ``"auto"`` (by column names), ``"triplets"``, ``"quadruplets"``,
    ``"salmon"`` or ``"odd-one-out"``.  Object ids in the file may be integer indices
    or names (string ids); names become ``object_names``, in the order of ``names``
    (a sequence or a file with one name per line) when given, else sorted.
    ``columns``: a dict renaming (``{"rater": "annotator"}``) or dropping (``{"x": None}``)
    columns, or a list naming the columns of a file without a header.
    ``on_invalid="raise"`` stops at the first bad row, naming file and line;
    ``"skip"`` drops bad rows with a :class:`SkippedRowsWarning` (count and first examples)
    and, with ``return_report=True``, returns ``(comparisons, SkipReport)``.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    if names is not None:
        names = read_names(names)
    if _is_parquet(path):
        if isinstance(columns, (list, tuple)):
            raise ValueError("a list of column names is only for text files without a header; pass a dict")
        frame, stored = _read_parquet(path)
        where, rename = RowLocator(str(path)), columns
        if names is None and stored.get("object_names") is not None:
            names = tuple(stored["object_names"])
        if n_objects is None and names is None:
            n_objects = stored.get("n_objects")
    else:
        frame, where, rename = _read_text(path, columns)
    comparisons, report = frame_to_comparisons(frame, format=format, names=names, columns=rename,
                                               n_objects=n_objects, on_invalid=on_invalid, where=where)
    return (comparisons, report) if return_report else comparisons


def write_comparisons(comparisons: Comparisons, path, *, names: bool = True, names_path=None) -> Path:
    """Writes comparisons atomically as CSV/TSV (by suffix) or Parquet; :func:`read_comparisons` reads them back.

    Columns are those of :func:`roembed.data.convert.to_frame`; with ``names=True``
    the object columns hold object names when there are any.  Parquet also stores
    ``n_objects`` and all object names, so it round-trips exactly.  A CSV keeps only the
    objects that occur; pass ``names_path`` to also write the names (one per line) and
    read them back with ``read_comparisons(path, names=names_path)`` for an exact round trip.
    """
    path = Path(path)
    frame = to_frame(comparisons, names=names)
    if _is_parquet(path):
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:  # pragma: no cover
            raise ImportError(f"writing {path} needs pyarrow: pip install 'roembed[parquet]'") from None
        table = pa.Table.from_pandas(frame, preserve_index=False)
        meta = {"n_objects": comparisons.n_objects, "object_names": comparisons.object_names}
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), _META_KEY: json.dumps(meta).encode()})
        with atomic_path(path) as tmp:
            pq.write_table(table, tmp)
    else:
        sep = "\t" if path.suffix.lower() in (".tsv", ".tab") else ","
        with atomic_write(path, newline="", encoding="utf-8") as fh:
            frame.to_csv(fh, index=False, sep=sep)
    if names_path is not None:
        if comparisons.object_names is None:
            raise InvalidComparisonsError("names_path given but the comparisons have no object names")
        with atomic_write(names_path, encoding="utf-8") as fh:
            fh.write("".join(f"{name}\n" for name in comparisons.object_names))
    return path
