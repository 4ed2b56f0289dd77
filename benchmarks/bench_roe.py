"""ROE (FISTA, 300 iterations) on the paper's synthetic protocol, with cblearn as the peer in the same run.

Protocol (``roembed.experiments.make_synthetic``): n = 100, p = 10, 10,000 training
triplets answered 15..50 times each (~325,000 votes, aggregated into weighted edges),
optionally contaminated (``--settings clean vote unanimous``, rate ``--rate``).
Run ``r`` draws its data with seed ``1000 + r`` and seeds the estimators with ``r``.

Per run: ROE is fitted on all votes with ``max_iter=300, tol=0`` (exactly 300 FISTA
iterations; ``--rank-methods reduce`` adds the paper's rank-reduction route, which
is far slower), timed over the whole ``fit`` (aggregating the votes included, also
reported alone, and the fit's CPU time, a proxy for its wall time on an idle machine since
small fits run single-threaded); the held-out error is measured on the test triplets and the flagged
edges (``gamma != 0``) are scored against the edges that contradict the true points.
The peer (cblearn 0.4, ``--peers``, default GNMDS, its fastest) is fitted in the same
process on the majority-voted triplets (it cannot take weights).  Printed: medians
over runs and the median per-run time ratio ROE / peer.

Run with the cblearn environment, e.g.::

    /work/.venv-cblearn/bin/python benchmarks/bench_roe.py                 # 5 runs, clean
    /work/.venv-cblearn/bin/python benchmarks/bench_roe.py --settings clean vote unanimous
    python benchmarks/bench_roe.py --quick --no-peer                       # smoke run
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

from _results import finish

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_competitors import DATA_SEED, cblearn_estimator, timed_fit, triplet_error  # noqa: E402


def outlier_scores(estimator, X_true) -> dict:
    """Precision / recall of the flagged edges against the edges the true points contradict
    (:func:`roembed.metrics.edge_outlier_scores`: NaN precision when nothing is flagged)."""
    from roembed.metrics import edge_outlier_scores

    scores = edge_outlier_scores(estimator, X_true)
    return dict(flagged_share=float(estimator.outlier_mask_.mean()), outlier_precision=scores["precision"],
                outlier_recall=scores["recall"])


def run(settings, rate, runs, n_test, rank_methods, weighting, peers):
    from roembed.estimators.roe import ROE
    from roembed.estimators.two_stage import majority_vote
    from roembed.experiments.synthetic import make_synthetic

    rows = []
    for setting in settings:
        for r in range(runs):
            data = make_synthetic(rate=0.0 if setting == "clean" else rate, model="vote" if setting == "clean"
                                  else setting, n_test=n_test, random_state=DATA_SEED + r)
            test = data.test.quadruplets
            start = time.perf_counter()
            graph = data.train.aggregate()
            aggregate_s = time.perf_counter() - start
            for method in rank_methods:
                est = ROE(10, max_iter=300, tol=0.0, rank_method=method, weighting=weighting, random_state=r)
                row = dict(setting=setting, run=r, estimator=f"ROE-{method}", n_votes=len(data.train),
                           n_edges=len(graph), aggregate_s=aggregate_s)
                cpu = time.process_time()
                row["time"] = timed_fit(est, data.train)
                row["cpu_s"] = time.process_time() - cpu  # ~ unloaded wall time: small fits run BLAS on one thread
                row["error"] = triplet_error(est.embedding_, test)
                row["validation_error"] = triplet_error(est.embedding_, data.validation.quadruplets)
                row["n_iter"] = int(est.n_iter_)
                row.update(outlier_scores(est, data.X_true))
                row.update({f"rank_{k}": v for k, v in est.rank_reduction_.items() if k != "method"})
                rows.append(row)
                print(json.dumps(row), flush=True)
            if peers:
                kept, _, _ = majority_vote(graph)
                triplets = graph.edges[kept][:, [0, 1, 3]]
                for name in peers:
                    cb = cblearn_estimator(name, 10, r)
                    row = dict(setting=setting, run=r, estimator=f"cblearn-{name}", n_votes=len(triplets))
                    row["time"] = timed_fit(cb, triplets, n_objects=graph.n_objects)
                    row["error"] = triplet_error(cb.embedding_, test)
                    for roe in (x for x in rows if x["setting"] == setting and x["run"] == r
                                and x["estimator"].startswith("ROE")):
                        roe[f"time_ratio_vs_{name}"] = roe["time"] / row["time"]
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    return rows


def summarise(rows):
    """Median of every numeric field per (setting, estimator), with the number of runs."""
    import pandas as pd

    frame = pd.DataFrame(rows).drop(columns="run")
    groups = frame.groupby(["setting", "estimator"], sort=False)
    medians = groups.median(numeric_only=True).assign(runs=groups.size())
    return [dict(setting=setting, estimator=name, **{k: float(v) for k, v in row.items() if pd.notna(v)})
            for (setting, name), row in medians.iterrows()]


TABLE = {"setting": "", "estimator": "", "runs": ".0f", "error": ".4f", "validation_error": ".4f", "time": ".3f",
         "cpu_s": ".3f", "aggregate_s": ".3f", "flagged_share": ".4f", "outlier_precision": ".4f",
         "outlier_recall": ".4f", "rank_n_steps": ".1f", "rank_truncated_share": ".4f"}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", nargs="+", default=["clean"], choices=["clean", "vote", "majority", "unanimous"])
    parser.add_argument("--rate", type=float, default=0.25, help="contamination rate of the non-clean settings")
    parser.add_argument("--runs", type=int, default=5, help="runs per setting (median reported)")
    parser.add_argument("--n-test", type=int, default=None, help="test triplets (default: all ~465,000)")
    parser.add_argument("--rank-methods", nargs="+", default=["truncate"], choices=["truncate", "reduce"])
    parser.add_argument("--weighting", default="paper", choices=["paper", "vote"])
    parser.add_argument("--peers", nargs="*", default=["GNMDS"], help="cblearn estimators fitted alongside")
    parser.add_argument("--no-peer", action="store_true", help="ROE only (no cblearn)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 1 run, 20,000 test triplets")
    parser.add_argument("--out", type=Path, default=HERE / "out" / "bench_roe.json")
    args = parser.parse_args(argv)
    if args.quick:
        args.runs, args.n_test = 1, args.n_test or 20_000
    peers = [] if args.no_peer else args.peers
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = run(args.settings, args.rate, args.runs, args.n_test, args.rank_methods, args.weighting, peers)
    summary = summarise(rows)
    ratios = dict.fromkeys(k for row in summary for k in row if k.startswith("time_ratio_vs_"))
    finish(args.out, args, rows, summary, {**TABLE, **{k: ".2f" for k in ratios}})


if __name__ == "__main__":
    main()
