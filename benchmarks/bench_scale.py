"""Scale of RobustOrdinalEmbedding with default settings: time, iterations, error and peak memory vs comparisons.

Data: ``n = m / 100`` objects drawn from ``N(0, I_p)`` (p = 10), ``m`` random triplets
labelled by the true distances, a fraction ``--flip`` (10%) of them reversed; 10^5
held-out triplets (clean) measure the error.  Data seed 0 (exploration used other seeds).
Every fit runs in a fresh process (``python bench_scale.py --child ...``), so its memory
is its own:

* ``fit_bytes``: the peak resident set during ``fit`` (the kernel's high-water mark,
  reset just before ``fit`` through ``/proc/self/clear_refs``) minus the resident set
  before it -- everything ``fit`` allocated: aggregation, graph, solver state, any backend;
* ``process_bytes``: the whole process's peak (data, Python, numba, torch included);
* ``cuda_peak_bytes`` (torch on CUDA): ``torch.cuda.max_memory_allocated`` during ``fit``.

Before the timed fit each child runs an untimed one of 3,000 triplets with the same settings
(:func:`warm_up`): numba compiles on a machine's first run and caches on disk, torch sets up CUDA
lazily; neither is part of a fit.  Times are wall seconds of ``fit`` (aggregation included) and the process's CPU seconds
(all threads; less sensitive to a shared machine's load), with ``/proc/loadavg`` before
and after; medians over ``--runs``.  With more than one size, the growth
exponent of time (and of time per iteration) in ``m`` is fitted by least squares on
log-log and printed.  ``--cblearn PYTHON`` adds cblearn's SOE (the non-robust peer;
``--cblearn-n-init`` restarts, 1 by default, its default being 10) in that
interpreter on the sizes up to ``--cblearn-max``.  Last, issue 16's targets (:func:`targets`): each
with the value measured and "met", "missed" or "not measured" (a size or solver it needs is not in the
runs); ``--table`` merges the JSON of several commands (the CPU sizes and a GPU machine's, say) into one
such report, kept as JSON with ``--out``.

One command per size, each writing its JSON (the lead can rerun any of them)::

    python benchmarks/bench_scale.py --m 1e5 --runs 3 --out benchmarks/out/scale_1e5.json
    python benchmarks/bench_scale.py --m 1e7 --runs 1 --out benchmarks/out/scale_1e7.json
    python benchmarks/bench_scale.py --table benchmarks/out/scale_*.json     # one table + exponent + targets
    python benchmarks/bench_scale.py --sweep 1e5 3e5 1e6 --cblearn /work/venv-cb/bin/python
    python benchmarks/bench_scale.py --m 1e8 --solvers torch --device cuda --runs 1   # on a GPU
    python benchmarks/bench_scale.py --quick               # smoke run (m = 10^5, one run)
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

from _results import finish, print_table, write_results
from _results import loadavg as _loadavg, reset_peak as _reset_peak, status_bytes as _status_bytes

HERE = Path(__file__).resolve().parent


def labelled_triplets(rng: np.random.RandomState, X: np.ndarray, k: int) -> np.ndarray:
    """``k`` random triplets ``(i, j, l)`` of distinct objects, each ordered so that ``j`` is closer to ``i``."""
    out, have = np.empty((k, 3), dtype=np.int32), 0
    while have < k:  # in blocks, so 10^8 triplets never need int64 temporaries of the full size
        t = rng.randint(len(X), size=(min(k - have, 10_000_000) * 101 // 100 + 10, 3))
        t = t[(t[:, 0] != t[:, 1]) & (t[:, 0] != t[:, 2]) & (t[:, 1] != t[:, 2])][: k - have]
        near = ((X[t[:, 0]] - X[t[:, 1]]) ** 2).sum(1) > ((X[t[:, 0]] - X[t[:, 2]]) ** 2).sum(1)
        t[near] = t[near][:, [0, 2, 1]]
        out[have: have + len(t)] = t
        have += len(t)
    return out


def make_data(n: int, m: int, p: int, flip: float, seed: int, path: Path, n_test: int = 100_000) -> None:
    """Random labelled triplets (``m`` train, ``n_test`` test) of a Gaussian embedding, saved to ``path``."""
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((n, p))
    train, test = labelled_triplets(rng, X, m), labelled_triplets(rng, X, n_test)
    flipped = rng.random_sample(len(train)) < flip
    train[flipped] = train[flipped][:, [0, 2, 1]]
    np.savez(path, train=train, test=test, n=n)


# -- the child process: one fit ---------------------------------------------------------------------------
def fit_roembed(data, spec):
    import warnings

    from roembed import Comparisons, RobustOrdinalEmbedding

    n = int(data["n"])
    train = Comparisons(data["train"], n_objects=n)
    test = Comparisons(data["test"], n_objects=n)
    params = dict(random_state=spec["seed"])
    cuda = False
    if spec["solver"] == "torch":
        import torch

        device = torch.device(spec["device"] or ("cuda" if torch.cuda.is_available() else "cpu"))
        params.update(solver="torch", device=str(device), dtype=spec["dtype"])
        torch.zeros(1, device=device)  # initialise the backend before the baseline
        cuda = device.type == "cuda"
    est = RobustOrdinalEmbedding(spec["p"], **params)
    warm_up(est, spec["p"])
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()

    def fit():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(train)

    def result():
        chosen = est.chosen_params_
        row = dict(n_iter=int(est.n_iter_), lam=float(est.lam_), test_error=1.0 - est.score(test),
                   outliers=int(est.outlier_mask_.sum()),
                   chosen=f"{chosen['loss']}/{chosen['weighting']}/refine={chosen['refine']}")
        if spec["solver"] == "torch":
            row["device"] = str(device)
        if cuda:
            row.update(cuda_peak_bytes=int(torch.cuda.max_memory_allocated()), device=str(device),
                       gpu=torch.cuda.get_device_name(device))
        return row
    return len(train), fit, result


def warm_up(est, p: int) -> None:
    """A default fit of 3,000 random triplets over 100 objects with ``est``'s settings, untimed: numba's
    compilation (cached on disk after a machine's first fit) and torch's lazy set-up are not the fit's."""
    import warnings

    from roembed import Comparisons

    rng = np.random.RandomState(12345)
    triplets = labelled_triplets(rng, rng.standard_normal((100, p)), 3000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(Comparisons(triplets, n_objects=100))


def fit_cblearn(data, spec):
    import warnings

    from cblearn.embedding import SOE

    n, train, test = int(data["n"]), data["train"].astype(np.int64), data["test"].astype(np.int64)
    est = SOE(spec["p"], n_init=spec["cblearn_n_init"], random_state=spec["seed"])

    def fit():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(train, n_objects=n)

    def result():
        X = est.embedding_
        near = ((X[test[:, 0]] - X[test[:, 1]]) ** 2).sum(1)
        far = ((X[test[:, 0]] - X[test[:, 2]]) ** 2).sum(1)
        return dict(n_iter=None, test_error=float(np.mean(near >= far)))
    return len(train), fit, result


def child(spec: dict) -> dict:
    import gc

    data = np.load(spec["path"])
    m, fit, result = (fit_cblearn if spec["solver"] == "cblearn" else fit_roembed)(data, spec)
    gc.collect()
    exact = _reset_peak()
    before, load_before = _status_bytes("VmRSS"), _loadavg()
    start, cpu_start = time.perf_counter(), time.process_time()
    fit()
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    peak = _status_bytes("VmHWM")
    row = dict(solver=spec["solver"], device="cpu" if spec["solver"] != "torch" else str(spec["device"]),
               dtype=spec["dtype"] if spec["solver"] == "torch" else "float64", n=int(data["n"]), m=m, p=spec["p"],
               seed=spec["seed"], seconds=seconds, cpu_seconds=cpu_seconds, fit_bytes=max(peak - before, 0), process_bytes=peak,
               peak_exact=exact, loadavg_before=load_before, loadavg_after=_loadavg(), cpus=os.cpu_count())
    row.update(result())
    if spec["solver"] != "cblearn":
        import numba

        row["threads"] = numba.get_num_threads()
    return row


# -- the parent: data, processes, table ---------------------------------------------------------------------
def run_child(python: str, spec: dict) -> dict:
    out = subprocess.run([python, str(Path(__file__).resolve()), "--child", json.dumps(spec)], check=True,
                         capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join(
                             [str(HERE.parent / "src"), os.environ.get("PYTHONPATH", "")])))
    row = json.loads(out.stdout.strip().splitlines()[-1])
    for key in ("fit_bytes", "process_bytes", "cuda_peak_bytes"):
        if row.get(key) is not None:
            row[key.replace("_bytes", "_per_comparison")] = row[key] / row["m"]
    row["seconds_per_iter"] = row["seconds"] / row["n_iter"] if row.get("n_iter") else None
    print(json.dumps(row), flush=True)
    return row


def summarise(rows):
    keys = sorted({(r["solver"], r["device"], r["dtype"], r["m"]) for r in rows}, key=lambda k: (k[3], k[0]))
    out = []
    for key in keys:
        sel = [r for r in rows if (r["solver"], r["device"], r["dtype"], r["m"]) == key]
        numeric = [f for f in sel[0] if isinstance(sel[0][f], (int, float)) and not isinstance(sel[0][f], bool)]
        med = {f: float(np.median([r[f] for r in sel if r.get(f) is not None])) for f in numeric
               if any(r.get(f) is not None for r in sel)}
        out.append(dict(solver=key[0], device=key[1], dtype=key[2], runs=len(sel), **{**med, "m": key[3]},
                        loadavg=sel[0].get("loadavg_before", ""),
                        chosen=" ".join(sorted({r["chosen"] for r in sel if r.get("chosen")}))))
    for s in out:  # ratio against the numpy fit of the same size
        ref = [r for r in out if r["solver"] == "numpy" and r["m"] == s["m"]]
        if ref:
            s["time_vs_roembed"] = s["seconds"] / ref[0]["seconds"]
    return out


def growth(summary) -> list[dict]:
    """Least-squares slope of log(time) and log(time per iteration) on log(m), per solver."""
    fits = []
    for solver in sorted({s["solver"] for s in summary}):
        sel = sorted((s for s in summary if s["solver"] == solver), key=lambda s: s["m"])
        if len(sel) < 2:
            continue
        logm = np.log([s["m"] for s in sel])
        row = dict(solver=solver, sizes=f"{sel[0]['m']:.0e}..{sel[-1]['m']:.0e}", points=len(sel),
                   time_exponent=float(np.polyfit(logm, np.log([s["seconds"] for s in sel]), 1)[0]))
        if all(s.get("cpu_seconds") for s in sel):
            row["cpu_time_exponent"] = float(np.polyfit(logm, np.log([s["cpu_seconds"] for s in sel]), 1)[0])
        if all(s.get("seconds_per_iter") for s in sel):
            row["per_iteration_exponent"] = float(np.polyfit(logm, np.log([s["seconds_per_iter"] for s in sel]), 1)[0])
        fits.append(row)
    return fits


TABLE = {"solver": "", "device": "", "dtype": "", "n": ".0f", "m": ".0f", "runs": ".0f", "seconds": ".2f",
         "cpu_seconds": ".1f",
         "time_vs_roembed": ".2f", "n_iter": ".0f", "seconds_per_iter": ".3f", "test_error": ".4f",
         "fit_per_comparison": ".0f", "process_per_comparison": ".0f", "cuda_peak_per_comparison": ".0f",
         "loadavg": "", "chosen": ""}
GROWTH = {"solver": "", "sizes": "", "points": ".0f", "time_exponent": ".3f", "cpu_time_exponent": ".3f",
          "per_iteration_exponent": ".3f"}


LIMITS = (  # issue 16's targets on one size: (target, solver, on a GPU, m, field, upper limit)
    ("CPU: 10^7 triplets under 150 s", "numpy", False, 10**7, "seconds", 150.0),
    ("CPU: 10^7 peak under 100 bytes per comparison", "numpy", False, 10**7, "fit_per_comparison", 100.0),
    ("GPU: 10^7 triplets under 10 s", "torch", True, 10**7, "seconds", 10.0),
    ("GPU: 10^8 triplets under 90 s", "torch", True, 10**8, "seconds", 90.0),
    ("GPU: 10^8 under 12 GB of device memory", "torch", True, 10**8, "cuda_peak_bytes", 12e9),
)
MAX_EXPONENT = 1.1  # CPU time from 10^5 to 10^7
MAX_ERROR_GAP = 0.002  # GPU held-out error against the CPU path's


def _on_gpu(row) -> bool:
    return row["solver"] == "torch" and str(row.get("device", "")).startswith("cuda")


def targets(summary) -> list[dict]:
    """Issue 16's targets against ``summary``: what was measured and whether it is met ("not measured" where
    the sizes or solvers it needs are not in the runs)."""
    out = []
    for name, solver, gpu, m, field, limit in LIMITS:
        row = next((s for s in summary if s["solver"] == solver and _on_gpu(s) == gpu and s["m"] == m
                    and s.get(field) is not None), None)
        out.append(dict(target=name, measured="-" if row is None else f"{row[field]:.4g}",
                        verdict="not measured" if row is None else "met" if row[field] < limit else "missed"))
    cpu = sorted((s for s in summary if s["solver"] == "numpy" and 10**5 <= s["m"] <= 10**7), key=lambda s: s["m"])
    exponent = None
    if cpu and cpu[0]["m"] == 10**5 and cpu[-1]["m"] == 10**7:
        exponent = float(np.polyfit(np.log([s["m"] for s in cpu]), np.log([s["seconds"] for s in cpu]), 1)[0])
    out.append(dict(target=f"CPU: time exponent at most {MAX_EXPONENT} from 10^5 to 10^7",
                    measured="-" if exponent is None else f"{exponent:.3f} ({len(cpu)} sizes)",
                    verdict="not measured" if exponent is None else "met" if exponent <= MAX_EXPONENT else "missed"))
    pairs = [(g, c) for g in summary if _on_gpu(g) for c in summary
             if c["solver"] == "numpy" and c["m"] == g["m"]]
    out.append(dict(target="GPU: faster than the CPU path from 10^5 up",
                    measured="-" if not pairs else ", ".join(f"{c['seconds'] / g['seconds']:.2f}x at {g['m']:.0e}"
                                                              for g, c in pairs),
                    verdict="not measured" if not pairs else
                    "met" if all(g["seconds"] < c["seconds"] for g, c in pairs) else "missed"))
    gaps = [abs(g["test_error"] - c["test_error"]) for g, c in pairs]
    out.append(dict(target=f"GPU: held-out error within {MAX_ERROR_GAP} of the CPU path's",
                    measured="-" if not gaps else f"{max(gaps):.4f} at most",
                    verdict="not measured" if not gaps else "met" if max(gaps) <= MAX_ERROR_GAP else "missed"))
    return out


TARGETS = {"target": "", "measured": "", "verdict": ""}


def table_from(paths, out: Path | None = None, args=None) -> None:
    """Merges the runs of several JSON outputs and prints one table with the growth exponents and the targets
    (written to ``out`` as JSON when given)."""
    rows = [r for p in paths for r in json.loads(Path(p).read_text())["runs"]]
    summary = summarise(rows)
    print_table(summary, TABLE)
    print()
    print_table(growth(summary), GROWTH)
    print()
    print_table(targets(summary), TARGETS)
    if out is not None:
        write_results(out, args, runs=rows, summary=summary, growth=growth(summary), targets=targets(summary),
                      merged=[str(p) for p in paths])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--m", type=float, default=1e6, help="training triplets (n = m / 100, at least 1,000)")
    parser.add_argument("--p", type=int, default=10)
    parser.add_argument("--sweep", type=float, nargs="*", default=None, help="several sizes m")
    parser.add_argument("--solvers", nargs="+", default=["numpy"], choices=["numpy", "torch"])
    parser.add_argument("--device", default=None, help="torch device (default: cuda if available, else cpu)")
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    parser.add_argument("--cblearn", default=None, metavar="PYTHON", help="an interpreter with cblearn")
    parser.add_argument("--cblearn-max", type=float, default=1e6, help="largest m given to cblearn")
    parser.add_argument("--cblearn-n-init", type=int, default=1, help="cblearn SOE restarts (its default is 10)")
    parser.add_argument("--flip", type=float, default=0.1, help="share of reversed training triplets")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="smoke run: m = 10^5, one run")
    parser.add_argument("--table", nargs="+", type=Path, default=None, help="print one table from these JSON files")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=None, help="JSON (default benchmarks/out/bench_scale.json; "
                        "with --table: only when given)")
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return
    if args.table:
        table_from(args.table, args.out, args)
        return
    if args.quick:
        args.m, args.runs = 1e5, 1
    sizes = [int(m) for m in (args.sweep or [args.m])]
    out = args.out or HERE / "out" / "bench_scale.json"
    commit = subprocess.run(["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for m in sizes:
            n = max(1_000, m // 100)
            path = Path(tmp) / f"data_{m}.npz"
            make_data(n, m, args.p, args.flip, seed=0, path=path)
            for run in range(args.runs):
                spec = dict(path=str(path), p=args.p, seed=run, device=args.device, dtype=args.dtype,
                            cblearn_n_init=args.cblearn_n_init)
                for solver in args.solvers:
                    rows.append(run_child(sys.executable, dict(spec, solver=solver)))
                if args.cblearn and m <= args.cblearn_max:
                    rows.append(run_child(args.cblearn, dict(spec, solver="cblearn")))
    summary = summarise(rows)
    finish(out, args, rows, summary, TABLE, growth=growth(summary), targets=targets(summary), commit=commit)
    if len(sizes) > 1:
        print()
        print_table(growth(summary), GROWTH)
    print()
    print_table(targets(summary), TARGETS)


if __name__ == "__main__":
    main()
