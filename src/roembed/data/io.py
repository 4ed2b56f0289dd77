"""Reading and writing comparison files: CSV/TSV, JSON, Parquet and Feather when pyarrow is installed, and one
array in a MATLAB or NumPy file.

Columns are recognised by name (see :data:`roembed.data.convert.FORMATS` and
``METADATA``).  A file without a header must hold 3 (triplet) or 4 (quadruplet)
integer columns.  Errors name the file and line (the file's first line is line 1).  Text files
may be compressed (``.gz``, ``.bz2``, ``.xz``, or a ``.zip`` holding one file, as
salmon ships its exports; gzip, bzip2 and xz are also known by their first bytes), come through a pipe,
and be in any ``encoding``; several files read as one.
"""
from __future__ import annotations

import bz2
import codecs
import csv
import filecmp
import gzip
import io
import json
import lzma
import os
import re
import warnings
import zipfile
from contextlib import ExitStack, contextmanager
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from .._csv import write_frame
from .._io import atomic_path, atomic_write, missing_file
from .._optional import import_optional
from .._warn import warn
from .coerce import as_comparisons
from .comparisons import Comparisons
from .convert import (FORMATS, ZERO_PADDED, ComparisonsBuilder, _norm, check_names, is_tensor, repeated_role,
                      to_frame)
from .validation import InvalidComparisonsError, RowLocator

__all__ = ["read_comparisons", "write_comparisons", "read_names", "sniff_separator"]

_PARQUET = (".parquet", ".pq")
_META_KEY = b"roembed"
_HEADERLESS = {3: ["anchor", "closer", "farther"], 4: ["i", "j", "l", "k"]}
#: The separator of a comparisons file whose first line has no tab, comma or semicolon but spaces between
#: fields (``numpy.savetxt``'s default, MATLAB's ``save -ascii``): any run of spaces or tabs.
WHITESPACE = r"\s+"
_NUMBER = re.compile(r"[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?")  # 12, 12.0, 1.2e+01


_COMPRESSED = (".gz", ".bz2", ".xz", ".zip")
_OPENERS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
#: A stream's first bytes that say it is compressed, whatever its name says (``zcat``-free pipes, ``cat a.gz |``).
_MAGIC = {rb"\x1f\x8b": ".gz", rb"BZh[1-9]1AY&SY": ".bz2", rb"\xfd7zXZ\x00": ".xz"}
#: Characters of text per chunk (a chunk ends at a line end) and rows per batch of a Parquet file:
#: reading holds the result plus one chunk.  Tests set them small to read a file in many chunks.
CHUNK_CHARS = 1 << 22
QUOTED_CHARS = 1 << 22  # a quoted field longer than this is taken for a stray quote mark (:func:`_blocks`)
CHUNK_ROWS = 1 << 18


def _is_parquet(path: Path) -> bool:
    return path.suffix.lower() in _PARQUET


def _zip_member(archive, path: Path):
    members = [m for m in archive.infolist() if not m.is_dir()
               and not m.filename.startswith("__MACOSX/") and not Path(m.filename).name.startswith(".")]
    if len(members) != 1:
        listed = ", ".join(m.filename for m in members[:4]) or "nothing"
        how = f"; extract the one to read (unzip -p {path} {members[0].filename} | roembed fit - ...)" if members else ""
        raise InvalidComparisonsError(f"{path}: a .zip must hold exactly one file, it holds {listed}{how}")
    inner = Path(members[0].filename)
    if inner.suffix.lower() in _COMPRESSED or inner.name.lower().endswith((".tar", ".tgz")):
        # a .zip inside was called "a zip archive under another name"; a .csv.gz inside was read as text
        raise InvalidComparisonsError(f"{path}: holds {members[0].filename}, itself an archive or compressed: unzip "
                                      f"{path.name} first and read {inner.name}")
    return members[0]


@contextmanager
def _binary(path: Path):
    """``(stream, name)``: the file's (decompressed) bytes as a stream, and the name its format is
    judged by (``a.tsv.gz`` -> ``a.tsv``).  A broken archive, found while reading, is an error naming the file."""
    suffix = path.suffix.lower()
    try:
        with ExitStack() as stack:
            if suffix == ".zip":
                archive = stack.enter_context(zipfile.ZipFile(path))
                member = _zip_member(archive, path)
                yield stack.enter_context(archive.open(member)), Path(member.filename)
            elif suffix in _COMPRESSED:
                yield stack.enter_context(_OPENERS[suffix](path, "rb")), path.with_suffix("")
            else:
                raw = stack.enter_context(open(path, "rb"))
                head = raw.peek(10)[:10]
                magic = next((kind for mark, kind in _MAGIC.items() if re.match(mark, head)), None)
                yield stack.enter_context(_OPENERS[magic](raw, "rb")) if magic else raw, path
    except (OSError, EOFError, zipfile.BadZipFile, lzma.LZMAError) as exc:
        if suffix not in _COMPRESSED and not isinstance(exc, (EOFError, lzma.LZMAError, gzip.BadGzipFile)):
            raise
        kind = suffix if suffix in _COMPRESSED else "compressed"
        raise InvalidComparisonsError(f"{path}: not a readable {kind} file ({exc})") from None


@contextmanager
def _text(path: Path, encoding: str):
    """``(stream, name)``: the file's text, decoded as it is read; a byte the encoding cannot read is
    an error naming the file and line (found by :func:`_undecodable`)."""
    try:
        codec = codecs.lookup(encoding).name
    except LookupError:
        raise InvalidComparisonsError(f"{path}: unknown encoding {encoding!r}") from None
    try:
        with _binary(path) as (raw, name):  # utf-8-sig: utf-8 that drops a leading byte-order mark
            head = raw.peek(512)[:512] if hasattr(raw, "peek") else b""
            foreign = _binary_format(head, name)
            if foreign:
                raise InvalidComparisonsError(f"{path}: {foreign}")
            marked = _marked_encoding(head) if codec == "utf-8" else None  # Excel's "Unicode text": utf-16
            encoding = marked or encoding
            # newline=None: "\r\n" and a lone "\r" (Excel for Mac's "CSV (Macintosh)") read as "\n"
            yield io.TextIOWrapper(raw, encoding=marked or ("utf-8-sig" if codec == "utf-8" else encoding),
                                   newline=None), name
    except UnicodeDecodeError:
        raise _undecodable(path, encoding) from None


_SPREADSHEETS = (".xlsx", ".xls", ".ods")
#: Archives and compressions roembed does not open, known by their first bytes, and what to do instead.
_FOREIGN = {b"\x28\xb5\x2f\xfd": "Zstandard-compressed (.zst): decompress it first (zstd -d), or compress with "
                                   "gzip, bzip2 or xz, which roembed reads",
            b"7z\xbc\xaf\x27\x1c": "a 7-Zip archive: extract the file first",
            b"Rar!\x1a\x07": "a RAR archive: extract the file first",
            b"\x89HDF\r\n\x1a\n": "an HDF5 file (older psiz versions and MATLAB v7.3 save these), which roembed "
                                  "does not read: write the comparisons as CSV or Parquet; psiz's rank trials "
                                  "convert in Python, with h5py: f = h5py.File(path); roembed.data.from_rank_trials("
                                  "f['stimulus_set'][()], f['n_select'][()])",
            b"SQLite format 3\x00": "an SQLite database: export the table of comparisons as CSV "
                                    "(sqlite3 -header -csv FILE 'select * from TABLE' > votes.csv)",
            **{b"\x80" + bytes([protocol]): "a Python pickle, which roembed never loads (loading one can run code): "
               "save the table with DataFrame.to_csv or to_parquet" for protocol in range(2, 6)}}


