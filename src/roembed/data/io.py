"""Reading and writing comparison files: CSV/TSV, and Parquet when pyarrow is installed.

Columns are recognised by name (see :data:`roembed.data.convert.FORMATS` and
``METADATA``).  A file without a header must hold 3 (triplet) or 4 (quadruplet)
integer columns.  Errors name the file and line (the header is line 1).  Text files
may be compressed (``.gz``, ``.bz2``, ``.xz``, or a ``.zip`` holding one file, as
salmon ships its exports) and in any ``encoding``; several files read as one.
"""
from __future__ import annotations

import io
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from .._io import atomic_path, atomic_write
from .comparisons import Comparisons
from .convert import check_names, frame_to_comparisons, to_frame
from .validation import InvalidComparisonsError, RowLocator

__all__ = ["read_comparisons", "write_comparisons", "read_names", "sniff_separator"]

_PARQUET = (".parquet", ".pq")
_META_KEY = b"roembed"
_HEADERLESS = {3: ["anchor", "closer", "farther"], 4: ["i", "j", "l", "k"]}


_COMPRESSED = (".gz", ".bz2", ".xz", ".zip")


def _is_parquet(path: Path) -> bool:
    return path.suffix.lower() in _PARQUET


def _read_bytes(path: Path) -> tuple[bytes, Path]:
    """The file's (decompressed) bytes and the name its format is judged by (``a.tsv.gz`` -> ``a.tsv``)."""
    import bz2
    import gzip
    import lzma
    import zipfile

    suffix = path.suffix.lower()
    try:
        if suffix == ".zip":
            with zipfile.ZipFile(path) as archive:
                members = [m for m in archive.infolist() if not m.is_dir()
                           and not m.filename.startswith("__MACOSX/") and not Path(m.filename).name.startswith(".")]
                if len(members) != 1:
                    listed = ", ".join(m.filename for m in members[:4]) or "nothing"
                    raise InvalidComparisonsError(f"{path}: a .zip must hold exactly one file, it holds {listed}")
                return archive.read(members[0]), Path(members[0].filename)
        opener = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}.get(suffix, open)
        with opener(path, "rb") as fh:
            return fh.read(), path.with_suffix("") if suffix in _COMPRESSED else path
    except (OSError, EOFError, zipfile.BadZipFile, lzma.LZMAError) as exc:
        if suffix not in _COMPRESSED:
            raise
        raise InvalidComparisonsError(f"{path}: not a readable {suffix} file ({exc})") from None


def _decode(data: bytes, path: Path, encoding: str) -> str:
    """The text of ``data``; a byte the encoding cannot read is an error naming the file and line."""
    try:
        return data.decode(encoding)
    except LookupError:
        raise InvalidComparisonsError(f"{path}: unknown encoding {encoding!r}") from None
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        hint = "latin-1" if encoding.lower().replace("_", "-") in ("utf-8", "utf8", "utf-8-sig") else "utf-8"
        raise InvalidComparisonsError(
            f"{path} line {line}: not {encoding} text (byte {data[exc.start:exc.start + 1]!r}); "
            f"give its encoding, e.g. encoding={hint!r} (roembed fit --encoding {hint})") from None


def sniff_separator(path: Path, first_line: str) -> str:
    """The one separator sniffer of every table roembed reads (comparisons, names, labels):
    tab for ``.tsv``/``.tab`` or a tab in the first line, else comma, else semicolon."""
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


def _read_text(path: Path, columns, encoding: str = "utf-8"):
    data, logical = _read_bytes(path)
    text = _decode(data, path, encoding)
    first = text.split("\n", 1)[0].lstrip("\ufeff")
    if not first.strip():
        raise InvalidComparisonsError(f"{path}: no comparisons: the file is empty")
    sep = sniff_separator(logical, first)
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
        frame = pd.read_csv(io.StringIO(text.lstrip("\ufeff")), sep=sep, header=None if headerless else 0,
                            names=names if headerless else None, skip_blank_lines=False, keep_default_na=False,
                            na_values=[""], skipinitialspace=True)
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
    except ImportError:
        raise ImportError(f"{path}: reading Parquet needs pyarrow: pip install 'roembed[parquet]'") from None
    table = pq.read_table(path)
    stored = json.loads((table.schema.metadata or {}).get(_META_KEY, b"{}"))
    return table.to_pandas(), stored


