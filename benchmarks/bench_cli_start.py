"""How long the command line takes before it answers: ``roembed --help``, ``roembed fit --help``, a missing file,
and a small fit, each in a fresh process (the time a user waits, imports included).

The old command line is the code of another source tree, given with ``--old-src`` (a checkout of the commit before
the light option modules, e.g. ``git worktree add /tmp/roembed-old ee8e488``); the new one is this tree's.  Medians
over ``--runs`` (5) runs, old and new alternated; ``/proc/loadavg`` is recorded per run::

    python benchmarks/bench_cli_start.py --old-src /tmp/roembed-old/src
    python benchmarks/bench_cli_start.py --quick            # smoke run: one run, this tree only
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _results import finish, loadavg

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"


def small_file(folder: Path) -> Path:
    """300 triplets over 20 objects in the plane, answered by the points (data seed 0)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 2))
    rows = []
    while len(rows) < 300:
        a, b, c = rng.choice(20, 3, replace=False)
        near, far = (b, c) if np.linalg.norm(X[a] - X[b]) < np.linalg.norm(X[a] - X[c]) else (c, b)
        rows.append(f"{a},{near},{far}")
    path = folder / "small.csv"
    path.write_text("anchor,closer,farther\n" + "\n".join(rows) + "\n")
    return path


def commands(folder: Path) -> dict:
    data = small_file(folder)
    return {"roembed --help": ["--help"], "roembed fit --help": ["fit", "--help"],
            "roembed fit missing.csv": ["fit", str(folder / "missing.csv"), "--out", str(folder / "o1")],
            "roembed fit small.csv (300 triplets)": ["fit", str(data), "--out", str(folder / "o2"), "--quiet"]}


def timed(src: str, args: list[str]) -> tuple[float, int]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "roembed", *args], capture_output=True,
                          env={**os.environ, "PYTHONPATH": src})
    return time.perf_counter() - start, done.returncode


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old-src", default=None, help="the src folder of another checkout to compare")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="smoke run: one run, this tree only")
    parser.add_argument("--out", type=Path, default=HERE / "out" / "bench_cli_start.json")
    args = parser.parse_args(argv)
    if args.quick:
        args.runs, args.old_src = 1, None
    trees = {"new": str(SRC)} | ({"old": args.old_src} if args.old_src else {})
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, argv_ in commands(Path(tmp)).items():
            for run in range(args.runs):
                for tree, src in trees.items():  # alternated, so a change of load hits both alike
                    seconds, code = timed(src, argv_)
                    rows.append(dict(command=name, tree=tree, run=run, seconds=seconds, exit_code=code,
                                     loadavg=loadavg()))
                    print(rows[-1], flush=True)
    summary = []
    for name in dict.fromkeys(r["command"] for r in rows):
        medians = {tree: statistics.median(r["seconds"] for r in rows if r["command"] == name and r["tree"] == tree)
                   for tree in trees}
        codes = sorted({r["exit_code"] for r in rows if r["command"] == name})
        row = dict(command=name, new_s=medians["new"], exit_codes=",".join(map(str, codes)))
        if "old" in medians:
            row.update(old_s=medians["old"], new_over_old=medians["new"] / medians["old"])
        summary.append(row)
    finish(args.out, args, rows, summary,
           dict(command="", old_s=".2f", new_s=".2f", new_over_old=".2f", exit_codes=""))


if __name__ == "__main__":
    main()