def _binary_format(head: bytes, name: Path) -> str | None:
    """What ``head``, the first bytes of a file (decompressed) read as text under ``name``, says it is when it is
    no text: an archive or compression roembed cannot read (a tar archive, ``.tar.gz`` included; Zstandard, 7-Zip,
    RAR, HDF5, SQLite, a pickle), or a Parquet, Feather or zip file under another name; else None."""
    if head[257:262] == b"ustar" and b"\x00" in head[:100]:  # a NUL-padded name field: not text with "mustard"
        return "a tar archive: extract the file first (tar -xf), or give the one file inside it"
    if head.startswith(b"PAR1") and b"\x00" in head:  # binary, not a header line "PAR1,PAR2"
        return "a Parquet file under another name: name it .parquet"
    if head.startswith(b"ARROW1\x00"):
        return "a Feather/Arrow file under another name: name it .feather"
    if head.startswith(b"PK\x03\x04") and str(name).startswith(("/dev/", "/proc/")):  # a pipe has no name to fix
        return ("a zip archive, piped: give roembed the .zip by its name (roembed fit export.zip), or pipe the one "
                "file inside it (unzip -p export.zip | roembed fit -)")
    if head.startswith(b"PK\x03\x04") and name.suffix.lower() not in _SPREADSHEETS:
        return ("a zip archive under another name: name it .zip (it must hold the one comparisons file), or, "
                "for a spreadsheet (.xlsx is a zip too), save the sheet as CSV")
    return next((what for magic, what in _FOREIGN.items() if head.startswith(magic)), None)


def _marked_encoding(head: bytes) -> str | None:
    """``"utf-32"`` or ``"utf-16"`` when ``head``, a file's first bytes, start with that encoding's byte-order
    mark, else None."""
    if head.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        return "utf-32"
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    return None


def _undecodable(path: Path, encoding: str) -> InvalidComparisonsError:
    """The error for the first byte of ``path`` that ``encoding`` cannot read, naming its line
    (the file is read again, in blocks, through an incremental decoder; a pipe, read once, gives no line)."""
    hint = "latin-1" if encoding.lower().replace("_", "-") in ("utf-8", "utf8", "utf-8-sig") else "utf-8"
    advice = f"give its encoding, e.g. encoding={hint!r} (roembed fit --encoding {hint})"
    if not path.is_file():  # a pipe: opening a named one again would wait for a writer
        return InvalidComparisonsError(f"{path}: not {encoding} text; {advice}")
    decoder, newlines = codecs.getincrementaldecoder(encoding)(), 0
    with _binary(path) as (raw, _):
        while True:
            block = raw.read(1 << 20)
            pending = decoder.getstate()[0]
            try:
                decoder.decode(block, final=not block)
            except UnicodeDecodeError as exc:
                data = pending + block
                line = 1 + newlines - _line_breaks(pending) + _line_breaks(data[:exc.start])
                byte = data[exc.start:exc.start + 1]
                break
            if not block:
                return InvalidComparisonsError(f"{path}: not {encoding} text")
            newlines += _line_breaks(block)
    if b"\x00" in data:  # no text encoding fixes a binary file
        spreadsheet = dict.fromkeys(_SPREADSHEETS, " (a spreadsheet: save it as CSV)").get(path.suffix.lower(), "")
        return InvalidComparisonsError(f"{path} line {line}: a binary file, not text: roembed reads CSV/TSV, JSON, "
                                       f"Parquet, Feather, MATLAB .mat and NumPy .npy/.npz{spreadsheet}")
    return InvalidComparisonsError(f"{path} line {line}: not {encoding} text (byte {byte!r}); {advice}")


def _line_breaks(data: bytes) -> int:
    r"""The line breaks in ``data``: ``\n``, ``\r\n`` or a lone ``\r``, as the text reader splits lines."""
    return data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")


def sniff_separator(path: Path, first_line: str) -> str:
    """The one separator sniffer of every table roembed reads (comparisons, names, labels):
    tab for ``.tsv``/``.tab`` or a tab in the first line, else comma, else semicolon."""
    if path.suffix.lower() in (".tsv", ".tab") or "\t" in first_line:
        return "\t"
    if "," in first_line or ";" not in first_line:
        return ","
    return ";"


def read_text(path, encoding: str = "utf-8") -> str:
    """A small text file (names, labels) read whole, in one pass (a pipe works too), decoded as the comparisons
    reader decodes: with utf-8, a UTF-16/32 byte-order mark selects that encoding and utf-8's own is dropped."""
    data = Path(path).expanduser().read_bytes()
    if codecs.lookup(encoding).name == "utf-8":
        encoding = _marked_encoding(data[:4]) or "utf-8-sig"
    return data.decode(encoding)


#: Headers of a column of object names (``pd.Series(names, name="name").to_csv(index=False)`` writes ``name``
#: above them).
NAME_COLUMNS = ("name", "names", "object_name", "word", "object", "label", "item")