def read_comparisons(path, format: str = "auto", names=None, on_invalid: str = "raise", *, columns=None,
                     n_objects: int | None = None, encoding: str = "utf-8", return_report: bool = False):
    """Reads comparisons from a CSV/TSV (separator guessed) or Parquet file, or from several.

    ``path``: a file, or a list of files with the same columns, read as one (errors
    name the file and line of each row).  Text files may be compressed (``.gz``,
    ``.bz2``, ``.xz``, or a ``.zip`` holding one file) and are decoded with ``encoding``
    (a byte it cannot read is an error naming the file and line).
    ``format``: ``"auto"`` (by column names), ``"triplets"``, ``"quadruplets"``,
    ``"salmon"`` or ``"odd-one-out"``.  Object ids in the file may be integer indices
    or names (string ids); names become ``object_names``, in the order of ``names``
    (a sequence or a file with one name per line) when given, else sorted.
    ``columns``: a dict renaming (``{"rater": "annotator"}``) or dropping (``{"x": None}``)
    columns, or a list naming the columns of a file without a header.  Columns that are
    neither objects nor known metadata are kept per response in ``Comparisons.extra``;
    a ``tie`` column marks "same / can't decide" answers (half a vote each way, see
    :func:`roembed.data.convert.split_ties`).
    ``on_invalid="raise"`` stops at the first bad row, naming file and line;
    ``"skip"`` drops bad rows with a :class:`SkippedRowsWarning` (count and first examples)
    and, with ``return_report=True``, returns ``(comparisons, SkipReport)``.
    """
    paths = [Path(p) for p in path] if isinstance(path, (list, tuple)) else [Path(path)]
    if not paths:
        raise InvalidComparisonsError("no comparisons: no file given")
    for p in paths:
        if p.is_dir():
            raise InvalidComparisonsError(f"{p}: is a folder, not a file")
        if not p.is_file():
            raise FileNotFoundError(f"no such file: {p}")
    if names is not None:
        names = read_names(names)
    parts = [_read_frame(p, columns, encoding) for p in paths]
    frame, where, rename, stored = parts[0]
    if len(parts) > 1:
        frame, where = _stack(parts, rename)
    elif stored:
        if names is None and stored.get("object_names") is not None:
            names = tuple(stored["object_names"])
        if n_objects is None and names is None:
            n_objects = stored.get("n_objects")
    comparisons, report = frame_to_comparisons(frame, format=format, names=names, columns=rename,
                                               n_objects=n_objects, on_invalid=on_invalid, where=where)
    return (comparisons, report) if return_report else comparisons


def _read_frame(path: Path, columns, encoding: str):
    """``(frame, where, rename, stored)`` of one file; ``stored`` is a Parquet file's roembed metadata."""
    if _is_parquet(path):
        if isinstance(columns, (list, tuple)):
            raise ValueError("a list of column names is only for text files without a header; pass a dict")
        frame, stored = _read_parquet(path)
        return frame, RowLocator(str(path)), columns, stored
    frame, where, rename = _read_text(path, columns, encoding)
    return frame, where, rename, {}


def _stack(parts, rename):
    """Frames of several files as one, after checking they have the same columns."""
    from .convert import _norm

    first = parts[0][0]
    columns = sorted(map(_norm, first.columns))
    for frame, where, _, _ in parts[1:]:
        if sorted(map(_norm, frame.columns)) != columns:
            raise InvalidComparisonsError(
                f"{where.source} line 1: columns {list(frame.columns)} differ from those of "
                f"{parts[0][1].source} ({list(first.columns)}); several files must have the same columns")
    frames = [frame.rename(columns=_norm) for frame, *_ in parts]
    frame = pd.concat(frames, ignore_index=True)
    where = RowLocator.concat([p[1] for p in parts], [len(f) for f in frames])
    return frame, where


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
