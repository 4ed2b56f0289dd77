"""Scale of RobustOrdinalEmbedding: fit time and peak memory per comparison, NumPy vs torch.

Data: ``n`` objects drawn from ``N(0, I_p)``, ``m`` random triplets labelled by the
true distances, a fraction ``--flip`` of them reversed (so the outlier caps bite);
held-out triplets measure the error.  Each fit runs in a fresh process so that
its peak memory is its own:

* ``rss``: growth of the peak resident set (``ru_maxrss``) during ``fit``, over the
  peak after the data were loaded -- everything the fit allocated, any backend;
* ``traced`` (``--traced``, a separate slower run): tracemalloc's peak during ``fit``
  (NumPy allocations only; torch's are invisible to it).

Both are reported per comparison (bytes / m).  Times are wall seconds of ``fit``
(aggregation into the comparison graph included), median over ``--runs``.

Examples::

    python benchmarks/bench_scale.py                       # n=10,000, m=10^6, p=10, numpy + torch (CPU)
    python benchmarks/bench_scale.py --sweep 1e4 1e5 1e6   # torch-vs-numpy size sweep on CPU
    python benchmarks/bench_scale.py --device cuda --n 100000 --m 10000000 --solvers torch
    python benchmarks/bench_scale.py --quick               # smoke run (n=2,000, m=10^5)
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import resource
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

from _results import finish

HERE = Path(__file__).resolve().parent


def make_data(n: int, m: int, p: int, flip: float, seed: int, path: Path, n_test: int = 100_000) -> None:
    """Random labelled triplets (``m`` train, ``n_test`` test) of a Gaussian embedding, saved to ``path``."""
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((n, p))

    def triplets(k):
        t = rng.randint(n, size=(int(k * 1.01) + 10, 3))
        t = t[(t[:, 0] != t[:, 1]) & (t[:, 0] != t[:, 2]) & (t[:, 1] != t[:, 2])][:k]
        near = ((X[t[:, 0]] - X[t[:, 1]]) ** 2).sum(1) > ((X[t[:, 0]] - X[t[:, 2]]) ** 2).sum(1)
        t[near] = t[near][:, [0, 2, 1]]
        return t

    train, test = triplets(m), triplets(n_test)
    flipped = rng.random_sample(len(train)) < flip
    train[flipped] = train[flipped][:, [0, 2, 1]]
    np.savez(path, train=train, test=test, n=n)


def _peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def fit_once(path: str, solver: str, p: int, lam, max_iter: int, device, dtype: str, seed: int, traced: bool,
             threads, queue) -> None:
    """Child process: load, fit, measure; puts a result dict on ``queue``."""
    import warnings

    from roembed import Comparisons, RobustOrdinalEmbedding

    data = np.load(path)
    train = Comparisons(data["train"], n_objects=int(data["n"]))
    test = Comparisons(data["test"], n_objects=int(data["n"]))
    est = RobustOrdinalEmbedding(p, lam=lam, solver="torch" if solver == "torch" else "lbfgs", device=device,
                                 dtype=dtype, init="random", max_iter=max_iter, random_state=seed)
    cuda = False
    if solver == "torch":
        import torch

        cuda = torch.device(device or "cpu").type == "cuda"
        if threads:
            torch.set_num_threads(threads)
        torch.zeros(1, device=device or "cpu")  # initialise the backend before the baseline
        if cuda:
            torch.cuda.reset_peak_memory_stats()
    base = _peak_rss_bytes()
    if traced:
        tracemalloc.start()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        est.fit(train)
        seconds = time.perf_counter() - start
    traced_bytes = tracemalloc.get_traced_memory()[1] if traced else None
    tracemalloc.stop()
    row = dict(solver=solver, device=str(device or "cpu"), threads=threads,
               dtype=dtype if solver == "torch" else "float64",
               n=int(data["n"]), m=len(train), p=p, seconds=seconds, n_iter=int(est.n_iter_),
               objective=float(est.objective_), lam=float(est.lam_), test_error=1.0 - est.score(test),
               outliers=int(est.outlier_mask_.sum()), rss_bytes=max(_peak_rss_bytes() - base, 0))
    if traced:
        row.update(traced_bytes=traced_bytes, seconds_traced=seconds)
        del row["seconds"]
    if cuda:
        import torch

        row["cuda_peak_bytes"] = int(torch.cuda.max_memory_allocated())
    queue.put(row)


def run_fit(path, solver, p, lam, max_iter, device, dtype, seed, traced=False, threads=None) -> dict:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=fit_once,
                       args=(str(path), solver, p, lam, max_iter, device, dtype, seed, traced, threads, queue))
    proc.start()
    row = queue.get()
    proc.join()
    for key in ("rss_bytes", "traced_bytes", "cuda_peak_bytes"):
        if key in row:
            row[key.replace("_bytes", "_per_comparison")] = row[key] / row["m"]
    print(json.dumps(row), flush=True)
    return row


def summarise(rows):
    keys = sorted({(r["solver"], r["device"], r["dtype"], r["m"]) for r in rows}, key=lambda k: (k[3], k[0]))
    out = []
    for key in keys:
        sel = [r for r in rows if (r["solver"], r["device"], r["dtype"], r["m"]) == key]
        med = {f: float(np.median([r[f] for r in sel])) for f in sel[0] if isinstance(sel[0][f], (int, float))}
        out.append(dict(solver=key[0], device=key[1], dtype=key[2], runs=len(sel), **{**med, "m": key[3]}))
    for s in out:  # ratio against the numpy fit of the same size
        ref = [r for r in out if r["solver"] == "numpy" and r["m"] == s["m"]]
        if ref:
            s["time_vs_numpy"] = s["seconds"] / ref[0]["seconds"]
    return out


TABLE = {"solver": "", "device": "", "dtype": "", "n": ".0f", "m": ".0f", "runs": ".0f", "seconds": ".2f",
         "time_vs_numpy": ".2f", "n_iter": ".0f", "test_error": ".4f", "rss_per_comparison": ".0f",
         "traced_per_comparison": ".0f", "cuda_peak_per_comparison": ".0f"}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--m", type=float, default=1e6, help="training triplets")
    parser.add_argument("--p", type=int, default=10)
    parser.add_argument("--sweep", type=float, nargs="*", default=None,
                        help="sizes m for a size sweep (n = m / 100, at least 1,000)")
    parser.add_argument("--solvers", nargs="+", default=["numpy", "torch"], choices=["numpy", "torch"])
    parser.add_argument("--device", default=None, help="torch device (default cpu), e.g. cuda")
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    parser.add_argument("--lam", default="auto", help='outlier penalty (a float), or "auto" (the default: a plain '
                        'fit, then the robust fit from it)')
    parser.add_argument("--torch-threads", type=int, default=None,
                        help="torch intra-op threads (default: torch's choice); 1 avoids spinning on a loaded machine")
    parser.add_argument("--traced", action="store_true", help="also a tracemalloc run per size (numpy solver)")
    parser.add_argument("--flip", type=float, default=0.1, help="share of reversed training triplets")
    parser.add_argument("--max-iter", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="smoke run: n=2,000, m=10^5, 1 run")
    parser.add_argument("--out", type=Path, default=HERE / "out" / "bench_scale.json")
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.m, args.runs = 2_000, 1e5, 1
    lam = args.lam if args.lam == "auto" else float(args.lam)
    sizes = [(max(1_000, int(m) // 100), int(m)) for m in args.sweep] if args.sweep else [(args.n, int(args.m))]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n, m in sizes:
            path = Path(tmp) / f"data_{n}_{m}.npz"
            make_data(n, m, args.p, args.flip, seed=0, path=path)
            for run in range(args.runs):
                for solver in args.solvers:
                    device = args.device if solver == "torch" else None
                    rows.append(run_fit(path, solver, args.p, lam, args.max_iter, device, args.dtype, run,
                                        threads=args.torch_threads))
            if args.traced and "numpy" in args.solvers:
                traced = run_fit(path, "numpy", args.p, lam, args.max_iter, None, args.dtype, 0, traced=True)
                next(r for r in rows if r["m"] == traced["m"] and r["solver"] == "numpy").update(
                    traced_per_comparison=traced["traced_per_comparison"])
    finish(args.out, args, rows, summarise(rows), TABLE)


if __name__ == "__main__":
    main()
