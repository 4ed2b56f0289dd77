"""Annotator reliability: finding planted spammers, and what down-weighting them buys.

Synthetic (paper protocol, ``model="spammers"``, rate 0.25): per trial, the robust
estimator (lam="auto") is fitted to the raw votes; its ``annotators_`` table's
``suspect`` flags are compared with the planted spammers (precision / recall),
and the test error is compared for: the plain robust fit, the fit after
annotator reweighting (stopping rule on the clean validation set), and an oracle
fit without the spammers' votes.  Run with ``--annotators 100 1000`` to see
the case of few votes per annotator (~3,250 vs ~325).

THINGS (``--things PATH``): what the table finds on real crowd data, and
whether it is a stable trait of the annotator: the data's queries are split in
two halves, each half is fitted separately, and the agreement of annotators
present in both halves is correlated across halves.

Prints a table and writes JSON (``--out``, default benchmarks/out/annotators.json).
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from roembed.annotators import annotator_reliability, fit_with_annotator_reweighting
from roembed.estimators.robust import RobustOrdinalEmbedding
from roembed.experiments import make_synthetic
from roembed.metrics import set_precision_recall

REPO = Path(__file__).resolve().parents[1]


def synthetic_trial(seed: int, n_annotators: int, dim: int, max_rounds: int) -> dict:
    data = make_synthetic(rate=0.25, model="spammers", n_annotators=n_annotators, random_state=seed)
    estimator = RobustOrdinalEmbedding(dim, random_state=seed)
    t0 = time.perf_counter()
    fitted = estimator.fit(data.train)
    fit_s = time.perf_counter() - t0
    table = fitted.annotators_
    planted = set(data.spammers.tolist())
    found = set(table.loc[table["suspect"], "annotator"].tolist())
    top = set(table["annotator"].head(len(planted)).tolist())
    found_scores = set_precision_recall(found, planted)
    t0 = time.perf_counter()
    rw = fit_with_annotator_reweighting(estimator, data.train, max_rounds=max_rounds, validation=data.validation,
                                        log=lambda s: None)
    rw_s = time.perf_counter() - t0
    honest = ~np.isin(data.train.annotator, data.spammers)
    oracle = RobustOrdinalEmbedding(dim, random_state=seed).fit(data.train[honest])
    weights = rw.annotator_weight
    return {
        "seed": seed, "n_annotators": n_annotators, "n_spammers": len(planted),
        "votes_per_annotator": len(data.train) / n_annotators,
        "spammer_precision": found_scores["precision"],
        "spammer_recall": found_scores["recall"],
        "precision_at_k": len(top & planted) / len(planted),
        "test_error_robust": 1 - fitted.score(data.test),
        "test_error_reweighted": 1 - rw.estimator.score(data.test),
        "test_error_oracle": 1 - oracle.score(data.test),
        "rounds_run": rw.n_rounds, "round_kept": int(rw.history["validation_score"].idxmax()),
        "spammer_weight_mean": float(weights[weights.index.isin(planted)].mean()),
        "honest_weight_min": float(weights[~weights.index.isin(planted)].min()),
        "fit_s": fit_s, "reweighting_s": rw_s,
    }


def query_halves(comparisons, seed: int):
    """Boolean mask: which responses belong to half A, by object triple (both triplets
    of one odd-one-out answer stay together)."""
    q = comparisons.quadruplets
    key = np.sort(np.column_stack([q[:, 0], q[:, 1], q[:, 3]]), axis=1)
    _, query = np.unique(key, axis=0, return_inverse=True)
    rng = np.random.default_rng(seed)
    in_a = rng.random(query.max() + 1) < 0.5
    return in_a[query.reshape(-1)]


def things(path: Path, dim: int, seed: int) -> dict:
    from roembed.data.datasets import load_things

    data = load_things(path)
    t0 = time.perf_counter()
    fitted = RobustOrdinalEmbedding(dim, random_state=seed).fit(data)
    fit_s = time.perf_counter() - t0
    table = fitted.annotators_
    halves = query_halves(data, seed)
    scores = []
    for part in (halves, ~halves):
        est = RobustOrdinalEmbedding(dim, random_state=seed).fit(data[part])
        scores.append(annotator_reliability(est).set_index("annotator"))
    both = pd.merge(scores[0], scores[1], left_index=True, right_index=True, suffixes=("_a", "_b"))
    both = both[(both["n_votes_a"] >= 20) & (both["n_votes_b"] >= 20)]
    suspects = table[table["suspect"]]
    return {
        "n_responses": len(data), "n_objects": data.n_objects, "n_annotators": len(table),
        "train_error": 1 - fitted.score(data), "n_flagged_edges": int(fitted.outlier_mask_.sum()),
        "n_edges": len(fitted.outlier_mask_), "lam_used": fitted.lam_,
        "agreement_median": float(table["agreement"].median()),
        "agreement_quartiles": table["agreement"].quantile([0.1, 0.25, 0.75, 0.9]).round(3).tolist(),
        "n_suspect": len(suspects), "suspect_votes": int(suspects["n_votes"].sum()),
        "suspects": suspects[["annotator", "n_votes", "agreement", "agreement_low", "agreement_high",
                              "flagged_share"]].round(3).to_dict(orient="records"),
        "split_half_annotators": len(both),
        "split_half_agreement_correlation": float(np.corrcoef(both["agreement_a"], both["agreement_b"])[0, 1]),
        "split_half_flagged_share_correlation": float(np.corrcoef(both["flagged_share_a"],
                                                                  both["flagged_share_b"])[0, 1]),
        "fit_s": fit_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--annotators", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--dim", type=int, default=10)
    parser.add_argument("--max-rounds", type=int, default=3)
    parser.add_argument("--things", type=Path, default=REPO.parent / "shared/data/things-odd-one-out-repeated")
    parser.add_argument("--things-dim", type=int, default=10)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks/out/annotators.json")
    args = parser.parse_args()

    rows = [synthetic_trial(1000 + t, a, args.dim, args.max_rounds) for a in args.annotators for t in range(args.trials)]
    frame = pd.DataFrame(rows)
    cols = ["spammer_precision", "spammer_recall", "precision_at_k", "test_error_robust", "test_error_reweighted",
            "test_error_oracle", "rounds_run", "round_kept", "spammer_weight_mean", "honest_weight_min", "fit_s",
            "reweighting_s"]
    summary = frame.groupby("n_annotators")[cols].median()
    print(f"spammers model, rate 0.25, {args.trials} trials, medians (timings taken on a loaded machine):")
    print(summary.T.round(4).to_string())
    result = {"synthetic": {"trials": rows, "median_by_n_annotators": summary.reset_index().to_dict(orient="records")}}
    if args.things.is_dir():
        result["things"] = things(args.things, args.things_dim, seed=0)
        print("THINGS odd-one-out:", json.dumps({k: v for k, v in result["things"].items() if k != "suspects"},
                                                indent=1))
        print("suspect annotators:", pd.DataFrame(result["things"]["suspects"]).to_string(index=False))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    from roembed._io import atomic_write

    with atomic_write(args.out) as fh:
        json.dump(result, fh, indent=1, default=float)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
