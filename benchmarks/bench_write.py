"""Writing ``comparisons.csv``: pandas' ``DataFrame.to_csv`` against roembed's compiled writer
(``roembed._csv.write_frame``), on the same table, to a file in a temporary folder; and numbering the table's
worker ids (``np.unique(ids, return_inverse=True)`` against ``roembed.data.distinct_values``, which the
annotator stage and the edge table use).

The table is shaped as a fit's (``roembed.report.data.comparison_table``): ``edge, i, j, l, k`` (integers),
``votes, opposing_votes`` (floats, whole numbers), ``n_responses``, ``annotators`` (text, one of ``--annotators``
ids ``w0``... per comparison; left out with 0), ``gamma`` (a float, 6% of them non-zero, as a 10% reversed
triplet fit flags) and ``flagged``; ``n = m / 100`` objects, seed 0.  Each writer writes the whole table
``--runs`` times, alternated; the table prints medians, the ratio, and whether the two files are the same bytes
(their hash), and whether the two numberings agree::

    python benchmarks/bench_write.py --m 1e6 1e7 --annotators 20000
    python benchmarks/bench_write.py --quick      # smoke run: m = 10^5, one run
"""
from __future__ import annotations

import argparse
import hashlib
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from _results import finish, loadavg
from roembed._csv import write_frame
from roembed._io import atomic_write
from roembed.data import distinct_values

HERE = Path(__file__).resolve().parent


def comparison_like(m: int, annotators: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.RandomState(seed)
    n = max(m // 100, 30)
    anchor, near, far = (rng.randint(n, size=m) for _ in range(3))
    columns = {"edge": np.arange(m), "i": anchor, "j": near, "l": anchor, "k": far,
               "votes": np.ones(m), "opposing_votes": np.zeros(m), "n_responses": np.ones(m, np.int64)}
    if annotators:
        columns["annotators"] = np.array([f"w{a}" for a in range(annotators)], dtype=object)[
            rng.randint(annotators, size=m)]
    flagged = rng.rand(m) < 0.06
    columns["gamma"] = np.where(flagged, rng.standard_normal(m), 0.0)
    columns["flagged"] = flagged
    return pd.DataFrame(columns)


WRITERS = {"pandas": lambda frame, fh: frame.to_csv(fh, index=False), "roembed": write_frame}


def timed_write(frame: pd.DataFrame, path: Path, writer: str) -> tuple[float, str]:
    start = time.perf_counter()
    with atomic_write(path, newline="") as fh:
        WRITERS[writer](frame, fh)
    seconds = time.perf_counter() - start
    return seconds, hashlib.sha256(path.read_bytes()).hexdigest()[:12]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--m", type=float, nargs="+", default=[1e6])
    parser.add_argument("--annotators", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "bench_write.json")
    args = parser.parse_args()
    if args.quick:
        args.m, args.runs = [1e5], 1
    with open(os.devnull, "w") as fh:
        write_frame(comparison_like(100, args.annotators), fh)  # numba compiles (or loads) the kernel once
    rows, summary = [], []
    with tempfile.TemporaryDirectory() as folder:
        for m in map(int, args.m):
            frame = comparison_like(m, args.annotators)
            for run in range(args.runs):
                for writer in WRITERS:
                    seconds, digest = timed_write(frame, Path(folder) / f"{writer}.csv", writer)
                    rows.append(dict(m=m, writer=writer, run=run, seconds=seconds, sha256=digest, loadavg=loadavg()))
                    print(f"m={m:,} {writer}: {seconds:.2f} s ({digest})", flush=True)
            times = {w: float(np.median([r["seconds"] for r in rows if r["m"] == m and r["writer"] == w]))
                     for w in WRITERS}
            digests = {r["sha256"] for r in rows if r["m"] == m and "sha256" in r}
            row = dict(m=m, annotators=args.annotators, pandas_s=times["pandas"], roembed_s=times["roembed"],
                       ratio=times["roembed"] / times["pandas"], same_bytes=str(len(digests) == 1))
            if args.annotators:
                row.update(numbering(frame["annotators"].to_numpy(), m, args.runs, rows))
            summary.append(row)
    finish(args.out, args, rows, summary, dict(m=",", annotators="", pandas_s=".2f", roembed_s=".2f", ratio=".3f",
                                               same_bytes="", unique_s=".2f", distinct_s=".2f", ids_ratio=".3f",
                                               same_ids=""))


def numbering(ids: np.ndarray, m: int, runs: int, rows: list) -> dict:
    """Medians of ``np.unique`` and ``distinct_values`` on the ids (alternated), and whether they agree."""
    seconds = {"unique": [], "distinct": []}
    for run in range(runs):
        for name, number in (("unique", lambda v: np.unique(v, return_inverse=True)), ("distinct", distinct_values)):
            start = time.perf_counter()
            distinct, code = number(ids)
            seconds[name].append(time.perf_counter() - start)
            rows.append(dict(m=m, numbering=name, run=run, seconds=seconds[name][-1], loadavg=loadavg()))
            print(f"m={m:,} {name}: {seconds[name][-1]:.2f} s", flush=True)
            if name == "unique":
                expected = (distinct, code.reshape(-1))
            else:
                same = bool(np.array_equal(distinct, expected[0]) and np.array_equal(code, expected[1]))
    unique_s, distinct_s = (float(np.median(seconds[k])) for k in ("unique", "distinct"))
    return dict(unique_s=unique_s, distinct_s=distinct_s, ids_ratio=distinct_s / unique_s, same_ids=str(same))


if __name__ == "__main__":
    main()
