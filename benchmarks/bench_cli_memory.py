"""`roembed fit` (or `roembed report`) on a large file: wall time and peak memory of the whole command, this
tree against another.

Data: drawn as the scale benchmark draws its training triplets (``bench_scale.labelled_triplets``:
``n = m / 100`` objects from ``N(0, I_p)``, p = 10, ``m`` random triplets labelled by the true distances, 10% of
them reversed; seed 0, without its test triplets, so not the same draw), written once as a CSV to a temporary
folder.  Each run is ``roembed fit FILE --dim 10 --out
DIR`` in a fresh process with the source tree's ``src`` first on ``PYTHONPATH``; its peak resident set
is the kernel's high-water mark (``VmHWM``, which the child writes at exit), so reading, fitting and
writing every output are all in it, as a user's run is.  Before the timed runs each tree fits a 3,000-triplet file once (numba compiles
on a tree's first run and caches).  Per run: wall seconds, peak bytes (and per comparison), and a hash of
``comparisons.csv``, ``embedding.csv`` and ``outliers.csv``, so the table says whether the two trees wrote
the same files.  ``--report`` adds ``--report`` to each command (the HTML page, which keeps at most 10^6
comparisons, read back from the folder: above that it chooses which; its bytes are not compared, as Bokeh
names its elements at random).  ``--annotators K`` adds a ``worker`` column (K workers, drawn after the
triplets, which stay the same), as a crowd's export has.  ``--command report`` fits each file once (this
tree) and times ``roembed report`` on that folder instead; the pages are compared with Bokeh's ids masked.
Medians over ``--runs``, the trees alternated::

    git worktree add /tmp/roembed-old HEAD~1
    python benchmarks/bench_cli_memory.py --m 1e6 1e7 --old-src /tmp/roembed-old --runs 1
    python benchmarks/bench_cli_memory.py --m 2e6 --report --old-src /tmp/roembed-old --runs 3
    python benchmarks/bench_cli_memory.py --command report --m 3e6 --annotators 5000 --old-src /tmp/roembed-old
    python benchmarks/bench_cli_memory.py --quick        # smoke run: m = 10^5, this tree, one run
"""
from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _results import finish, loadavg
from bench_scale import labelled_triplets

HERE = Path(__file__).resolve().parent
OUTPUTS = ("comparisons.csv", "embedding.csv", "outliers.csv")


def write_file(path: Path, m: int, p: int = 10, flip: float = 0.1, seed: int = 0, annotators: int = 0) -> None:
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(max(m // 100, 30), p))
    triplets = labelled_triplets(rng, X, m)
    flipped = rng.rand(m) < flip
    triplets[flipped, 1], triplets[flipped, 2] = triplets[flipped, 2], triplets[flipped, 1].copy()
    if annotators:
        np.savetxt(path, np.c_[triplets, rng.randint(annotators, size=m)], fmt=["%d", "%d", "%d", "w%d"],
                   delimiter=",", header="anchor,closer,farther,worker", comments="")
    else:
        np.savetxt(path, triplets, fmt="%d", delimiter=",", header="anchor,closer,farther", comments="")


# The child writes its own peak (VmHWM) at exit: wait4's ru_maxrss of a child started by vfork, as subprocess
# starts it, is at least the parent's peak (exec records the borrowed address space's high-water mark), here the
# peak of generating the data: 1.99 GB at 10^7 for a run whose own peak was 1.64 GB.
CHILD = """import atexit, sys
def peak(path=sys.argv.pop(1)):
    with open("/proc/self/status") as fh, open(path, "w") as out:
        out.write(next(line.split()[1] for line in fh if line.startswith("VmHWM:")))
atexit.register(peak)
from roembed.cli import main
sys.argv[0] = "roembed"
main()
"""


def run_cli(src: Path, path: Path, out: Path, options=()) -> tuple[float, int]:
    """``roembed fit path --dim 10 --out out [options]`` with ``src``'s code: seconds and peak bytes."""
    return run_command(src, ["fit", str(path), "--dim", "10", "--out", str(out), *options], out)


def run_report(src: Path, folder: Path, page: Path) -> tuple[float, int]:
    """``roembed report folder --output page`` with ``src``'s code: seconds and peak bytes."""
    return run_command(src, ["report", str(folder), "--output", str(page)], page)


def run_command(src: Path, arguments: list, out: Path) -> tuple[float, int]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(src / "src"), os.environ.get("PYTHONPATH", "")]))
    peak_file = out.parent / f"{out.name}.peak"
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD, str(peak_file), *arguments], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"roembed {arguments[0]} failed with {src}:\n{proc.stdout}")
    return seconds, int(peak_file.read_text()) * 1024


