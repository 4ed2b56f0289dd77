"""The hand-written two-loop L-BFGS against SciPy's L-BFGS-B (both with the BLAS thread cap), per iteration.

One problem per size: the plain SOE objective of the self-tuning default's first stage on the paper's
synthetic protocol (n = 100, p = 10, all ~330,000 votes aggregated to ~10,000 edges) and, for a larger
case, 1,000 random objects in R^10 with 100,000 random triplets (10% reversed).  Each solver runs from the
same start with the same stopping rule (relative decrease below ``tol``); ``--repeats`` runs, medians.
Printed: iterations, seconds, milliseconds per iteration, final objective and the ratio scipy / two-loop.

    PYTHONPATH=src python benchmarks/bench_lbfgs.py
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from _results import finish

HERE = Path(__file__).resolve().parent


def problems():
    from roembed.data import Comparisons
    from roembed.estimators.robust_fit import RobustProblem
    from roembed.experiments.synthetic import SyntheticProtocol

    split = SyntheticProtocol(n_test=1000).draw("vote", 0.0, 5101)
    yield "synthetic n=100", RobustProblem.build(split.train.aggregate(), "soe", "net"), 10
    rng = np.random.default_rng(5102)
    X = rng.standard_normal((1000, 10))
    t = rng.integers(0, 1000, size=(110_000, 3))
    t = t[(t[:, 0] != t[:, 1]) & (t[:, 0] != t[:, 2]) & (t[:, 1] != t[:, 2])][:100_000]
    closer = ((X[t[:, 0]] - X[t[:, 1]]) ** 2).sum(1) < ((X[t[:, 0]] - X[t[:, 2]]) ** 2).sum(1)
    t = np.where(closer[:, None], t, t[:, [0, 2, 1]])
    flip = rng.random(len(t)) < 0.1
    t[flip] = t[flip][:, [0, 2, 1]]
    yield "random n=1000", RobustProblem.build(Comparisons(t, n_objects=1000).aggregate(), "soe", "net"), 10


def main(argv=None):
    from roembed.solvers import solve

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tol", type=float, default=1e-9)
    parser.add_argument("--out", type=Path, default=HERE / "out" / "bench_lbfgs.json")
    args = parser.parse_args(argv)
    rows, summary = [], []
    for name, problem, p in problems():
        X0 = 0.1 * np.random.default_rng(0).standard_normal((problem.graph.n_objects, p))
        objective = problem.plain()
        for method in ("two-loop", "scipy"):
            for r in range(args.repeats):
                start = time.perf_counter()
                result = solve(objective, problem.distances, X0, alpha=3e-6, max_iter=1000, tol=args.tol,
                               method=method)
                seconds = time.perf_counter() - start
                rows.append(dict(problem=name, method=method, repeat=r, seconds=seconds, n_iter=result.n_iter,
                                 objective=result.objective))
            sel = [x for x in rows if x["problem"] == name and x["method"] == method]
            summary.append(dict(problem=name, method=method, n_iter=float(np.median([x["n_iter"] for x in sel])),
                                seconds=float(np.median([x["seconds"] for x in sel])),
                                ms_per_iter=float(np.median([1e3 * x["seconds"] / x["n_iter"] for x in sel])),
                                objective=float(np.median([x["objective"] for x in sel]))))
        two, sci = summary[-2], summary[-1]
        sci["ratio_per_iter"] = sci["ms_per_iter"] / two["ms_per_iter"]
        sci["ratio_total"] = sci["seconds"] / two["seconds"]
    columns = {"problem": "", "method": "", "n_iter": ".0f", "seconds": ".3f", "ms_per_iter": ".3f",
               "objective": ".6g", "ratio_per_iter": ".2f", "ratio_total": ".2f"}
    finish(args.out, args, rows, summary, columns)


if __name__ == "__main__":
    main()
