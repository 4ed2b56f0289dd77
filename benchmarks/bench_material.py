"""The default on a real crowd set with a test file of its own, against cblearn 0.4's defaults, side by side.

The material-similarity data (Lagunas et al. 2019): 22,801 training queries with vote counts
(92,892 votes, 1,395 queries tied) and 3,000 test queries (11,800 votes), 100 materials.  What
``roembed fit answers_processed_train.json --test answers_processed_test.json`` reports, as Python:
the default ``RobustOrdinalEmbedding(p)`` on the vote counts, scored by the vote-weighted triplet
error on the test file.  cblearn cannot take weights, so it gets every vote as a row ("votes") and,
separately, the majority direction of each untied query ("majority"); SOE, t-STE and CKL with their
defaults.  Per seed each fit is timed once; the table gives medians over the seeds.

Run with the cblearn environment::

    python benchmarks/bench_material.py --data ../shared/data/material-similarity-lagunas2019 --seeds 5
"""
from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _results import finish  # noqa: E402
from bench_competitors import cblearn_estimator, timed_fit  # noqa: E402

PEERS = ("SOE", "TSTE", "CKL")


def training_rows(train) -> dict:
    """cblearn's two inputs: every vote a row, and the majority direction of each untied query."""
    graph = train.aggregate()
    net = graph.votes - graph.opposing_votes
    return {"votes": np.repeat(train.triplets, train.weight.astype(np.int64), axis=0),
            "majority": graph.edges[net > 0][:, [0, 1, 3]]}


def run_seed(train, test, rows: dict, p: int, seed: int, peers) -> list[dict]:
    from roembed import RobustOrdinalEmbedding
    from roembed.metrics import triplet_error

    est = RobustOrdinalEmbedding(p, random_state=seed)
    seconds = timed_fit(est, train)
    chosen = est.chosen_params_
    out = [dict(seed=seed, method="roembed default", input="vote counts", error=triplet_error(est.embedding_, test).value,
                seconds=seconds, chosen=f"{chosen['loss']}/{chosen['weighting']}/{chosen['refine']}")]
    for name in peers:
        for kind, triplets in rows.items():
            cb = cblearn_estimator(name, p, seed)
            seconds = timed_fit(cb, triplets, n_objects=train.n_objects)
            out.append(dict(seed=seed, method=f"cblearn {name}", input=kind,
                            error=triplet_error(cb.embedding_, test).value, seconds=seconds))
    return out


def summarise(rows: list[dict]) -> list[dict]:
    keys = list(dict.fromkeys((r["method"], r["input"]) for r in rows))
    summary = []
    for method, kind in keys:
        sel = [r for r in rows if (r["method"], r["input"]) == (method, kind)]
        errors = [r["error"] for r in sel]
        summary.append(dict(method=method, input=kind, runs=len(sel), error=float(np.median(errors)),
                            low=min(errors), high=max(errors), seconds=float(np.median([r["seconds"] for r in sel]))))
    peers = [s for s in summary if s["method"].startswith("cblearn")]
    if peers:
        best = min(peers, key=lambda s: s["error"])
        for s in summary:
            s["rel_best_cblearn"] = s["error"] / best["error"] - 1
            s["time_ratio"] = s["seconds"] / best["seconds"]
    return summary


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/material-similarity-lagunas2019"))
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--dim", type=int, default=2)
    parser.add_argument("--no-cblearn", action="store_true")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/out/material.json"))
    args = parser.parse_args(argv)
    from roembed.data.io import read_comparisons

    train = read_comparisons(args.data / "answers_processed_train.json")
    test = read_comparisons(args.data / "answers_processed_test.json")
    peers = () if args.no_cblearn else PEERS
    rows, inputs = [], training_rows(train)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(args.seeds):
            rows += run_seed(train, test, inputs, args.dim, seed, peers)
            print(f"seed {seed}: " + ", ".join(f"{r['method']} ({r['input']}) {r['error']:.4f}" for r in rows[-1 - 2 * len(peers):]),
                  flush=True)
    finish(args.out, args, rows, summarise(rows), {"method": "", "input": "", "runs": "d", "error": ".4f", "low": ".4f",
                                                   "high": ".4f", "seconds": ".2f", "rel_best_cblearn": "+.1%",
                                                   "time_ratio": ".2f"})


if __name__ == "__main__":
    main()