def digest(folder: Path) -> str:
    h = hashlib.sha256()
    for name in OUTPUTS:
        h.update((folder / name).read_bytes())
    return h.hexdigest()[:12]


def page_digest(page: Path) -> str:
    """A hash of a report page with the ids Bokeh draws at random (``p1234``, uuids, element ids) masked."""
    text = page.read_text(encoding="utf-8")
    text = re.sub(r'"(id|root_id|docid|elementid)":\s*"[^"]*"', r'"\1":""', text)
    text = re.sub(r"\bp\d{4,}\b", "p", text)
    text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "", text)
    text = re.sub(r'(data-root-id|id)="[^"]*"', "", text)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def summarise(rows: list[dict]) -> list[dict]:
    """Medians per (m, tree); this tree's time and memory as a share of the other tree's."""
    out = []
    for m in dict.fromkeys(r["m"] for r in rows):
        for tree in dict.fromkeys(r["tree"] for r in rows):
            sel = [r for r in rows if r["m"] == m and r["tree"] == tree]
            med = {k: float(np.median([r[k] for r in sel])) for k in ("seconds", "peak_bytes", "peak_per_comparison")}
            out.append(dict(m=m, tree=tree, runs=len(sel), **med, outputs=sel[0]["outputs"]))
    for s in out:
        old = [o for o in out if o["m"] == s["m"] and o["tree"] == "old"]
        if old and s["tree"] != "old":
            s["time_vs_old"] = s["seconds"] / old[0]["seconds"]
            s["memory_vs_old"] = s["peak_bytes"] / old[0]["peak_bytes"]
            s["same_outputs"] = str(s["outputs"] == old[0]["outputs"])
    return out


TABLE = {"m": ".0f", "tree": "", "runs": ".0f", "seconds": ".1f", "time_vs_old": ".2f", "peak_bytes": ".3g",
         "peak_per_comparison": ".0f", "memory_vs_old": ".2f", "outputs": "", "same_outputs": ""}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--m", type=float, nargs="+", default=[1e6], help="comparisons in each file")
    parser.add_argument("--old-src", type=Path, default=None, help="another source tree (its src/ is used)")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--report", action="store_true", help="each run with --report (the HTML page as well)")
    parser.add_argument("--command", choices=("fit", "report"), default="fit",
                        help="report: fit each file once (this tree), then time roembed report on its folder")
    parser.add_argument("--annotators", type=int, default=0, help="add a worker column with this many workers")
    parser.add_argument("--quick", action="store_true", help="smoke run: m = 10^5, one run")
    parser.add_argument("--out", type=Path, default=HERE / "out" / "bench_cli_memory.json")
    args = parser.parse_args(argv)
    if args.quick:
        args.m, args.runs = [1e5], 1
    trees = [("new", HERE.parent)] + ([("old", args.old_src)] if args.old_src else [])
    commit = subprocess.run(["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        write_file(tmp / "warm.csv", 3_000)
        for _, src in trees:
            run_cli(src, tmp / "warm.csv", tmp / "warm")
        for m in (int(m) for m in args.m):
            path = tmp / f"triplets_{m:.0e}.csv"
            write_file(path, m, annotators=args.annotators)
            if args.command == "report":
                run_cli(HERE.parent, path, tmp / "fitted")
            for run in range(args.runs):
                for tree, src in (trees if run % 2 == 0 else trees[::-1]):
                    load = loadavg()
                    if args.command == "report":
                        seconds, peak = run_report(src, tmp / "fitted", tmp / f"{tree}.html")
                        outputs = page_digest(tmp / f"{tree}.html")
                    else:
                        seconds, peak = run_cli(src, path, tmp / tree, ["--report"] if args.report else [])
                        outputs = digest(tmp / tree)
                    rows.append(dict(m=m, tree=tree, run=run, command=args.command, report=args.report,
                                     annotators=args.annotators, seconds=seconds, peak_bytes=peak,
                                     peak_per_comparison=peak / m, outputs=outputs, loadavg=load))
                    print(rows[-1], flush=True)
            path.unlink()
    finish(args.out, args, rows, summarise(rows), TABLE, commit=commit, cpus=os.cpu_count())


if __name__ == "__main__":
    main()