def numbered_name_lines(text: str) -> list[tuple[int, str]]:
    """The names of a text with one name per line, with the file line (from 1) of each: each stripped, blank lines
    skipped, and a first line that is a column's header dropped (read as a name, it shifted every name by one
    object): a name column's (:data:`NAME_COLUMNS`), or ``0`` above names that are not all numbers, the header
    pandas writes for a Series without a name (``pd.Series(names).to_csv(index=False)``)."""
    lines = [(k, line.strip()) for k, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if not lines:
        return lines
    first = lines[0][1]
    unnamed_series = first == "0" and not all(re.fullmatch(r"-?\d+", name) for _, name in lines[1:])
    return lines[1:] if _norm(first) in NAME_COLUMNS or unnamed_series else lines


def read_names(source, *, encoding: str = "utf-8", index_base: int = 0) -> tuple[str, ...]:
    """Object names from a sequence, or from a file (:func:`names_from_text`): one name per line, or a table.
    ``index_base``: where the table's ids are ``index`` or ``object``, the number they count from."""
    if isinstance(source, (str, Path)):
        if not Path(source).expanduser().exists():
            why = missing_file(source)
            raise FileNotFoundError(f"names: {why}" + (" (a file of names, or give a list of them)"
                                                      if why.endswith("no such file") else ""))
        source = names_from_text(read_text(Path(source).expanduser(), encoding), source, index_base)
    return check_names(source)


def names_from_text(text: str, path, index_base: int = 0) -> tuple[str, ...]:
    """Object names from a file's text: one name per line (blank lines skipped, a first line naming a name column
    dropped), or a table (CSV/TSV with a header) whose ``name``-like column gives them, in the order of its id
    column if any (:func:`_names_order`).  The column is the first of :data:`NAME_COLUMNS` in that order, then of
    the other columns not all numbers, whose names are distinct (names must be: THINGS' table has ``word`` with
    two "bat"s, and ``uniqueID``); when none is, the first, and a repeated name is an error naming its two lines.
    A table given to the Python reader was read a line a name, its header the first object (sixty-first session)."""
    first = text.split("\n", 1)[0]
    if "\t" not in first and "," not in first and ";" not in first:
        numbered = numbered_name_lines(text)
        if not numbered:  # an empty file named 0 objects ("indices 0--1"); a header alone was an unpacking error
            raise InvalidComparisonsError(f"{path}: no object names in it "
                                          + ("(only a header line)" if text.strip() else "(the file is empty)"))
        lines, names = map(list, zip(*numbered))
    else:
        table = small_table(text, path)
        lines = np.arange(2, len(table) + 2)
        key, order = _names_order(path, table, index_base)
        table, lines = table.iloc[order], lines[order]
        rest = [c for c in table.columns if c != key]
        named = {c.lower(): c for c in reversed(rest)}  # the first of a repeated spelling
        candidates = ([named[n] for n in NAME_COLUMNS if n in named]
                      + [c for c in rest if c.lower() not in NAME_COLUMNS and not table[c].str.fullmatch(r"\d+").all()])
        column = next((c for c in candidates if table[c].is_unique), candidates[0] if candidates else None)
        if column is None:
            raise InvalidComparisonsError(f"{path} line 1: no column of object names (columns: "
                                          f"{', '.join(table.columns)})")
        names = table[column].tolist()
        if not names:
            raise InvalidComparisonsError(f"{path}: no object names in it (only a header line)")
    repeated = pd.Index(names).duplicated()
    if repeated.any():
        k = int(np.flatnonzero(repeated)[0])
        raise InvalidComparisonsError(f"{path} line {lines[k]}: object name {names[k]!r} again (first on line "
                                      f"{lines[names.index(names[k])]}): names must be distinct")
    return tuple(names)


#: A names or labels table's id columns and the number each counts from (None: as the comparisons, ``index_base``).
NAME_ID_COLUMNS = {"index0": 0, "index1": 1, "index": None, "object": None}


def id_base(column: str, index_base: int) -> int:
    """The number the ids in a table's ``column`` count from (:data:`NAME_ID_COLUMNS`; any other column: as the
    comparisons do)."""
    fixed = NAME_ID_COLUMNS.get(column.strip().lower())
    return index_base if fixed is None else fixed


def _names_order(path, table: pd.DataFrame, index_base: int) -> tuple[str | None, np.ndarray]:
    """``(key, order)``: a names table's id column (the first of :data:`NAME_ID_COLUMNS`; ``index``/``object``
    only where every value is a whole number, else they may hold the names) and the order of its rows by it.
    Names are given by position, so the ids must number the rows ``base, base + 1, ...`` in some order: an id
    missing, repeated or past the end had given the next objects their neighbours' names, quietly (sixty-first
    session); each is an error naming the row.  No id column: the file's order."""
    columns = {c.strip().lower(): c for c in reversed(list(table.columns))}
    key = next((columns[k] for k in NAME_ID_COLUMNS if k in columns
                and (NAME_ID_COLUMNS[k] is not None or table[columns[k]].str.strip().str.fullmatch(r"\d+").all())),
               None)
    if key is None:
        return None, np.arange(len(table))
    index = pd.to_numeric(table[key].str.strip(), errors="coerce")
    if index.isna().any() or (index != index.round()).any():
        r = int(np.flatnonzero((index.isna() | (index != index.round())).to_numpy())[0])
        raise InvalidComparisonsError(f"{path} line {r + 2}: {key} {table[key].iloc[r]!r} is not a number")
    fixed = NAME_ID_COLUMNS[key.strip().lower()]
    base = id_base(key, index_base)
    values = index.to_numpy().astype(np.int64)
    seen = pd.Index(values).duplicated()
    if seen.any():
        r = int(np.flatnonzero(seen)[0])
        raise InvalidComparisonsError(f"{path} line {r + 2}: {key} {values[r]} again (first on line "
                                      f"{int(np.flatnonzero(values == values[r])[0]) + 2}): each object's name once")
    outside = (values < base) | (values >= base + len(values))
    if outside.any():
        r = int(np.flatnonzero(outside)[0])
        missing = np.setdiff1d(np.arange(base, base + len(values)), values)
        raise InvalidComparisonsError(
            f"{path} line {r + 2}: {key} {values[r]}, but names are given by position: the {len(values)} rows must "
            f"number the objects {base}-{base + len(values) - 1} ({key} {missing[0]} has no row)"
            + (" (--index-base 1 / index_base=1 counts them from 1)" if fixed is None and base == 0 and values.min() == 1
               else ""))
    return key, np.argsort(values, kind="stable")


def small_table(text: str, path) -> pd.DataFrame:
    """A names or labels table (CSV/TSV with a header) as text columns; a row of another width is an error
    naming its line."""
    try:
        return pd.read_csv(io.StringIO(text), sep=sniff_separator(Path(path), text.split("\n", 1)[0]), dtype=str,
                           keep_default_na=False)
    except pd.errors.EmptyDataError:
        raise InvalidComparisonsError(f"{path}: empty") from None
    except pd.errors.ParserError as exc:
        raise InvalidComparisonsError(str(table_parse_error(exc, Path(path), 1, comparisons=False))) from None


def _mixed_width_error(frame: pd.DataFrame, where: RowLocator) -> None:
    """A headerless file whose rows end early: with 3 and 4 fields, triplets and quadruplets mixed; with named
    columns, a row that is not split like the others (e.g. commas in a tab-separated file)."""
    present = frame.notna().to_numpy()
    width = present.sum(axis=1)
    trailing_gap = (present == (np.arange(frame.shape[1]) < width[:, None])).all(axis=1)
    short = trailing_gap & (width > 0) & (width < frame.shape[1])
    if short.any():
        r = int(np.flatnonzero(short)[0])
        mixed = ": triplets (3) and quadruplets (4) cannot be mixed in one file" \
            if {int(width[r]), frame.shape[1]} == {3, 4} else ""
        fields = "1 field" if width[r] == 1 else f"{width[r]} fields"
        raise InvalidComparisonsError(f"{where(r)}: has {fields} but other rows have {frame.shape[1]}{mixed}")


def _header(first: str, name: Path, path: Path, columns, sep: str | None = None,
            number: int = 1) -> tuple[str, list | None, bool]:
    """``(separator, column names to give, headerless)`` from the first line of a text file (file line ``number``,
    after :func:`_preamble`'s lines; ``sep``: the separator it named, if any).

    A file is headerless when its first line is all numbers, or when ``columns`` lists names and the first
    line is not those names: the list is the header the file lacks, and a first row of string ids (object
    names, annotators) is data, not a header to drop."""
    if not first.strip():
        raise InvalidComparisonsError(f"{path}: no comparisons: the file is empty" if number == 1 else
                                      f"{path}: no comparisons: nothing after the {number - 1} line(s) before line "
                                      f"{number} (comments or a sep= line)")
    sep = sep or _separator(first, name)
    fields = _fields(first, sep)
    headerless = all(_NUMBER.fullmatch(f) for f in fields)
    if isinstance(columns, (list, tuple)):
        headerless = [_norm(f.strip('"')) for f in fields] != [_norm(c) for c in columns]
        if headerless and len(fields) != len(columns):
            raise InvalidComparisonsError(f"{path} line {number}: has {len(fields)} columns but {len(columns)} column "
                                          f"names were given ({','.join(map(str, columns))})")
    repeated = None if headerless else repeated_role([f.strip('"') for f in fields])
    if repeated is not None:
        raise InvalidComparisonsError(f"{path} line {number}: the header names column {repeated!r} twice; which one "
                                      "holds it cannot be told: rename or remove the other")
    if headerless and not isinstance(columns, (list, tuple)):
        if len(fields) not in _HEADERLESS:
            raise _WidthError(
                sep, f"{path} line {number}: a file without a header must have 3 (triplet) or 4 (quadruplet) "
                f"columns, got {len(fields)}", "; add a header line naming them (e.g. anchor,closer,farther,annotator; "
                "roembed fit --help lists the odd-one-out and salmon columns), or name them: roembed fit --columns "
                "a,b,c,... or, in Python, columns=[names...]")
        columns = _HEADERLESS[len(fields)]
    return sep, list(columns) if isinstance(columns, (list, tuple)) else None, headerless


class _WidthError(InvalidComparisonsError):
    """A headerless file's first line has a width no default names fit: ``problem`` and ``advice`` (general;
    a caller that sees more rows may give better), ``sep`` its separator."""

    def __init__(self, sep: str, problem: str, advice: str):
        super().__init__(problem + advice)
        self.sep, self.problem = sep, problem


def _peek(text: str, sep: str) -> pd.DataFrame:
    """Up to 1,000 whole lines of ``text`` as a headerless table (empty where they do not parse)."""
    try:
        return pd.read_csv(io.StringIO(text[:text.rfind("\n") + 1] or text), sep=sep, header=None, nrows=1000,
                           **_CSV)
    except (pd.errors.ParserError, ValueError):
        return pd.DataFrame()


def _first_four_whole(frame: pd.DataFrame) -> np.ndarray | None:
    """A headerless file's first four columns as numbers, where it has 10 or more rows and they are all whole
    numbers (what the hints below read); else None."""
    if len(frame) < 10:
        return None
    values = frame.iloc[:, :4].apply(pd.to_numeric, errors="coerce").to_numpy(np.float64)
    return None if np.isnan(values).any() or np.any(values != np.round(values)) else values


def _odd_position_hint(frame: pd.DataFrame) -> str:
    """Where a headerless file's fourth column looks like odd-one-out positions (in 10 or more rows only 1-3, or
    only 0-2, beside object ids above 3 in the first three), the words naming its columns so (THINGS' export:
    ``a, b, c, odd position from 1, subject``), starting ``"; "``; else ``""``.  Where no object id of those
    rows is 0, it adds that ``--index-base 1`` reads ids counted from 1 (a hint: a 0-based file of many objects
    may lack object 0 in its first rows; the fit warns again where no row of the whole file uses it)."""
    values = _first_four_whole(frame) if frame.shape[1] in (4, 5) else None
    if values is None or values[:, :3].max() <= 3:
        return ""
    position = values[:, 3]
    base = next((b for b in (1, 0) if np.isin(position, [b, b + 1, b + 2]).all()), None)
    if base is None:
        return ""
    names = "a,b,c,odd_position" + (",annotator" if frame.shape[1] == 5 else "")
    return (f"; its 4th column holds only {base}-{base + 2} in the first {len(frame)} rows, as odd-one-out "
            f"positions do: name the columns, roembed fit --columns {names}"
            + (" --odd-position-base 1" if base == 1 else "")
            + f" (in Python: columns=[{', '.join(repr(n) for n in names.split(','))}]"
            + (", odd_position_base=1)" if base == 1 else ")")
            + ("; no object id in those rows is 0: if the ids count from 1, as THINGS' do, add --index-base 1 "
               "(index_base=1)" if values[:, :3].min() >= 1 else ""))


def _separate_ids_hint(frame: pd.DataFrame) -> str:
    """Where a headerless 4-column file's fourth column lies wholly above (or below) the first three's range (in
    10 or more rows of whole numbers), the words saying so, starting ``"; "``; else ``""``.  The four columns of
    quadruplets draw on one set of objects; a fourth column of annotator ids numbered apart from the objects
    (workers 100-139 beside objects 0-19) would be read as objects no other column names, and the fit would
    agree with every answer while meaning nothing.  Disjoint values alone are not asked: a few quadruplets
    over many objects have them by chance, a range apart hardly (10 random rows: under 1e-8)."""
    values = _first_four_whole(frame) if frame.shape[1] == 4 else None
    if values is None:
        return ""
    objects, fourth = values[:, :3], values[:, 3]
    if not (fourth.min() > objects.max() or fourth.max() < objects.min()):
        return ""
    return (f"; its 4th column ({fourth.min():.0f}-{fourth.max():.0f}) lies outside the range of the first three "
            f"({objects.min():.0f}-{objects.max():.0f}) in the first {len(frame)} rows, as annotator ids numbered "
            "apart from the objects would")


def _separator(line: str, name: Path) -> str:
    """The separator of a comparisons file with first line ``line``: :func:`sniff_separator`'s, or
    :data:`WHITESPACE` where the line has no tab, comma or semicolon but several fields."""
    sep = sniff_separator(name, line)
    return WHITESPACE if sep == "," and "," not in line and len(line.split()) > 1 else sep


def _fields(line: str, sep: str) -> list[str]:
    """The fields of one line as the table's parser reads them: a quoted field keeps its separators
    (``"Smith, J.",b,c`` has three)."""
    if sep == WHITESPACE:
        return line.split()
    return [f.strip() for f in next(csv.reader([line.rstrip("\r\n")], delimiter=sep), [])]


def _preamble(fh, name: Path) -> tuple[str, str | None, list | None, int]:
    """``(first line, separator, header, lines read before it)``: the lines before a text file's header or data
    that are not a table's.  Excel's ``sep=;`` line names the separator; lines starting with ``#`` are comments
    (``numpy.savetxt(..., header=...)`` writes its header as one: ``# anchor,closer,farther``).  The last comment is
    the header when its fields are as many as the first line's and name a format's object columns (a comment that
    merely has that many words is not), and then the first line is data."""
    first, sep, comment, skipped = fh.readline().lstrip("\ufeff"), None, None, 0
    if re.fullmatch(r"sep=.\s*", first, re.IGNORECASE):
        sep, first, skipped = first[4], fh.readline(), 1
    while first.startswith("#"):
        comment, first, skipped = first.lstrip("#").strip(), fh.readline(), skipped + 1
    if comment is None or not first.strip():
        return first, sep, None, skipped
    sep_of_data = sep or _separator(first, name)
    fields = _fields(comment, sep_of_data)
    named = {_norm(f) for f in fields}
    if len(fields) == len(_fields(first, sep_of_data)) and any(
            named.issuperset(cols) for candidates in FORMATS.values() for cols in candidates):
        return first, sep_of_data, fields, skipped
    return first, sep, None, skipped


def _blocks(fh, size: int, start: str = ""):
    """The text of ``fh`` (after ``start``) in pieces of about ``size`` characters, each ending at the end
    of a line that is not inside a quoted field.

    A quoted field is not followed past :data:`QUOTED_CHARS` (or ``size``, if more) of text: a quote mark
    that never closes (a stray ``"``) would otherwise hold the rest of the file in one piece; the piece is
    cut there, and its parse names the line the quote opens.  The walk back to a line end outside quotes
    counts each line's quote marks once (counting from the piece's start at each step was quadratic in the
    piece's lines: a stray quote in 2 MB of text took minutes)."""
    rest = start
    while block := fh.read(size):
        block = rest + block
        cut = line_end = block.rfind("\n") + 1
        quotes = block.count('"', 0, cut)
        while cut and quotes % 2:  # an odd number of quotes: the line break is quoted
            previous = block.rfind("\n", 0, cut - 1) + 1
            quotes -= block.count('"', previous, cut)
            cut = previous
        if not cut and line_end and len(block) > max(size, QUOTED_CHARS):
            cut = len(block)
        rest = block[cut:]
        if cut:
            yield block[:cut]
    if rest:
        yield rest


_CSV = dict(skip_blank_lines=False, keep_default_na=False, na_values=[""], skipinitialspace=True, low_memory=False)


def _zero_padded_columns(block: str, sep: str, names: list) -> list:
    """The columns of ``block`` (up to its first 1,000 lines) of whole numbers, one or more written with a leading
    zero (``007``): ids written so are text, read as names and kept as written (as numbers, ``007`` would be
    object 7 and be written back as ``7``; an annotator ``007`` would be ``7``)."""
    try:
        with warnings.catch_warnings():  # a first row too wide: the block's own parse names it, in one line
            warnings.simplefilter("ignore", pd.errors.ParserWarning)
            frame = pd.read_csv(io.StringIO(block), sep=sep, header=None, names=names, index_col=False, nrows=1000,
                                dtype=str, **_CSV)
    except (pd.errors.ParserError, ValueError):
        return []  # the block's own parse names the problem
    text = {c: frame[c].dropna().str.strip() for c in frame.columns}
    return [c for c, v in text.items() if v.str.fullmatch(ZERO_PADDED).any() and v.str.fullmatch(r"\d+").all()]


def _parsed(block: str, sep: str, names: list, path: Path, line: int, header_line: int = 1,
            text: list | tuple = ()) -> pd.DataFrame:
    """One block of rows (its first on file line ``line``; the header, or the first row, on ``header_line``) as a
    frame with columns ``names``, those of ``text`` as text.

    Each block is its own ``read_csv`` (pandas < 3.1 drops the extra fields of a row that opens a
    ``chunksize`` chunk), with ``index_col=False`` (else pandas takes the extra fields of a block's
    first row as an index): a row with too many fields is an error naming its line wherever it is.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", pd.errors.ParserWarning)
        try:
            frame = pd.read_csv(io.StringIO(block), sep=sep, header=None, names=names, index_col=False,
                                dtype=dict.fromkeys(text, str), **_CSV)
        except pd.errors.ParserError as exc:
            raise table_parse_error(exc, path, line, header_line, len(names)) from None
    for warning in caught:
        if "does not match length of data" in str(warning.message):  # the first row is too wide
            first = pd.read_csv(io.StringIO(block.split("\n", 1)[0]), sep=sep, header=None, **_CSV)
            raise _width_error(path, line, first.shape[1], len(names), header_line)
        warn(warning.message, warning.category)
    return frame


def table_parse_error(exc: Exception, path: Path, line: int, header_line: int = 1, expected: int | None = None,
                      comparisons: bool = True) -> InvalidComparisonsError:
    """pandas' ``ParserError`` on a text whose first line is file line ``line`` as one line naming the file line:
    a row wider than ``expected`` fields (pandas' count if None; those of line ``header_line``), a quote mark that
    never closes, or pandas' own words.  ``comparisons``: a table of comparisons, where rows of 3 and 4 fields are
    triplets and quadruplets mixed (not so in a names or labels table)."""
    wide = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(exc))
    if wide:
        return _width_error(path, line + int(wide[2]) - 1, int(wide[3]), int(wide[1]) if expected is None else expected,
                            header_line, comparisons)
    quote = re.search(r"EOF inside string starting at row (\d+)", str(exc))
    if quote:
        return InvalidComparisonsError(f"{path} line {line + int(quote[1])}: a quote mark (\") opens a field that "
                                       "does not close (a stray quote mark? one inside a name is written twice, \"\")")
    return InvalidComparisonsError(f"{path}: cannot parse: {str(exc).strip()}")


def _width_error(path: Path, line: int, saw: int, expected: int, header_line: int = 1,
                 comparisons: bool = True) -> InvalidComparisonsError:
    mixed = ": triplets (3) and quadruplets (4) cannot be mixed" if comparisons and {expected, saw} == {3, 4} else ""
    return InvalidComparisonsError(f"{path} line {line}: has {saw} fields but line {header_line} has {expected}{mixed}")


def _header_names(first: str, sep: str, path: Path, line: int) -> list:
    """The column names of header line ``first`` (file line ``line``)."""
    try:
        return list(pd.read_csv(io.StringIO(first), sep=sep, nrows=0, **_CSV).columns)
    except pd.errors.ParserError as exc:
        raise table_parse_error(exc, path, line, line) from None


def _text_frames(path: Path, columns, encoding: str):
    """Yields ``(frame, where)`` for each block of about :data:`CHUNK_CHARS` characters of a text file;
    ``where`` names the file's lines (counted from the file's first, before any comments or ``sep=`` line)."""
    with _text(path, encoding) as (fh, name):
        first, sep, commented, skipped = _preamble(fh, name)
        if not skipped and re.match(r"\s*(\[\s*\{|\{\s*\"|[\[{]\s*$)", first):  # [{"a": ...  {"answers": ...
            raise InvalidComparisonsError(f"{path} line 1: JSON under another name (it starts with "
                                          f"{first.strip()[:2]!r}): name it .json, or .jsonl for one record a line")
        if commented is not None and columns is None:  # numpy.savetxt's header, "# anchor,closer,farther"
            columns = commented
        try:
            sep, names, headerless = _header(first, name, path, columns, sep, skipped + 1)
        except _WidthError as exc:  # 5 columns, say: THINGS' a,b,c,odd_position,subject?
            hint = _odd_position_hint(_peek(first + fh.read(CHUNK_CHARS), exc.sep))
            raise (InvalidComparisonsError(exc.problem + hint) if hint else exc) from None
        header = names if headerless else _header_names(first, sep, path, skipped + 1)
        line, any_rows, text = skipped + (1 if headerless else 2), False, None
        for block in _blocks(fh, CHUNK_CHARS, first if headerless else ""):
            text = _zero_padded_columns(block, sep, header) if text is None else text
            frame, lines = _without_blank_lines(_parsed(block, sep, header, path, line, skipped + 1, text), block,
                                                sep, line)
            if line == skipped + 2 and _qualtrics_header_rows(frame):
                warn(f"{path}: lines {lines[0]}-{lines[1]} are Qualtrics' question text and ImportId lines under "
                     "the header, not answers: skipped")
                frame, lines = frame.iloc[2:].reset_index(drop=True), lines[2:]
            if line == skipped + 1 and isinstance(columns, (list, tuple)) and columns is not commented:
                _other_header_error(frame, path, first.strip(), columns, skipped + 1)
            if not headerless and names is not None:
                frame.columns = names
            where = RowLocator(str(path), lines=lines)
            if headerless:
                _mixed_width_error(frame, where)
            if line == skipped + 1 and headerless and columns is None and frame.shape[1] == 4:
                hint = _odd_position_hint(frame) or _separate_ids_hint(frame)
                if hint:  # read as quadruplets, positions or annotators would be objects: a quiet mess
                    raise InvalidComparisonsError(f"{path}: a file without a header and 4 columns is read as "
                                                  f"quadruplets i,j,l,k{hint}; --columns anchor,closer,farther,"
                                                  "annotator if it holds annotator ids, --columns i,j,l,k to read "
                                                  "quadruplets all the same")
            line += block.count("\n")
            any_rows = True
            yield frame, where
        if not any_rows:  # a header alone: its columns still say what the file is
            yield pd.DataFrame(columns=names or header), RowLocator(str(path))


def _qualtrics_header_rows(frame: pd.DataFrame) -> bool:
    """Whether the first two rows are the two lines a Qualtrics export writes under its header: each question's
    text, then ``{"ImportId":"QID1"}`` and the like.  Read as answers they were comparisons of objects named
    "Which image is the anchor?" and ``{"ImportId":"QID1"}``, without a word."""
    return len(frame) >= 2 and bool(
        frame.iloc[1].astype(str).str.fullmatch(r'\s*\{\s*"ImportId"\s*:.*\}\s*').any())


def _without_blank_lines(frame: pd.DataFrame, block: str, sep: str, line: int):
    """``frame`` (parsed from ``block``, whose first line is file line ``line``) and the file line of each
    of its rows, without the rows of blank lines (no separator, nothing but spaces), which hold no
    comparison.  A row of empty fields (``,,``) stays, to be reported as missing objects.  The block is
    parsed with its blank lines kept, so that each row keeps its file line; only a block with rows of no
    value is split into lines (where a quoted field spans lines, rows and lines do not match, and the
    block is kept as is)."""
    lines = np.arange(line, line + len(frame))
    empty = frame.isna().all(axis=1).to_numpy()
    if not empty.any():
        return frame, lines
    text = block.split("\n")
    if text[-1] == "":
        text.pop()
    if len(text) != len(frame):
        return frame, lines
    blank = empty & np.array([sep not in row and not row.strip() for row in text])
    return frame[~blank].reset_index(drop=True), lines[~blank]


def _other_header_error(frame: pd.DataFrame, path: Path, first: str, columns, number: int = 1) -> None:
    """Given names for a file without a header, line 1 was read as data (it is not those names).  It is a header
    after all -- other names -- when a column holds text on line 1 and numbers on every other line of the
    first block: an error rather than a comparison of objects named like columns."""
    if len(frame) < 2:
        return
    for column in frame.columns:
        head = pd.to_numeric(frame[column].iloc[:1], errors="coerce")
        if head.isna().all() and pd.to_numeric(frame[column].iloc[1:], errors="coerce").notna().all():
            raise InvalidComparisonsError(
                f"{path} line {number}: looks like a header ({first}), not the names given ({','.join(map(str, columns))}); "
                "names are for a file without a header: rename a file's own columns with old=new "
                "(roembed fit --columns) or a dict in Python")


def _parquet_frames(path: Path):
    """Yields ``(frame, where)`` for each batch of :data:`CHUNK_ROWS` rows of a Parquet file."""
    parquet = _parquet(path)
    return _batch_frames(path, "Parquet", parquet.iter_batches(batch_size=CHUNK_ROWS), parquet.schema_arrow)


def _batch_frames(path: Path, kind: str, batches, schema):
    """Yields ``(frame, where)`` for each pyarrow record batch of ``batches``, rows counted from 0 (an empty file
    gives its columns, which still say what it is); a file that breaks off is an error naming it."""
    import pyarrow as pa

    start = 0
    try:
        for batch in batches:
            yield batch.to_pandas(), RowLocator(f"{path} row", lines=np.arange(start, start + batch.num_rows))
            start += batch.num_rows
    except (pa.ArrowException, OSError) as exc:
        raise InvalidComparisonsError(f"{path} row {start}: a damaged {kind} file, unreadable from here on "
                                      f"({exc})") from None
    if start == 0:
        yield schema.empty_table().to_pandas(), RowLocator(str(path))


_ARROW = (".feather", ".arrow", ".ipc")


def _arrow_batches(path: Path):
    """``(batches, schema)`` of a Feather or Arrow IPC file: the IPC file format (Feather version 2), else the IPC
    stream format (``pyarrow.ipc.new_stream``), else Feather version 1 (read whole, cut into :data:`CHUNK_ROWS`)."""
    pa = import_optional("pyarrow", f"{path}: reading Feather/Arrow", "pip install 'roembed[parquet]'")
    from pyarrow import feather, ipc

    try:
        reader = ipc.open_file(path)
        return (reader.get_batch(i) for i in range(reader.num_record_batches)), reader.schema
    except pa.ArrowInvalid:
        pass
    try:
        reader = ipc.open_stream(pa.memory_map(str(path)))
        return iter(reader), reader.schema
    except pa.ArrowInvalid:
        pass
    try:
        table = feather.read_table(path)
    except (pa.ArrowInvalid, OSError) as exc:
        raise InvalidComparisonsError(f"{path}: not a Feather/Arrow file that pyarrow can read ({exc})") from None
    return iter(table.to_batches(max_chunksize=CHUNK_ROWS)), table.schema


def _arrow_frames(path: Path):
    """Yields ``(frame, where)`` for each record batch of a Feather or Arrow IPC file (``DataFrame.to_feather``,
    ``pyarrow.feather.write_feather``, an IPC stream; :func:`_arrow_batches`)."""
    return _batch_frames(path, "Feather/Arrow", *_arrow_batches(path))


def _parquet(path: Path):
    pq = import_optional("pyarrow.parquet", f"{path}: reading Parquet", "pip install 'roembed[parquet]'")
    import pyarrow as pa

    try:
        return pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as exc:  # pyarrow's words did not name the file
        raise InvalidComparisonsError(f"{path}: not a Parquet file that pyarrow can read ({exc})") from None


def _stored(path: Path) -> dict:
    """What :func:`write_comparisons` stored in a Parquet file's metadata (``n_objects``, ``object_names``)."""
    return json.loads((_parquet(path).schema_arrow.metadata or {}).get(_META_KEY, b"{}"))


_JSON = (".json", ".jsonl", ".ndjson")


def _is_json(path: Path) -> bool:
    name = path.with_suffix("") if path.suffix.lower() in _COMPRESSED[:3] else path
    return name.suffix.lower() in _JSON


def _json_frames(path: Path, encoding: str):
    """Yields ``(frame, where)`` for a JSON file (read whole), in one of three layouts:

    * records: a list of objects whose keys are the columns of any table format
      (``[{"anchor": 3, "closer": 5, "farther": 9, "annotator": "w1"}, ...]``; JSON Lines too,
      one object per line), rows named "record r" (0-based) or by line;
    * columns: one object of equally long lists (``{"anchor": [...], "closer": [...], ...}``);
    * queries with vote counts, as the material-similarity set of Lagunas et al. (2019) ships them:
      ``{"answers": [[ref, a, b], ...], "agreement": [[votes for a, votes for b], ...]}``; each
      query becomes the triplets (ref, a, b) and (ref, b, a) weighted by their votes (zero-vote
      directions are no response and are left out), rows named "query q";
    * NEXT's participant data (its Triplets app, :func:`_next_responses`).
    """
    with _text(path, encoding) as (fh, name):
        text = fh.read()
    try:
        if name.suffix.lower() in (".jsonl", ".ndjson"):
            yield _json_lines(text, path)
            return
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidComparisonsError(f"{path} line {exc.lineno}: not valid JSON ({exc.msg})") from None
    if isinstance(data, list) and all(isinstance(r, dict) for r in data):
        yield pd.DataFrame.from_records(data), RowLocator(f"{path} record", lines=np.arange(len(data)))
    elif isinstance(data, dict) and {"answers", "agreement"} <= set(data):
        yield _query_votes(data, path)
    elif isinstance(data, dict) and isinstance(data.get("participant_responses"), dict):
        yield _next_responses(data["participant_responses"], path)
    elif isinstance(data, dict) and data and all(isinstance(v, list) for v in data.values()):
        if len({len(v) for v in data.values()}) != 1:
            raise InvalidComparisonsError(f"{path}: the column lists have different lengths "
                                          f"({', '.join(f'{k}: {len(v)}' for k, v in data.items())})")
        yield pd.DataFrame(data), RowLocator(f"{path} record", lines=np.arange(len(next(iter(data.values())))))
    else:
        keys = f"an object with keys {', '.join(map(str, list(data)[:6]))}" if isinstance(data, dict) else \
            f"a JSON {type(data).__name__}"
        raise InvalidComparisonsError(
            f"{path}: {keys} is not a comparison table; expected a list of records with columns such as "
            "anchor, closer, farther, an object of column lists, answers + agreement (query vote counts) or NEXT's "
            "participant_responses")


def _json_lines(text: str, path: Path) -> tuple[pd.DataFrame, RowLocator]:
    """JSON Lines: one record (object) per non-blank line."""
    records, lines = [], []
    for k, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidComparisonsError(f"{path} line {k}: not valid JSON ({exc.msg})") from None
        if not isinstance(record, dict):
            raise InvalidComparisonsError(f"{path} line {k}: a JSON Lines record must be an object, "
                                          f"got a {type(record).__name__}")
        records.append(record)
        lines.append(k)
    return pd.DataFrame.from_records(records), RowLocator(str(path), lines=np.array(lines, dtype=np.int64))


#: NEXT's screen labels of a Triplets query's targets, as salmon's roles.
_NEXT_ROLES = {"center": "head", "left": "left", "right": "right"}
#: Fields of a NEXT response kept as columns (the read names the roles: annotator, response time, sampler, ...).
_NEXT_FIELDS = {"participant_uid": "puid", "response_time": "response_time", "network_delay": "network_delay",
                "alg_label": "alg_label", "timestamp_query_generated": "timestamp"}


def _next_responses(participants: dict, path: Path) -> tuple[pd.DataFrame, RowLocator]:
    """NEXT's participant data, ``{"participant_responses": {uid: [response, ...]}}`` (the dashboard's download of
    its Triplets app), as salmon's table: each answered query's ``target_indices`` labelled ``center``, ``left``,
    ``right`` are ``head``, ``left``, ``right``, its ``target_winner`` the ``winner``, the participant ``puid``, each
    target's ``primary_description`` its name (``<role>_filename``, as salmon's export names targets).  A query
    NEXT generated but the participant never answered (no ``target_winner``) is no response: left out, with a
    warning that counts them.  Rows are named by participant and response (``participant 'p1' response 3``)."""
    rows, sources, lines, unanswered = [], [], [], 0
    for uid, responses in participants.items():
        if not isinstance(responses, list):
            raise InvalidComparisonsError(f"{path}: participant {uid!r}: responses must be a list of queries, "
                                          f"got a {type(responses).__name__}")
        for k, response in enumerate(responses):
            if isinstance(response, dict) and "target_winner" not in response:
                unanswered += 1
                continue
            if not isinstance(response, dict):  # a row with no objects, refused by the checks
                response = {"target_winner": None}
            row = {column: response.get(field) for field, column in _NEXT_FIELDS.items()}
            row.update(winner=response["target_winner"], puid=response.get("participant_uid", uid))
            targets = response.get("target_indices")
            for target in targets if isinstance(targets, list) else []:
                role = _NEXT_ROLES.get(target.get("label")) if isinstance(target, dict) else None
                if role is not None:
                    row[role], row[f"{role}_filename"] = target.get("target_id"), target.get("primary_description")
            rows.append(row)
            sources.append(f"{path} participant {uid!r} response")
            lines.append(k)
    if unanswered:
        warn(f"{path}: {unanswered} {'query' if unanswered == 1 else 'queries'} shown but never answered (no "
             "target_winner): no response, left out")
    roles = ["head", "left", "right", "winner"]
    frame = pd.DataFrame.from_records(rows, columns=roles + list(_NEXT_FIELDS.values()) +
                                      [f"{role}_filename" for role in roles[:3]])
    frame = frame.drop(columns=[c for c in frame.columns[4:] if frame[c].isna().all()])
    return frame, RowLocator(None, np.array(lines, dtype=np.int64), np.array(sources, dtype=object))


def _query_votes(data: dict, path: Path) -> tuple[pd.DataFrame, RowLocator]:
    """The ``answers`` / ``agreement`` layout as weighted triplets (see :func:`_json_frames`)."""
    try:
        queries = np.asarray(data["answers"], dtype=np.int64)
        votes = np.asarray(data["agreement"], dtype=np.float64)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an index past int64
        raise InvalidComparisonsError(f"{path}: 'answers' and 'agreement' must be lists of integer lists (object "
                                      "indices below 2**63)") from None
    if queries.ndim != 2 or queries.shape[1] != 3 or votes.shape != (queries.shape[0], 2):
        raise InvalidComparisonsError(f"{path}: 'answers' must be (N, 3) object indices and 'agreement' (N, 2) "
                                      f"non-negative vote counts, got {queries.shape} and {votes.shape}")
    bad = np.flatnonzero(~(votes >= 0).all(axis=1))  # NaN too: it is no count of zero
    if len(bad):
        raise InvalidComparisonsError(f"{path} query {bad[0]}: 'agreement' holds {votes[bad[0]].tolist()}: vote "
                                      "counts must be non-negative numbers")
    both = np.concatenate([queries, queries[:, [0, 2, 1]]])
    weight, query = np.concatenate([votes[:, 0], votes[:, 1]]), np.tile(np.arange(len(queries)), 2)
    keep = weight > 0
    frame = pd.DataFrame({"anchor": both[keep, 0], "closer": both[keep, 1], "farther": both[keep, 2],
                          "weight": weight[keep]})
    return frame, RowLocator(f"{path} query", lines=query[keep])


def _frames(path: Path, columns, encoding: str):
    """Yields ``(frame, where)`` chunk by chunk, for a text, JSON, Parquet, Feather, MATLAB or NumPy file: the
    reader is chosen by the file's suffix (:data:`_TABLE_READERS`, JSON also compressed), text otherwise."""
    reader = _TABLE_READERS.get(path.suffix.lower())
    if reader is None and _is_json(path):
        reader = partial(_json_frames, encoding=encoding)
    if reader is None:
        return _text_frames(path, columns, encoding)
    if isinstance(columns, (list, tuple)):
        raise ValueError("a list of column names is only for text files without a header; rename this "
                         "file's columns instead (roembed fit --columns old=new,...; a dict in Python)")
    return reader(path)


_ARRAY_COLUMNS = {3: ["i", "j", "k"], 4: ["i", "j", "l", "k"]}
_ARRAY_FILES = (".mat", ".npy", ".npz")


def _mat_variables(path: Path) -> dict:
    """The variables of a MATLAB file (``scipy.io.loadmat``: versions 4 to 7.2)."""
    from scipy.io import loadmat

    try:
        variables = loadmat(path)
    except NotImplementedError:  # loadmat's answer to v7.3, which is HDF5
        raise InvalidComparisonsError(f"{path}: a MATLAB v7.3 (HDF5) file, which roembed cannot read; save it "
                                      f"with save(..., '-v7') or as CSV") from None
    except Exception as exc:  # scipy raises ValueError, MatReadError, TypeError... for what is not a MAT file
        raise InvalidComparisonsError(f"{path}: not a MATLAB file that scipy.io.loadmat can read ({exc})") from None
    return {k: v for k, v in variables.items() if not k.startswith("__")}


def _numpy_variables(path: Path) -> dict:
    """The arrays of a NumPy file: ``{"": array}`` for ``.npy``, the named arrays of ``.npz`` (never unpickled)."""
    with open(path, "rb") as stream:
        head = stream.read(6)
    if not head.startswith((b"\x93NUMPY", b"PK\x03\x04")):  # numpy.load would call it a pickle
        looks_text = bool(head) and all(32 <= b < 127 or b in b"\t\r\n" for b in head)
        hint = " (it starts as text: name it .csv)" if looks_text else ""
        raise InvalidComparisonsError(f"{path}: not a NumPy file (no .npy or .npz header){hint}")
    try:
        loaded = np.load(path, allow_pickle=False)
        if isinstance(loaded, np.ndarray):
            return {"": loaded}
        with loaded:
            return {k: loaded[k] for k in loaded.files}
    except (ValueError, OSError, EOFError) as exc:  # not a NumPy file, or an object array (needs pickle)
        raise InvalidComparisonsError(f"{path}: not a NumPy file that numpy.load can read without pickle "
                                      f"({exc})") from None


def _array_frames(path: Path):
    """Yields one ``(frame, where)``: the one array of 3 (triplets ``i, j, k``) or 4 (quadruplets) columns in a
    MATLAB (``.mat``) or NumPy (``.npy``, ``.npz``: ``np.save(path, triplets)``) file, a comparison per row.  Its
    rows are counted as each language counts: from 1 in MATLAB, from 0 in NumPy.  MATLAB numbers objects from 1
    too: read such files with ``index_base=1``.  NumPy arrays may hold object names (strings)."""
    matlab = path.suffix.lower() == ".mat"
    found = _mat_variables(path) if matlab else _numpy_variables(path)
    kinds = "iuf" if matlab else "iufU"
    arrays = {k: v for k, v in found.items() if isinstance(v, np.ndarray) and v.ndim == 2
              and v.shape[1] in _ARRAY_COLUMNS and v.dtype.kind in kinds}
    if len(arrays) != 1:
        listed = ", ".join(f"{k or 'the array'} ({'x'.join(map(str, np.shape(v)))} "
                           f"{getattr(v, 'dtype', type(v).__name__)})" for k, v in found.items()) or "no variables"
        tensor = next((k for k, v in found.items() if isinstance(v, np.ndarray) and is_tensor(v)), None)
        raise InvalidComparisonsError(
            f"{path}: needs exactly one {'numeric ' if matlab else ''}array of 3 or 4 columns (a comparison per row), "
            f"found {len(arrays)}: {listed}"
            + ("" if tensor is None else f"; {tensor or 'the array'} is shaped as cblearn's tensor-count form, which "
               "roembed reads in Python (roembed.from_cblearn(array), or fit(array)); as a file, save its comparisons "
               "as rows (cblearn's list-order)"))
    (name, array), = arrays.items()
    if array.dtype.kind == "f" and np.array_equal(array, np.round(array)):
        array = array.astype(np.int64)  # MATLAB's doubles holding indices
    first_row = 1 if matlab else 0
    yield (pd.DataFrame(array.astype(object) if array.dtype.kind == "U" else array,
                        columns=_ARRAY_COLUMNS[array.shape[1]]),
           RowLocator(f"{path} {name} row" if name else f"{path} row",
                      lines=np.arange(first_row, first_row + len(array))))


#: The readers of files that are no text, by suffix (``_is_json`` also reads ``.json.gz``).
_TABLE_READERS = {**dict.fromkeys(_PARQUET, _parquet_frames), **dict.fromkeys(_ARROW, _arrow_frames),
                  **dict.fromkeys(_ARRAY_FILES, _array_frames)}


def _same_columns(first: tuple[Path, list], path: Path, frame: pd.DataFrame) -> None:
    """Several files must have the same columns (in any order, names compared normalised)."""
    from .convert import _norm

    if sorted(map(_norm, frame.columns)) != sorted(map(_norm, first[1])):
        raise InvalidComparisonsError(
            f"{path} line 1: columns {list(frame.columns)} differ from those of "
            f"{first[0]} ({list(first[1])}); several files must have the same columns")


def read_comparisons(path, format: str = "auto", names=None, on_invalid: str = "raise", *, columns=None,
                     n_objects: int | None = None, encoding: str = "utf-8", return_report: bool = False,
                     odd_position_base: int = 0, index_base: int = 0):
    """Reads comparisons from a CSV/TSV (separator guessed: tab, comma, semicolon, else spaces), JSON (see
    :func:`_json_frames`), Parquet, Feather (Arrow IPC: ``.feather``, ``.arrow``), MATLAB (``.mat``) or NumPy (``.npy``, ``.npz``) file (one array of 3 or 4
    columns; :func:`_array_frames`),
    or from several.

    ``path``: a file, or a list of files with the same columns, read as one (errors
    name the file and line of each row).  Text files may be compressed (``.gz``,
    ``.bz2``, ``.xz``, or a ``.zip`` holding one file) and are decoded with ``encoding``
    (a byte it cannot read is an error naming the file and line).  Blank lines hold no comparison and
    are skipped, as pandas does (a row of empty fields, ``,,``, is an error: a comparison with its objects
    missing); every other line keeps its own number.  A row that repeats the header (files joined into
    one) is an invalid row, never a comparison of objects named like the columns.
    ``format``: ``"auto"`` (by column names), ``"triplets"``, ``"quadruplets"``,
    ``"salmon"`` or ``"odd-one-out"``.  Object ids in the file may be integer indices
    or names (string ids, read without the spaces around them); names become ``object_names``, in the order of ``names``
    (a sequence, or a file: one name per line, or a table whose name column gives them, :func:`read_names`) when
    given, else sorted.
    ``columns``: a dict renaming (``{"rater": "annotator"}``) or dropping (``{"x": None}``)
    columns, or a list naming the columns of a file without a header (a first line equal to the list
    is read as the header).  Columns that are
    neither objects nor known metadata are kept per response in ``Comparisons.extra``;
    a ``tie`` column marks "same / can't decide" answers (half a vote each way, see
    :func:`roembed.data.convert.split_ties`).
    ``odd_position_base``: 0 when an ``odd_position`` column counts 0, 1, 2; 1 when it counts
    1, 2, 3 (THINGS' exports; an error without one).  ``index_base``: 1 when integer object
    indices count from 1 (MATLAB, THINGS): they are read as 0-based codes, and without ``names``
    the file's numbers become the object names ("1", "2", ...; with ``names``, index 1 is its first).
    ``on_invalid="raise"`` stops at the first bad row, naming file and line;
    ``"skip"`` drops bad rows with a :class:`SkippedRowsWarning` (count and first examples)
    and, with ``return_report=True``, returns ``(comparisons, SkipReport)``.

    Files are read in chunks (:data:`CHUNK_CHARS` of text, :data:`CHUNK_ROWS` Parquet rows), each checked and reduced to compact
    arrays before the next is parsed (:class:`~roembed.data.convert.ComparisonsBuilder`), so
    the memory a read needs is about that of the result plus one chunk, not that of the text.
    """
    given = path if isinstance(path, (list, tuple)) else [path]
    for p in given:
        if not isinstance(p, str) and not hasattr(p, "__fspath__"):
            hint = (f"pass its path, {getattr(p, 'name')!r}" if isinstance(getattr(p, "name", None), str)
                    else "for text in memory, roembed.from_frame(pd.read_csv(buffer))" if hasattr(p, "read") else "")
            raise TypeError(f"read_comparisons reads files by path (a str or pathlib.Path, or a list of them), "
                            f"got {type(p).__name__}{'; ' + hint if hint else ''}")
    paths = [Path(p).expanduser() for p in given]  # ~ expanded, as pandas expands it
    if not paths:
        raise InvalidComparisonsError("no comparisons: no file given")
    for p in paths:  # a pipe (/dev/stdin, a shell's <(...)) is read in one pass as text
        if p.is_dir():
            raise InvalidComparisonsError(f"{p}: is a folder, not a file")
        if not p.exists():
            raise FileNotFoundError(missing_file(p))
    _repeated_files(paths)
    if names is not None:
        names = read_names(names, encoding=encoding, index_base=index_base)
    if len(paths) == 1 and _is_parquet(paths[0]):
        stored = _stored(paths[0])
        if names is None and stored.get("object_names") is not None:
            names = tuple(stored["object_names"])
        if n_objects is None and names is None:
            n_objects = stored.get("n_objects")
    builder = ComparisonsBuilder(format=format, names=names, columns=None if isinstance(columns, (list, tuple))
                                 else columns, n_objects=n_objects, on_invalid=on_invalid,
                                 source=str(paths[0]) if len(paths) == 1 else None,
                                 odd_position_base=odd_position_base, index_base=index_base)
    first = None
    for p in paths:
        for k, (frame, where) in enumerate(_frames(p, columns, encoding)):
            if k == 0 and len(paths) > 1:
                first = first or (p, list(frame.columns))
                _same_columns(first, p, frame)
            builder.add(frame, where)
    comparisons, report = builder.finish()
    return (comparisons, report) if return_report else comparisons


def _repeated_files(paths: list[Path]) -> None:
    """Several files read as one, two of them the same file (an error) or the same bytes (a warning: a second
    download, ``votes (1).csv``, counts each of its responses twice).  ``filecmp`` compares bytes only
    between files of one size, and stops at the first difference."""
    first: dict = {}
    earlier: list[Path] = []
    for p in paths:
        if not p.is_file():
            continue
        stat = p.stat()
        if (stat.st_dev, stat.st_ino) in first:
            also = first[stat.st_dev, stat.st_ino]
            raise InvalidComparisonsError(f"{p}: given twice{'' if str(also) == str(p) else f' (also as {also})'}; "
                                          "each file is read once")
        first[stat.st_dev, stat.st_ino] = p
        same = next((q for q in earlier if filecmp.cmp(q, p, shallow=False)), None)
        if same is not None:
            warn(f"{p}: the same bytes as {same}: each of its responses counts twice "
                 "(drop one if it is a second download)")
        earlier.append(p)


def write_comparisons(comparisons: Comparisons, path, *, names: bool = True, names_path=None) -> Path:
    """Writes comparisons atomically as CSV/TSV (by suffix; ``.gz``, ``.bz2`` or ``.xz`` after it compresses) or
    Parquet; :func:`read_comparisons` reads them back.  Other suffixes that name a format (``.json``, ``.npz``,
    ``.xlsx`` ...) are refused: the file would be CSV under their name.

    Columns are those of :func:`roembed.data.convert.to_frame`; with ``names=True``
    the object columns hold object names when there are any.  Parquet also stores
    ``n_objects`` and all object names, so it round-trips exactly.  A CSV keeps only the
    objects that occur; pass ``names_path`` to also write the names (one per line, below a ``name`` header, so
    that a first name such as ``0``, ``name`` or ``Smith, J.`` is not read as a header or a table) and
    read them back with ``read_comparisons(path, names=names_path)`` for an exact round trip.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a file path, got {type(path).__name__}")
    path = Path(path).expanduser()
    compression = path.suffix.lower() if path.suffix.lower() in _OPENERS else None
    inner = (path.with_suffix("") if compression else path).suffix.lower()
    if path.is_dir():  # was the atomic rename's IsADirectoryError, naming a temporary file
        raise IsADirectoryError(f"{path}: is a folder; give the file to write, e.g. {path / 'comparisons.csv'}")
    if (inner in (*_ARROW, *_JSON, *_ARRAY_FILES, *_SPREADSHEETS, ".zip") or path.suffix.lower() == ".zip"
            or compression and inner in _PARQUET):
        # it wrote CSV text under any name: a .json, .npz or .xlsx that read_comparisons (or Excel) could not read
        raise ValueError(f"{path}: write_comparisons writes CSV/TSV (.csv, .tsv, .txt; compressed as .gz, .bz2, .xz) "
                         f"or Parquet (.parquet); not {path.suffix}")
    comparisons = as_comparisons(comparisons)
    frame = to_frame(comparisons, names=names)
    if _is_parquet(path):
        pq = import_optional("pyarrow.parquet", f"writing {path}", "pip install 'roembed[parquet]'")
        pa = import_optional("pyarrow", f"writing {path}", "pip install 'roembed[parquet]'")
        table = pa.Table.from_pandas(frame, preserve_index=False)
        meta = {"n_objects": comparisons.n_objects, "object_names": comparisons.object_names}
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), _META_KEY: json.dumps(meta).encode()})
        with atomic_path(path) as tmp:
            pq.write_table(table, tmp)
    else:
        sep = "\t" if inner in (".tsv", ".tab") else ","
        with ExitStack() as stack:  # .csv.gz was plain text under a compressed name
            fh = stack.enter_context(atomic_write(path, "wb" if compression else "w",
                                                 **({} if compression else {"newline": "", "encoding": "utf-8"})))
            if compression:
                fh = stack.enter_context(io.TextIOWrapper(_OPENERS[compression](fh, "wb"), newline="",
                                                          encoding="utf-8"))
            write_frame(frame, fh, sep=sep)
    if names_path is not None:
        if comparisons.object_names is None:
            raise InvalidComparisonsError("names_path given but the comparisons have no object names")
        with atomic_write(Path(names_path).expanduser(), encoding="utf-8") as fh:
            fh.write("name\n" + "".join(f"{name}\n" for name in comparisons.object_names))
    return path
