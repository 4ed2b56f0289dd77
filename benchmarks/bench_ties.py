"""Ties as half a vote each way, measured on the material-similarity data (Lagunas et al. 2019).

Its training queries carry vote counts; 1,395 of 22,801 are tied (e.g. 2 against 2).
roembed reads a "same / can't decide" answer as half a vote for each direction
(:func:`roembed.data.convert.split_ties`), which for tied vote counts is exactly keeping
both directions' votes.  The alternatives users apply instead: dropping the tied
queries, or keeping one majority vote per query (ties dropped).  For each way of
training, on the test split (3,000 queries, 262 tied):

* ``test_error``: the vote-weighted triplet error over all test responses;
* ``majority_error``: the error on the majority answer of the untied test queries;
* ``tie_gap``: over the tied test queries, the median of ``|d(r, a) - d(r, b)|`` divided
  by the median of the same over all test queries (below 1: the embedding places a
  tied query's two candidates at more similar distances than a typical query's).

Usage: ``python benchmarks/bench_ties.py --data ../shared/data/material-similarity-lagunas2019``
"""
from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np

from _results import finish

VARIANTS = ("half-each-way", "ties-dropped", "majority-only")


def load(folder: Path, split: str):
    raw = json.loads((folder / f"answers_processed_{split}.json").read_text())
    return np.asarray(raw["answers"], dtype=np.int64), np.asarray(raw["agreement"], dtype=np.float64)


def training_set(queries, votes, variant):
    from roembed.data import Comparisons

    tied = votes[:, 0] == votes[:, 1]
    if variant == "half-each-way":  # a tie answer = half a vote each way; tied counts = both directions kept
        return Comparisons(np.concatenate([queries, queries[:, [0, 2, 1]]]), n_objects=100,
                           weight=np.concatenate([votes[:, 0], votes[:, 1]]))
    keep = ~tied
    if variant == "ties-dropped":
        q = queries[keep]
        return Comparisons(np.concatenate([q, q[:, [0, 2, 1]]]), n_objects=100,
                           weight=np.concatenate([votes[keep, 0], votes[keep, 1]]))
    winner_first = votes[keep, 0] > votes[keep, 1]
    q = np.where(winner_first[:, None], queries[keep], queries[keep][:, [0, 2, 1]])
    return Comparisons(q, n_objects=100)


def evaluate(X, queries, votes):
    d = lambda a, b: np.sqrt(((X[a] - X[b]) ** 2).sum(1))  # noqa: E731
    da, db = d(queries[:, 0], queries[:, 1]), d(queries[:, 0], queries[:, 2])
    wrong = votes[:, 1] * (da < db) + votes[:, 0] * (da >= db)  # votes the embedding contradicts
    tied = votes[:, 0] == votes[:, 1]
    majority_a = votes[:, 0] > votes[:, 1]
    gap = np.abs(da - db)
    return dict(test_error=float(wrong.sum() / votes.sum()),
                majority_error=float(np.mean((da < db)[~tied] != majority_a[~tied])),
                tie_gap=float(np.median(gap[tied]) / np.median(gap)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/material-similarity-lagunas2019"))
    parser.add_argument("--estimators", nargs="+", default=["soe", "ste"])
    parser.add_argument("--dim", type=int, default=2)
    parser.add_argument("--seeds", type=int, nargs="+", default=[10, 11, 12, 13, 14])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out" / "bench_ties.json")
    args = parser.parse_args()
    from roembed.estimators.registry import estimator_class

    train_q, train_v = load(args.data, "train")
    test_q, test_v = load(args.data, "test")
    rows = []
    for name in args.estimators:
        for variant in VARIANTS:
            train = training_set(train_q, train_v, variant)
            for seed in args.seeds:
                started = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    est = estimator_class(name)(args.dim, random_state=seed).fit(train)
                rows.append(dict(estimator=name, variant=variant, seed=seed, seconds=time.perf_counter() - started,
                                 **evaluate(est.embedding_, test_q, test_v)))
    summary = []
    for name in args.estimators:
        for variant in VARIANTS:
            mine = [r for r in rows if r["estimator"] == name and r["variant"] == variant]
            summary.append(dict(estimator=name, variant=variant, runs=len(mine),
                                **{k: float(np.median([r[k] for r in mine]))
                                   for k in ("test_error", "majority_error", "tie_gap", "seconds")}))
    finish(args.out, args, rows, summary, {"estimator": "", "variant": "", "runs": "d", "test_error": ".4f",
                                            "majority_error": ".4f", "tie_gap": ".3f", "seconds": ".2f"})


if __name__ == "__main__":
    main()
