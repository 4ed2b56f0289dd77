"""Tables written as CSV text, byte for byte as ``DataFrame.to_csv(index=False)`` writes them, by a compiled loop.

pandas formats every cell through Python objects: ``comparisons.csv`` of a 10^7-comparison fit (eleven columns)
took 55 s of a 10-minute ``roembed fit``.  Here each column becomes, per row, an integer printed by
:func:`roembed._kernels.csv_rows` (integers; floats with an integral value, with ``.0`` after them) or a
text of a small pool (the other floats as ``repr`` gives them, booleans, text columns' distinct values,
quoted as the ``csv`` module quotes).  ``benchmarks/bench_write.py`` times both on the same table.
Columns of other kinds (categories, dates, floats other than float64, objects that are not all text) are left
to pandas, whole: the output is then pandas' own.
"""
from __future__ import annotations

import csv
import io
import os

import numpy as np
import pandas as pd

from ._factorize import factorize

BLOCK_ROWS = 1 << 16  # rows formatted at once: the buffer is at most about 24 bytes a numeric cell
_FIXED = ("False", "True", "", ".0")  # pool entries 0-3 of every block
_NUMBER_WIDTH = 22  # sign, 19 digits of an int64, ".0"


def write_frame(frame: pd.DataFrame, fh, *, header: bool = True, sep: str = ",") -> None:
    """Writes ``frame`` to the text handle ``fh`` as ``frame.to_csv(fh, index=False, header=header, sep=sep)``
    would (its default quoting, ``na_rep=""`` and line ending ``os.linesep``)."""
    if not _supported(frame, sep):
        frame.to_csv(fh, index=False, header=header, sep=sep)
        return
    quoted = _quoting(sep)
    if header:
        fh.write(sep.join(quoted(str(name)) for name in frame.columns) + os.linesep)
    from ._kernels import csv_rows  # numba loads with the first table written, not with roembed.data

    columns = [frame[name].to_numpy() for name in frame.columns]  # text as objects, NaN where missing
    newline = np.frombuffer(os.linesep.encode(), np.uint8)
    for start in range(0, len(frame), BLOCK_ROWS):
        pool = list(_FIXED)
        number = np.zeros((len(columns), min(BLOCK_ROWS, len(frame) - start)), np.int64)
        text = np.empty(number.shape, np.int64)
        suffix = np.full(len(columns), -1, np.int64)
        width = len(columns) + len(newline)  # the separators and the line end
        for c, values in enumerate(columns):
            part = values[start:start + number.shape[1]]
            width += _cells(part, number[c], text[c], suffix, c, pool, quoted)
        encoded = [t.encode("utf-8") for t in pool]
        pool_start = np.zeros(len(encoded) + 1, np.int64)
        np.cumsum([len(b) for b in encoded], out=pool_start[1:])
        out = np.empty(number.shape[1] * width, np.uint8)
        n = csv_rows(number, text, suffix, np.frombuffer(b"".join(encoded), np.uint8), pool_start,
                     np.uint8(ord(sep)), newline, out)
        fh.write(out[:n].tobytes().decode("utf-8"))


def _quoting(sep: str):
    """``text -> cell``: a text as pandas' CSV writer (Python's ``csv`` module, minimal quoting) writes it in a
    row of several cells: the module itself decides, as its rule differs between Python versions (3.13 quotes a
    lone ``\r``, 3.11 does not)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=sep, lineterminator=os.linesep, quoting=csv.QUOTE_MINIMAL)
    tail = len(sep) + len(os.linesep)

    def quoted(text: str) -> str:
        buffer.seek(0)
        buffer.truncate()
        writer.writerow((text, ""))
        return buffer.getvalue()[:-tail]
    return quoted


def _supported(frame: pd.DataFrame, sep: str) -> bool:
    if sep not in (",", "\t", ";", "|") or len(frame.columns) < 2 or not frame.columns.is_unique:
        return False  # (a row of one empty cell is written '""')
    for name in frame.columns:
        values = frame[name]
        kind = values.dtype.kind if isinstance(values.dtype, np.dtype) else None
        if kind == "b" or kind == "f" and values.dtype.itemsize == 8:
            continue
        if kind == "i" and (len(values) == 0 or int(values.min()) > -2**63):  # its negative is an int64
            continue
        if kind == "u" and (len(values) == 0 or int(values.max()) < 2**63):
            continue
        if (kind == "O" or isinstance(values.dtype, pd.StringDtype)) and pd.api.types.infer_dtype(
                values, skipna=True) in ("string", "empty"):  # text (pandas 3 reads and makes it as "str")
            continue
        return False
    return True


def _cells(values: np.ndarray, number: np.ndarray, text: np.ndarray, suffix: np.ndarray, c: int, pool: list,
           quoted) -> int:
    """Fills one column's ``number`` and ``text`` rows of a block (adding to ``pool``); returns the most bytes a
    cell of it takes."""
    kind = values.dtype.kind
    if kind == "b":
        text[:] = values
        return 5
    if kind in "iu":
        number[:] = values
        text[:] = -1
        return _NUMBER_WIDTH
    if kind == "f":
        # integral values below 10^16 print as Python prints them, "3.0"; -0.0 and the rest through repr
        whole = np.isfinite(values) & (np.abs(values) < 1e16) & (values == np.trunc(values)) & ~(
            (values == 0) & np.signbit(values))
        number[whole] = values[whole]
        text[whole] = -1
        other = np.flatnonzero(~whole)
        text[other] = len(pool) + np.arange(len(other))
        shown = ["" if v != v else repr(v) for v in values[other].tolist()]
        pool.extend(shown)
        suffix[c] = 3
        return max([_NUMBER_WIDTH, *map(len, shown)])
    code, distinct = factorize(values)  # text: its distinct values once
    text[:] = np.where(code < 0, 2, len(pool) + code)
    shown = [quoted(v) for v in distinct.tolist()]
    pool.extend(shown)
    return max([0, *(len(t.encode("utf-8")) for t in shown)])


__all__ = ["write_frame"]
