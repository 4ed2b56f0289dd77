"""Where a default robust fit spends its memory and time (the profiles behind docs/results.md, "Scale").

The data are ``bench_scale.py``'s (``m`` random triplets of ``n = m / 100`` Gaussian points in R^10, 10%
flipped), drawn with ``--seed`` (7: the exploration seed; the benchmark's own is 0).

``--memory``
    One default ``RobustOrdinalEmbedding(10)`` fit; a thread samples the resident set every 5 ms and
    keeps the peak per phase (the stack of the fit's stages and tuning steps in progress), printed in
    bytes per comparison over the resident set before the fit; with ``--tracemalloc`` also the exact peak
    of the traced (NumPy) allocations per phase (no allocator or library overhead: where the bytes are)
    and over the whole fit.
``--evaluation``
    One pass of the objective and its gradient over the graph (SOE loss, robust envelope, unit cap),
    split into its parts on one thread -- the compiled distance loop, the loss on each chunk, the
    compiled adjoint loop -- and whole on 1 and on 2 threads: nanoseconds per edge, medians of
    ``--repeats``.

Prints a table and writes JSON (``--out``)::

    python benchmarks/profile_fit.py --memory --m 1e6
    python benchmarks/profile_fit.py --evaluation --m 1e6
    python benchmarks/profile_fit.py --evaluation --m 1e7
"""
from __future__ import annotations

import argparse
import functools
import sys
import tempfile
import threading
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _results import finish, loadavg, status_bytes  # noqa: E402
from bench_scale import make_data  # noqa: E402

PHASES = ("_annotator_stage", "_restarts", "_choose", "_store_state")  # RobustOrdinalEmbedding methods
STAGES = ("holdout_mask", "stage_plain", "stage_penalty", "stage_robust", "stage_refine", "stage_shifts")


def load(m: int, seed: int):
    from roembed import Comparisons

    n = m // 100
    path = Path(tempfile.mkdtemp()) / f"scale_{m}_{seed}.npz"
    make_data(n, m, 10, 0.1, seed, path)
    return Comparisons(np.load(path)["train"], n_objects=n)


def memory(comparisons, with_tracemalloc: bool) -> list[dict]:
    """Peak resident set (and traced allocations) per phase of one default fit."""
    import roembed.estimators.robust as robust
    from roembed import RobustOrdinalEmbedding

    stack, peaks, traced, done = ["fit"], {}, {}, threading.Event()

    def sample():
        while not done.is_set():
            key = "/".join(stack)
            peaks[key] = max(peaks.get(key, 0), status_bytes("VmRSS"))
            time.sleep(0.005)

    def boundary():
        """The traced peak since the last phase boundary belongs to the phase in progress (exact, not sampled)."""
        if tracemalloc.is_tracing():
            key = "/".join(stack)
            traced[key] = max(traced.get(key, 0), tracemalloc.get_traced_memory()[1])
            tracemalloc.reset_peak()

    def labelled(f, name):
        @functools.wraps(f)
        def g(*args, **kwargs):
            boundary()
            stack.append(name)
            try:
                return f(*args, **kwargs)
            finally:
                boundary()
                stack.pop()
        return g

    saved = {name: getattr(robust, name) for name in STAGES}
    saved_methods = {name: getattr(RobustOrdinalEmbedding, name) for name in PHASES}
    for name in STAGES:
        setattr(robust, name, labelled(saved[name], name))
    robust.STAGES = tuple(getattr(robust, name) for name in STAGES[1:])
    defaults = robust.fit_robust.__defaults__
    robust.fit_robust.__defaults__ = (robust.STAGES,)  # the final fit's stages, labelled too
    for name in PHASES:
        setattr(RobustOrdinalEmbedding, name, labelled(saved_methods[name], name))
    m = len(comparisons)
    base = status_bytes("VmRSS")
    threading.Thread(target=sample, daemon=True).start()
    if with_tracemalloc:
        tracemalloc.start()
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            RobustOrdinalEmbedding(10, random_state=0).fit(comparisons)
    finally:
        boundary()
        done.set()
        for name, f in saved.items():
            setattr(robust, name, f)
        robust.STAGES = tuple(saved[name] for name in STAGES[1:])
        robust.fit_robust.__defaults__ = defaults
        for name, f in saved_methods.items():
            setattr(RobustOrdinalEmbedding, name, f)
    seconds = time.perf_counter() - start
    rows = [dict(phase=k, bytes_per_comparison=(v - base) / m, **({"traced_bytes_per_comparison": traced[k] / m}
                                                                   if k in traced else {}))
            for k, v in peaks.items()]
    rows.sort(key=lambda r: -r["bytes_per_comparison"])
    if with_tracemalloc:
        current, peak = tracemalloc.get_traced_memory()
        peak = max([peak, *traced.values()])  # the phases reset the peak at their boundaries
        tracemalloc.stop()
        rows.append(dict(phase="tracemalloc peak (NumPy allocations)", bytes_per_comparison=peak / m))
        rows.append(dict(phase="tracemalloc retained after the fit", bytes_per_comparison=current / m))
    for r in rows:
        r.update(m=m, seconds=seconds)
    return rows


