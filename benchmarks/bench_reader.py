"""Reading a large triplet file: time and peak memory of ``read_comparisons``, old reader vs new.

Data: a random triplet CSV (``anchor,closer,farther``; ``n = m / 100`` objects, data seed 0)
of each size ``--m``, written once to a temporary folder (not in the repository), plain or
gzipped (``--gzip``); ``--annotators K`` adds a ``worker`` column of K ids ``w0``... (drawn from
their own seed, so the triplets stay the same).  Every read runs in a fresh process (``python bench_reader.py --child
...``) so its memory is its own:

* ``read_bytes``: the peak resident set during ``read_comparisons`` (the kernel's high-water
  mark ``VmHWM``, reset just before through ``/proc/self/clear_refs``) minus the resident set
  before it -- everything the read allocated, the result included;
* ``result_bytes``: what the returned ``Comparisons`` holds (its arrays' ``nbytes``), the floor
  for any reader; ``text_bytes``: the string objects its annotator ids point to, each counted once;
* per row: both divided by ``m``.

The old reader is the code of another source tree, given with ``--old-src`` (a checkout of the
commit before the streaming reader, e.g. ``git worktree add /tmp/roembed-old fb44bbc``); the new
one is this tree's.  Medians over ``--runs`` (3) runs; ``/proc/loadavg`` is recorded per run::

    python benchmarks/bench_reader.py --m 1e6 1e7 --old-src /tmp/roembed-old
    python benchmarks/bench_reader.py --m 1e7 --chunk-chars 1e6 4e6 16e6   # the chunk size
    python benchmarks/bench_reader.py --m 1e6 1e7 --annotators 20000 --old-src /tmp/roembed-old
    python benchmarks/bench_reader.py --quick                  # smoke run: m = 10^5, new reader only
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _results import finish, loadavg, reset_peak, status_bytes

HERE = Path(__file__).resolve().parent


def write_triplets(path: Path, m: int, seed: int = 0, block: int = 1_000_000, annotators: int = 0) -> None:
    """``m`` random triplets over ``max(1000, m // 100)`` objects as CSV, written in blocks (and ``annotators``
    worker ids, from a seed of their own)."""
    import gzip

    rng, workers = np.random.default_rng(seed), np.random.default_rng(seed + 1)
    n = max(1_000, m // 100)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt", newline="") as fh:
        fh.write("anchor,closer,farther" + (",worker" if annotators else "") + "\n")
        for start in range(0, m, block):
            t = rng.integers(0, n, size=(min(block, m - start), 3))
            t[:, 1] = (t[:, 0] + 1 + t[:, 1] % (n - 1)) % n        # closer != anchor
            shift = 1 + t[:, 2] % (n - 2)                            # farther != anchor, != closer
            far = (t[:, 0] + shift) % n
            far = np.where(far == t[:, 1], (far + 1) % n, far)
            far = np.where(far == t[:, 0], (far + 1) % n, far)
            t[:, 2] = far
            if annotators:
                np.savetxt(fh, np.c_[t, workers.integers(0, annotators, len(t))], fmt=["%d", "%d", "%d", "w%d"],
                           delimiter=",")
            else:
                np.savetxt(fh, t, fmt="%d", delimiter=",")


def child(spec: dict) -> dict:
    """One read in this process: seconds, peak bytes, result bytes."""
    import gc

    from roembed.data import io, read_comparisons

    if spec.get("chunk_chars"):
        io.CHUNK_CHARS = spec["chunk_chars"]
    gc.collect()
    exact = reset_peak()
    before, load = status_bytes("VmRSS"), loadavg()
    start = time.perf_counter()
    comparisons = read_comparisons(spec["path"])
    seconds = time.perf_counter() - start
    peak = status_bytes("VmHWM")
    ids = comparisons.annotator
    result = comparisons.quadruplets.nbytes + comparisons.weight.nbytes + (0 if ids is None else ids.nbytes)
    text = 0 if ids is None or ids.dtype != object else sum(sys.getsizeof(t) for t in {id(t): t for t in ids}.values())
    return dict(text_bytes=text, reader=spec["reader"], chunk_chars=getattr(io, "CHUNK_CHARS", None), m=len(comparisons), file=Path(spec["path"]).name,
                file_bytes=os.path.getsize(spec["path"]), seconds=seconds, read_bytes=max(peak - before, 0),
                result_bytes=result, process_bytes=peak, peak_exact=exact, loadavg=load,
                index_dtype=str(comparisons.quadruplets.dtype))


def run_child(src: Path, spec: dict) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(src / "src"), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(spec)], check=True,
                         capture_output=True, text=True, env=env)
    row = json.loads(out.stdout.strip().splitlines()[-1])
    for key in ("read_bytes", "result_bytes", "text_bytes", "file_bytes"):
        row[key.replace("_bytes", "_per_row")] = row[key] / row["m"]
    print(json.dumps(row), flush=True)
    return row


def summarise(rows: list[dict]) -> list[dict]:
    """Medians per (file, reader), and the new reader's time and memory as a share of the old one's."""
    out = []
    for file in dict.fromkeys(r["file"] for r in rows):
        for reader in dict.fromkeys(r["reader"] for r in rows):
            sel = [r for r in rows if r["file"] == file and r["reader"] == reader]
            if not sel:
                continue
            med = {k: float(np.median([r[k] for r in sel])) for k in
                   ("seconds", "read_per_row", "result_per_row", "text_per_row", "file_per_row", "read_bytes")}
            out.append(dict(file=file, reader=reader, m=sel[0]["m"], runs=len(sel), **med,
                            loadavg=sel[0]["loadavg"]))
    for s in out:
        old = [o for o in out if o["file"] == s["file"] and o["reader"] == "old"]
        if old and s["reader"] != "old":
            s["time_vs_old"] = s["seconds"] / old[0]["seconds"]
            s["memory_vs_old"] = s["read_bytes"] / old[0]["read_bytes"]
    return out


TABLE = {"file": "", "reader": "", "m": ".0f", "runs": ".0f", "seconds": ".2f", "time_vs_old": ".2f",
         "read_per_row": ".1f", "memory_vs_old": ".2f", "result_per_row": ".1f", "text_per_row": ".1f",
         "file_per_row": ".1f",
         "loadavg": ""}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--m", type=float, nargs="+", default=[1e6, 1e7], help="rows of each file")
    parser.add_argument("--gzip", action="store_true", help="also read each file gzipped")
    parser.add_argument("--old-src", type=Path, default=None, help="source tree of the old reader (its src/ is used)")
    parser.add_argument("--chunk-chars", type=float, nargs="+", default=[0],
                        help="text per chunk of the new reader (0: its default); several compare them")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--annotators", type=int, default=0, help="add a worker column of this many ids")
    parser.add_argument("--quick", action="store_true", help="smoke run: m = 10^5, one run")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=HERE / "out" / "bench_reader.json")
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return
    if args.quick:
        args.m, args.runs = [1e5], 1
    readers = [(f"new {int(c):.0e}" if len(args.chunk_chars) > 1 else "new", HERE.parent, int(c)) for c in args.chunk_chars]
    readers += [("old", args.old_src, 0)] if args.old_src else []
    commit = subprocess.run(["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for m in (int(m) for m in args.m):
            paths = [Path(tmp) / f"triplets_{m:.0e}.csv"] + ([Path(tmp) / f"triplets_{m:.0e}.csv.gz"] if args.gzip else [])
            for path in paths:
                write_triplets(path, m, annotators=args.annotators)
                for run in range(args.runs):
                    for reader, src, chars in (readers if run % 2 == 0 else readers[::-1]):
                        rows.append(run_child(src, dict(path=str(path), reader=reader, chunk_chars=chars)))
                path.unlink()
    finish(args.out, args, rows, summarise(rows), TABLE, commit=commit, cpus=os.cpu_count())


if __name__ == "__main__":
    main()
