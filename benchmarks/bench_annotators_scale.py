"""Issue 17's time target as a crowd grows: the default fit with annotator ids against a plain t-STE fit.

On THINGS (``bench_annotators_real.py``) the default takes 12-22 times a plain roembed t-STE fit, which takes
about 0.03 s there.  This script asks what the ratio is when the data, not the fixed costs, dominate.

Data (seed 0 for each size; nothing here was tuned): ``n = m / 100`` objects drawn from ``N(0, I_p)``; ``m``
random triplets, each answered once by one of ``m / 50`` annotators (50 answers each on average).  An honest
annotator answers right with probability ``sigmoid(3 |d_ij - d_ik| / median |d_ij - d_ik|)`` (noisy near ties, as
real crowds are); a share ``--spam`` (10%) of the annotators answers at random.  The error is measured on 10^5
clean held-out triplets.

Per size, the median over ``--runs`` of the wall time of three fits after an untimed warm-up (numba compiles
once per machine and caches): ``TSTE(p)``, the default ``RobustOrdinalEmbedding(p)`` (annotator stage included:
the ids are there) and the same with ``annotators=None``; their ratio to t-STE; the held-out errors; what the
default chose; the bytes per answer each fit added to the peak resident set (the kernel's high-water mark,
reset before the fit).  The fits run in this process, where memory an earlier fit freed may be reused, so the
bytes are a lower bound; with ``--fresh-process`` each fit runs in a process of its own (after its own warm-up)
and the bytes are its own.  ``annotator stage`` is the default's time minus that of the fit without ids.
Run with the cblearn environment, cblearn 0.4's ``TSTE(p)`` (one row per answer) is timed beside them on the
sizes up to ``--cblearn-max`` (one run each; at 2·10^5 answers it took 5 s at p = 2 and 22 s at p = 10).

    python benchmarks/bench_annotators_scale.py --m 2e4 2e5 2e6 --p 2 10 --runs 3
    python benchmarks/bench_annotators_scale.py --m 2e5 2e6 --p 10 --runs 1 --fresh-process   # memory
"""
from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from _results import finish, reset_peak, status_bytes
from bench_scale import labelled_triplets
from roembed.metrics import agreement

HERE = Path(__file__).resolve().parent