def evaluation(comparisons, repeats: int) -> list[dict]:
    """Nanoseconds per edge of one objective-and-gradient pass, by part (1 thread) and whole; the parts with
    and without prefetching rows (``ahead`` = ``PREFETCH_AHEAD`` and 0, interleaved), the whole pass as the
    fit runs it (:func:`roembed._kernels.prefetch_ahead`)."""
    from roembed._kernels import PREFETCH_AHEAD, edge_distance_adjoint, edge_sq_distances, prefetch_ahead
    from roembed.estimators.robust import _loss_of
    from roembed.estimators.robust_fit import RobustProblem
    from roembed.objective import CHUNK

    graph = comparisons.aggregate()
    problem = RobustProblem.build(graph, _loss_of("soe", 10), "net")
    objective = problem.robust(1.0)
    objects = objective._objects(problem.distances)
    X = np.random.default_rng(0).standard_normal((graph.n_objects, 10))
    E = len(objects)
    d_near, d_far, grad = np.empty(CHUNK), np.empty(CHUNK), np.zeros_like(X)
    parts = {(name, ahead): [] for ahead in (0, PREFETCH_AHEAD) for name in ("distances", "loss", "adjoint")}
    for _ in range(repeats):
        for ahead in (0, PREFETCH_AHEAD):
            spent = dict.fromkeys(("distances", "loss", "adjoint"), 0.0)
            for start in range(0, E, CHUNK):
                k = min(CHUNK, E - start)
                t0 = time.perf_counter()
                edge_sq_distances(X, objects, start, d_near[:k], d_far[:k], ahead)
                t1 = time.perf_counter()
                _, g_near, g_far, _ = objective.terms(d_near[:k], d_far[:k], slice(start, start + k))
                t2 = time.perf_counter()
                edge_distance_adjoint(X, objects, start, g_near, g_far, grad, ahead)
                spent["distances"] += t1 - t0
                spent["loss"] += t2 - t1
                spent["adjoint"] += time.perf_counter() - t2
            for name, seconds in spent.items():
                parts[name, ahead].append(seconds)
    rows = [dict(part=f"{name} (1 thread)", ahead=ahead, ns_per_edge=float(np.median(v)) / E * 1e9)
            for (name, ahead), v in parts.items()]
    for threads in (1, 2):
        objective.embedding_value_and_grad(X, problem.distances, threads=threads)  # warm
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            objective.embedding_value_and_grad(X, problem.distances, threads=threads)
            times.append(time.perf_counter() - t)
        rows.append(dict(part=f"whole pass ({threads} threads)", ahead=prefetch_ahead(X),
                         ns_per_edge=float(np.median(times)) / E * 1e9))
    for r in rows:
        r.update(edges=E, n=graph.n_objects)
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--memory", action="store_true")
    what.add_argument("--evaluation", action="store_true")
    parser.add_argument("--m", type=float, default=1e6)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tracemalloc", action="store_true", help="with --memory: also traced allocations")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    comparisons = load(int(args.m), args.seed)
    before = loadavg()
    if args.memory:
        rows = memory(comparisons, args.tracemalloc)
        columns = {"phase": "", "bytes_per_comparison": ".1f"}
        if args.tracemalloc:
            columns["traced_bytes_per_comparison"] = ".1f"
    else:
        rows = evaluation(comparisons, args.repeats)
        columns = {"part": "", "ahead": ".0f", "ns_per_edge": ".0f"}
    kind = "memory" if args.memory else "evaluation"
    out = args.out or HERE / "out" / f"profile_{kind}_{int(args.m)}.json"
    finish(out, args, rows, rows, columns, loadavg=[before, loadavg()])


if __name__ == "__main__":
    main()
