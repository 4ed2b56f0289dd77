"""roembed's factored competitors against cblearn 0.4, side by side in one process.

Settings (run ``r`` draws its data with seed ``1000 + r`` and seeds both libraries with ``r``):

``majority``  the paper's synthetic protocol (n = 100, p = 10), the 10,000 training
              triplets majority-voted (ties dropped): both libraries get the same rows.
``raw``       the same protocol with every vote (about 325,000 rows): cblearn gets one
              row per vote (it cannot take weights); roembed aggregates them into
              weighted comparisons (the same objective up to the 1/total normalisation).
``music``     aset400 artists, 5,000 train / 2,000 validation / rest test, p = 9
              (roembed.experiments.music.MusicProtocol); validation is not used here.

Held-out triplet error is computed by the same function for both embeddings; time
is the wall time of ``fit``.  Printed: medians over runs and the median of the
per-run time ratios (roembed / cblearn).  JSON: every run, plus the medians.

Run with the cblearn environment, e.g.::

    /work/.venv-cblearn/bin/python benchmarks/bench_competitors.py --runs 3
    /work/.venv-cblearn/bin/python benchmarks/bench_competitors.py --settings raw --runs 1
    /work/.venv-cblearn/bin/python benchmarks/bench_competitors.py --quick   # small smoke run
"""
from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np

from _results import finish

ESTIMATORS = ("SOE", "GNMDS", "STE", "TSTE", "CKL")
HERE = Path(__file__).resolve().parent
MUSIC = HERE.parent.parent / "shared" / "data" / "music-aset400-ste"
# Data of run r are drawn with seed DATA_SEED + r, estimators are seeded with r: with equal seeds
# both libraries' Gaussian starts would be (rotations of) the true synthetic embedding.
DATA_SEED = 1000


def triplet_error(X, test_quads, weight=None) -> float:
    from roembed.objective import quadruplet_distances

    d_near, d_far = quadruplet_distances(X, test_quads)
    wrong = ~(d_near < d_far)
    return float(np.average(wrong, weights=weight))


def synthetic_split(setting: str, seed: int, n_test: int | None):
    """(roembed training input, cblearn triplets, test quadruplets, n_objects, p)."""
    from roembed.data import Comparisons
    from roembed.estimators.two_stage import majority_vote
    from roembed.experiments.synthetic import make_synthetic

    data = make_synthetic(n_test=n_test, random_state=DATA_SEED + seed)
    if setting == "raw":
        train, triplets = data.train, data.train.triplets
    else:
        graph = data.train.aggregate()
        kept, _, _ = majority_vote(graph)
        triplets = graph.edges[kept][:, [0, 1, 3]]
        train = Comparisons(triplets, n_objects=graph.n_objects)
    return train, np.asarray(triplets), data.test.quadruplets, 100, 10


def music_split(seed: int):
    from roembed.experiments.music import MusicProtocol

    split = MusicProtocol(str(MUSIC)).draw("flip", 0.0, DATA_SEED + seed)
    return split.train, split.train.triplets, split.test.quadruplets, split.train.n_objects, 9


def roembed_estimator(name: str, p: int, seed: int, solver: str = "factored"):
    from roembed.estimators.registry import estimator_class

    return estimator_class(name.lower())(p, solver=solver, random_state=seed)


def cblearn_estimator(name: str, p: int, seed: int):
    import cblearn.embedding as cbe

    return getattr(cbe, name)(p, random_state=seed)


def timed_fit(estimator, X, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        estimator.fit(X, **kwargs)
        return time.perf_counter() - start


def run(settings, estimators, runs, n_test, gram, with_cblearn=True):
    rows = []
    for setting in settings:
        for r in range(runs):
            if setting == "music":
                train, triplets, test, n, p = music_split(r)
            else:
                train, triplets, test, n, p = synthetic_split(setting, r, n_test)
            for name in estimators:
                row = dict(setting=setting, run=r, estimator=name, n_train_rows=len(triplets))
                est = roembed_estimator(name, p, r)
                row["roembed_time"] = timed_fit(est, train)
                row["roembed_error"] = triplet_error(est.embedding_, test)
                row["roembed_iter"] = int(est.n_iter_)
                if gram:
                    est = roembed_estimator(name, p, r, solver="gram")
                    row["gram_time"] = timed_fit(est, train)
                    row["gram_error"] = triplet_error(est.embedding_, test)
                if with_cblearn:
                    cb = cblearn_estimator(name, p, r)
                    row["cblearn_time"] = timed_fit(cb, triplets, n_objects=n)
                    row["cblearn_error"] = triplet_error(cb.embedding_, test)
                    row["time_ratio"] = row["roembed_time"] / row["cblearn_time"]
                rows.append(row)
                print(json.dumps(row), flush=True)
    return rows


def summarise(rows):
    keys = sorted({(r["setting"], r["estimator"]) for r in rows}, key=lambda k: (k[0], ESTIMATORS.index(k[1])))
    summary = []
    for setting, name in keys:
        sel = [r for r in rows if r["setting"] == setting and r["estimator"] == name]
        med = {f: float(np.median([r[f] for r in sel])) for f in sel[0] if f not in ("setting", "run", "estimator")}
        if "cblearn_error" in med:
            med["diff"] = med["roembed_error"] - med["cblearn_error"]
        summary.append(dict(setting=setting, estimator=name, runs=len(sel), **med))
    return summary


TABLE = {"setting": "", "estimator": "", "runs": ".0f", "roembed_error": ".4f", "cblearn_error": ".4f", "diff": "+.4f",
         "roembed_time": ".2f", "cblearn_time": ".2f", "time_ratio": ".3f", "gram_error": ".4f", "gram_time": ".2f"}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", nargs="+", default=["majority", "music", "raw"],
                        choices=["majority", "raw", "music"])
    parser.add_argument("--estimators", nargs="+", default=list(ESTIMATORS), choices=ESTIMATORS)
    parser.add_argument("--runs", type=int, default=3, help="runs per setting (seeds 0..runs-1)")
    parser.add_argument("--n-test", type=int, default=None, help="synthetic test triplets (default: all)")
    parser.add_argument("--gram", action="store_true", help="also time roembed's '-p' gram solver")
    parser.add_argument("--no-cblearn", action="store_true", help="roembed only")
    parser.add_argument("--quick", action="store_true", help="smoke run: 1 run, 20,000 test triplets")
    parser.add_argument("--out", type=Path, default=HERE / "out" / "bench_competitors.json")
    args = parser.parse_args(argv)
    if args.quick:
        args.runs, args.n_test = 1, args.n_test or 20_000
    if "music" in args.settings and not MUSIC.is_dir():
        print(f"music data not found at {MUSIC}: skipping the music setting")
        args.settings = [s for s in args.settings if s != "music"]
    rows = run(args.settings, args.estimators, args.runs, args.n_test, args.gram, not args.no_cblearn)
    finish(args.out, args, rows, summarise(rows), TABLE)


if __name__ == "__main__":
    main()