def n_objects(m: int) -> int:
    return max(m // 100, 30)


def crowd(m: int, p: int, spam: float, seed: int, per_annotator: int = 50, n_test: int = 100_000):
    """``(train, test)``: ``m`` crowd answers with annotator ids, and clean held-out triplets (see above)."""
    from roembed import Comparisons

    rng = np.random.RandomState(seed)
    n = n_objects(m)
    X = rng.standard_normal((n, p))
    truth = labelled_triplets(rng, X, m)  # (i, j, k): j is the closer
    gap = np.abs(((X[truth[:, 0]] - X[truth[:, 1]]) ** 2).sum(1) - ((X[truth[:, 0]] - X[truth[:, 2]]) ** 2).sum(1))
    right = rng.random_sample(m) < 1.0 / (1.0 + np.exp(-3.0 * gap / np.median(gap)))
    annotator = rng.randint(max(m // per_annotator, 10), size=m)
    spammer = rng.random_sample(annotator.max() + 1) < spam
    right = np.where(spammer[annotator], rng.random_sample(m) < 0.5, right)
    answers = np.where(right[:, None], truth, truth[:, [0, 2, 1]])
    train = Comparisons(answers, n_objects=n, annotator=annotator)
    return train, Comparisons(labelled_triplets(rng, X, n_test), n_objects=n)


def fits(p: int, seed: int, cblearn: bool = False):
    from roembed import TSTE, RobustOrdinalEmbedding

    makers = {"tste": lambda: TSTE(p, random_state=seed),
              "default": lambda: RobustOrdinalEmbedding(p, random_state=seed),
              "no_ids": lambda: RobustOrdinalEmbedding(p, random_state=seed, annotators=None)}
    if cblearn:
        import cblearn.embedding

        makers["cblearn_tste"] = lambda: cblearn.embedding.TSTE(p, random_state=seed)
    return makers


def timed_fit(make, train):
    """``(seconds, bytes, estimator)``: the fit's wall time and what it added to the process's peak resident set
    (the kernel's high-water mark, reset before the fit; None where it cannot be reset)."""
    est = make()
    gc.collect()
    exact, before = reset_peak(), status_bytes("VmRSS")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        if est.__module__.startswith("cblearn"):
            est.fit(train.triplets, n_objects=train.n_objects)
        else:
            est.fit(train)
    seconds = time.perf_counter() - start
    return seconds, (max(status_bytes("VmHWM") - before, 0) if exact else None), est


def measure(name: str, m: int, p: int, spam: float, seed: int, data=None) -> dict:
    """One fit of ``name`` (a key of :func:`fits`) with estimator seed ``seed``: its seconds, held-out error,
    bytes per answer added to the peak resident set, and for the default what it chose."""
    train, test = data or crowd(m, p, spam, seed=0)
    seconds, peak, est = timed_fit(fits(p, seed, cblearn=name.startswith("cblearn"))[name], train)
    out = {f"{name}_s": seconds, f"{name}_error": 1.0 - agreement(est.embedding_, test)}  # cblearn's too
    if peak is not None:
        out[f"{name}_bytes_per_answer"] = peak / m
    if name == "default":
        chosen = est.chosen_params_
        out["chosen"] = f"{chosen['loss']}/{chosen['weighting']}/refine={chosen['refine']}"
        out["annotator_stage_ran"] = chosen["annotators"] is not None
    return out


def child(spec: dict) -> dict:
    """:func:`measure` in a fresh process, after an untimed warm-up of the same fit on 3,000 answers."""
    warm = crowd(3000, spec["p"], spec["spam"], seed=12345, n_test=10)[0]
    timed_fit(fits(spec["p"], 0, cblearn=spec["name"].startswith("cblearn"))[spec["name"]], warm)
    return measure(spec["name"], spec["m"], spec["p"], spec["spam"], spec["seed"])


def measure_in_child(name: str, m: int, p: int, spam: float, seed: int) -> dict:
    spec = json.dumps(dict(name=name, m=m, p=p, spam=spam, seed=seed))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE.parent / "src"), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", spec], check=True,
                         capture_output=True, text=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_size(m: int, p: int, spam: float, runs: int, cblearn: bool, fresh: bool) -> tuple[list[dict], dict]:
    data = None if fresh else crowd(m, p, spam, seed=0)
    n = n_objects(m)
    rows = []
    for run in range(runs):
        row = dict(m=m, n=n, p=p, run=run)
        for name in fits(p, seed=run, cblearn=cblearn and run == 0):
            row.update(measure_in_child(name, m, p, spam, run) if fresh else measure(name, m, p, spam, run, data))
        print(row, flush=True)
        rows.append(row)
    med = {k: float(np.median([r[k] for r in rows if k in r])) for k in rows[0]
           if k.endswith(("_s", "_error", "_bytes_per_answer"))}
    summary = dict(m=m, n=n, p=p, runs=runs, **med,
                   default_over_tste=float(np.median([r["default_s"] / r["tste_s"] for r in rows])),
                   default_over_cblearn_tste=(med["default_s"] / med["cblearn_tste_s"]
                                              if "cblearn_tste_s" in med else None),
                   no_ids_over_tste=float(np.median([r["no_ids_s"] / r["tste_s"] for r in rows])),
                   annotator_stage_s=med["default_s"] - med["no_ids_s"],
                   chosen=rows[0]["chosen"], stage_ran=sum(r["annotator_stage_ran"] for r in rows))
    return rows, summary


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--m", type=float, nargs="+", default=[2e4, 2e5])
    parser.add_argument("--p", type=int, nargs="+", default=[2, 10])
    parser.add_argument("--spam", type=float, default=0.1)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cblearn-max", type=float, default=2e5,
                        help="largest size on which cblearn's t-STE runs too, when cblearn is importable")
    parser.add_argument("--fresh-process", action="store_true",
                        help="each fit in a process of its own (its memory figure then owes nothing to earlier fits)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=HERE / "out/annotators_scale.json")
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return
    with_cblearn = importlib.util.find_spec("cblearn") is not None
    if not with_cblearn:
        print("cblearn not importable: roembed's fits only (run with the cblearn environment for its t-STE)")
    for p in [] if args.fresh_process else args.p:  # numba's compilation and the first thread pool are no fit's
        warm = crowd(3000, p, args.spam, seed=12345, n_test=10)[0]  # (each child warms up its own fit)
        for make in fits(p, seed=0).values():
            timed_fit(make, warm)
    rows, summary = [], []
    for p in args.p:
        for m in args.m:
            r, s = run_size(int(m), p, args.spam, args.runs, with_cblearn and m <= args.cblearn_max,
                            args.fresh_process)
            rows += r
            summary.append(s)
    finish(args.out, args, rows, summary, {
        "m": "", "n": "", "p": "", "tste_s": ".2f", "default_s": ".2f", "no_ids_s": ".2f", "annotator_stage_s": ".2f",
        "default_over_tste": ".1f", "no_ids_over_tste": ".1f", "cblearn_tste_s": ".2f",
        "default_over_cblearn_tste": ".2f", "tste_error": ".4f", "default_error": ".4f", "no_ids_error": ".4f",
        "cblearn_tste_error": ".4f", "tste_bytes_per_answer": ".0f", "default_bytes_per_answer": ".0f",
        "no_ids_bytes_per_answer": ".0f", "chosen": "", "stage_ran": ""})


if __name__ == "__main__":
    main()
