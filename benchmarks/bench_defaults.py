"""What a user gets with no tuning: ``RobustOrdinalEmbedding(p)`` against cblearn 0.4's defaults, side by side.

Settings (trial ``r`` draws its data with seed ``1000 + r``, as ``bench_robust``; estimators are seeded with ``r``;
the self-tuning rules were explored on seeds 5001-5004, never on these):

``clean``, ``vote``, ``majority``, ``unanimous``, ``spammers``
    the paper's synthetic protocol (n = 100, p = 10, 10,000 training triplets answered 15..50 times),
    contamination ``--rate`` (default 0.25) under each model of :mod:`roembed.experiments.synthetic`.
``music``, ``music-flip``
    aset400 artists (5,000 / 2,000 / rest, p = 9), clean and with ``--rate`` of the training triplets
    reversed (single answers, sparse: 5,000 triplets for 3,600 coordinates).  ``music-flip`` is not in the
    default ``--settings`` (issue 12 names clean music); the hand grid reports it.

roembed: the **default** :class:`~roembed.RobustOrdinalEmbedding` on every vote (its own validation split of
the training queries; the protocol's clean validation set is not used).  The synthetic votes carry annotator
ids, so the default runs its annotator stage; ``no_annotators`` is the same default with ``annotators=None``.
cblearn: SOE, GNMDS, STE, t-STE and CKL with their defaults on the majority-voted triplets (ties dropped):
it cannot take weights and its fits on raw votes take minutes on this machine
(``/work/shared/peer-measurements.md``: raw votes were better for it only for clean SOE, by 0.002).  Printed per setting: median test errors, ``rel`` = roembed / best cblearn
estimator - 1 (of the medians; negative is better), outlier precision / recall against the planted truth,
% of edges flagged, and the time ratio of the default fit to cblearn's single SOE fit in the same trial.

``--lowdim``: the low-dimension reliability check instead -- n = 30, p = 1 and 2, 20% of single answers
flipped (``vote`` model), 1,000 training triplets, 20 seeds (data seed 3000 + r).  p = 1: Spearman
correlation of the embedding with the truth (target >= 0.95); p = 2: Procrustes disparity against the best
of ten single-start SOE fits of roembed (target: within 10%; ``ok``), the best chosen by the truth, and against
the one of them with the lowest SOE objective, the start SOE with ten restarts keeps
(``ok_vs_lowest_objective``).  Beside the disparity, what the maps predict: the median held-out triplet error
of the default and of that lowest-objective start (``roembed_error``, ``soe_error``), the seeds where the
default's is not above it, and the median relative difference over the seeds that miss the disparity target
(``missed_error_vs_soe``; negative: the default predicts better there).  cblearn's SOE (10 restarts) alongside, scored by the same criteria
(``cblearn_SOE_ok*``).

``--beyond``: the same comparison off the paper's protocol (ten settings of ``BEYOND``: other rates, single
answers, fewer queries, p = 1, 2, 3, 5; data seed 7000 + trial, test subsets of 20,000 triplets), each default
fit against cblearn's five on the majority-voted triplets. Beside the medians: the queries per free coordinate
and in how many trials the ridge check ran and kept the ridge (``chosen_params_["ridge_check_gain"]``).

Run with the cblearn environment::

    PYTHONPATH=src /work/venv-cb/bin/python benchmarks/bench_defaults.py --trials 10
    PYTHONPATH=src /work/venv-cb/bin/python benchmarks/bench_defaults.py --lowdim
    PYTHONPATH=src /work/venv-cb/bin/python benchmarks/bench_defaults.py --beyond --trials 10
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _results import finish  # noqa: E402
from bench_competitors import MUSIC, cblearn_estimator, timed_fit, triplet_error  # noqa: E402
from bench_robust import PEERS, draw, majority_triplets  # noqa: E402

SETTINGS = ("clean", "vote", "majority", "unanimous", "spammers", "music", "music-flip")
DEFAULT_SETTINGS = SETTINGS[:-1]
LOWDIM_SEED = 3000
BEYOND_SEED = 7000
BEYOND = {  # make_synthetic arguments (n_objects, dim, n_train, votes, model, rate); the protocol is 100, 10, 10^4
    "vote 10%": dict(n_objects=100, dim=10, n_train=10_000, votes=(15, 50), model="vote", rate=0.1),
    "unanimous 10%": dict(n_objects=100, dim=10, n_train=10_000, votes=(15, 50), model="unanimous", rate=0.1),
    "majority 40%": dict(n_objects=100, dim=10, n_train=10_000, votes=(15, 50), model="majority", rate=0.4),
    "spammers 40%": dict(n_objects=100, dim=10, n_train=10_000, votes=(15, 50), model="spammers", rate=0.4),
    "single answers, 25% flipped": dict(n_objects=100, dim=10, n_train=10_000, votes=(1, 1), model="vote", rate=0.25),
    "3,000 queries, 1-3 votes, spammers 25%": dict(n_objects=100, dim=10, n_train=3_000, votes=(1, 3),
                                                   model="spammers", rate=0.25),
    "p = 5, 2,600 single answers, 10% flipped": dict(n_objects=100, dim=5, n_train=2_600, votes=(1, 1),
                                                     model="vote", rate=0.1),
    "p = 3, 200 objects, 5,000 single answers, 10%": dict(n_objects=200, dim=3, n_train=5_000, votes=(1, 1),
                                                         model="vote", rate=0.1),
    "p = 2, 60 objects, 600 single answers, 10%": dict(n_objects=60, dim=2, n_train=600, votes=(1, 1), model="vote",
                                                      rate=0.1),
    "p = 1, 60 objects, 300 single answers, 10%": dict(n_objects=60, dim=1, n_train=300, votes=(1, 1), model="vote",
                                                      rate=0.1),
}


def flags(estimator, split) -> dict:
    wrong = split.wrong_edge(estimator.graph_.edges)
    flagged = estimator.outlier_mask_
    hits = int((flagged & wrong).sum())
    return dict(flagged_share=float(flagged.mean()),
                precision=hits / flagged.sum() if flagged.sum() else float("nan"),
                recall=hits / wrong.sum() if wrong.sum() else float("nan"))


def run_trial(setting, rate, trial, n_test, peers, with_plain=True):
    from roembed import RobustOrdinalEmbedding

    split, p = draw(setting, rate, trial, n_test)
    test = split.test.quadruplets
    est = RobustOrdinalEmbedding(p, random_state=trial)
    row = dict(setting=setting, trial=trial, roembed_time=timed_fit(est, split.train))
    row.update(roembed_error=triplet_error(est.embedding_, test), **flags(est, split),
               chosen={k: getattr(v, "name", v) for k, v in est.chosen_params_.items()})
    if with_plain:  # the same default without the annotator stage (the synthetic votes all carry annotator ids)
        plain = RobustOrdinalEmbedding(p, random_state=trial, annotators=None)
        row["no_annotators_time"] = timed_fit(plain, split.train)
        row["no_annotators_error"] = triplet_error(plain.embedding_, test)
    add_peers(row, split.train, test, p, trial, peers)
    print(json.dumps(row, default=str), flush=True)
    return row


def add_peers(row, train, test, p, seed, peers):
    """cblearn's ``peers`` fitted on the majority-voted ``train`` into ``row``: error and time of each, the best
    one and the default's error relative to it (``rel``), and the default's time over SOE's.

    ``seed`` must not be the data's seed: cblearn starts from ``RandomState(seed).multivariate_normal``, which
    replays the ``RandomState(seed).standard_normal`` draw of ``make_synthetic``'s truth, so its fits would start
    at the truth (an exploration script that did so had cblearn's STE at 0.06 test error against 0.32 at p = 10;
    roembed's own starts draw from another stream, ``random_embedding``).  Every setting here seeds the
    estimators with the trial and the data with an offset."""
    triplets = majority_triplets(train)
    for name in peers:
        cb = cblearn_estimator(name, p, seed)
        row[f"{name}_time"] = timed_fit(cb, triplets, n_objects=train.n_objects)
        row[f"{name}_error"] = triplet_error(cb.embedding_, test)
    if peers:
        best = min(peers, key=lambda k: row[f"{k}_error"])
        row.update(best_peer=best, rel=row["roembed_error"] / row[f"{best}_error"] - 1.0)
    if "SOE" in peers:
        row["time_ratio_soe"] = row["roembed_time"] / row["SOE_time"]


def summarise(rows, peers):
    out = []
    for setting in dict.fromkeys(r["setting"] for r in rows):
        sel = [r for r in rows if r["setting"] == setting]
        fields = ["roembed_error", "roembed_time", "precision", "recall", "flagged_share", "time_ratio_soe",
                  "no_annotators_error", "no_annotators_time"]
        fields += [f"{k}_{x}" for k in peers for x in ("error", "time")]
        with warnings.catch_warnings():  # precision / recall are NaN where nothing was planted or flagged
            warnings.simplefilter("ignore", RuntimeWarning)
            med = {f: float(np.nanmedian([r.get(f, np.nan) for r in sel])) for f in fields}
        s = dict(setting=setting, trials=len(sel), **med)
        if peers:
            s["best_peer"] = min(peers, key=lambda k: med[f"{k}_error"])
            s["rel_of_medians"] = med["roembed_error"] / med[f"{s['best_peer']}_error"] - 1.0
            s["median_rel"] = float(np.median([r["rel"] for r in sel]))
        chosen = [json.dumps({k: r["chosen"][k] for k in ("loss", "weighting", "refine")}) for r in sel]
        s["chosen_most"] = max(set(chosen), key=chosen.count)
        out.append(s)
    return out


def table_columns(peers) -> dict:
    return {"setting": "", "trials": ".0f", "roembed_error": ".4f", "no_annotators_error": ".4f",
            **{f"{k}_error": ".4f" for k in peers},
            "best_peer": "", "rel_of_medians": "+.1%", "precision": ".2f", "recall": ".2f", "flagged_share": ".1%",
            "roembed_time": ".1f", "no_annotators_time": ".1f", "SOE_time": ".1f", "time_ratio_soe": ".2f"}


# -- low dimensions ---------------------------------------------------------------------------------------------
def lowdim_trial(p, seed, peers_soe=True):
    from scipy.spatial import procrustes
    from scipy.stats import spearmanr

    from roembed import SOE, RobustOrdinalEmbedding
    from roembed.experiments.synthetic import make_synthetic

    data = make_synthetic(n_objects=30, dim=p, n_train=1000, n_validation=10, n_test=3000, votes=(1, 1), rate=0.2,
                          model="vote", random_state=LOWDIM_SEED + seed)

    def quality(X):
        if p == 1:
            return float(abs(spearmanr(X[:, 0], data.X_true[:, 0])[0]))
        return float(procrustes(data.X_true, X)[2])

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        est = RobustOrdinalEmbedding(p, random_state=seed).fit(data.train)
        seconds = time.perf_counter() - start
    warned = any("starts reached" in str(w.message) for w in caught)
    row = dict(p=p, seed=seed, roembed=quality(est.embedding_), roembed_time=seconds, restart_warning=warned,
               roembed_error=1 - est.score(data.test))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fits = [SOE(p, random_state=100 * seed + k).fit(data.train) for k in range(10)]
    singles = [quality(f.embedding_) for f in fits]
    row["best_of_10_single_starts"] = max(singles) if p == 1 else min(singles)
    row["single_start_worst"] = min(singles) if p == 1 else max(singles)
    # the start a user of SOE with 10 restarts keeps: the lowest objective (first of equals within 1e-9)
    objectives = np.array([f.objective_ for f in fits])
    lowest = int(np.argmax(objectives <= objectives.min() * (1 + 1e-9)))
    row["lowest_objective_single_start"] = singles[lowest]
    # what each map predicts: held-out triplet error of the default and of the start SOE with 10 restarts keeps
    row["lowest_objective_error"] = 1 - fits[lowest].score(data.test)
    row["error_vs_lowest_objective"] = row["roembed_error"] / row["lowest_objective_error"] - 1
    if peers_soe:
        cb = cblearn_estimator("SOE", p, seed)
        row["cblearn_SOE_time"] = timed_fit(cb, data.train.triplets, n_objects=30)
        row["cblearn_SOE"] = quality(cb.embedding_)
    def meets(value, reference="best_of_10_single_starts"):
        # p = 1: rank correlation >= 0.95; p = 2: within 10% of the reference start's disparity
        return bool(value >= 0.95 if p == 1 else value <= 1.1 * row[reference])

    row["ok"] = meets(row["roembed"])
    row["ok_vs_lowest_objective"] = meets(row["roembed"], "lowest_objective_single_start")
    if peers_soe:
        row["cblearn_SOE_ok"] = meets(row["cblearn_SOE"])
        row["cblearn_SOE_ok_vs_lowest_objective"] = meets(row["cblearn_SOE"], "lowest_objective_single_start")
    print(json.dumps(row, default=float), flush=True)
    return row


def lowdim(args):
    rows = [lowdim_trial(p, seed, bool(args.peers)) for p in (1, 2) for seed in range(args.lowdim_seeds)]
    summary = []
    for p in (1, 2):
        sel = [r for r in rows if r["p"] == p]
        s = dict(p=p, seeds=len(sel), ok=sum(r["ok"] for r in sel),
                 ok_vs_lowest_objective=sum(r["ok_vs_lowest_objective"] for r in sel),
                 roembed_median=float(np.median([r["roembed"] for r in sel])),
                 roembed_worst=(min if p == 1 else max)(r["roembed"] for r in sel),
                 restart_warnings=sum(r["restart_warning"] for r in sel),
                 single_start_worst=(min if p == 1 else max)(r["single_start_worst"] for r in sel),
                 roembed_error=float(np.median([r["roembed_error"] for r in sel])),
                 soe_error=float(np.median([r["lowest_objective_error"] for r in sel])),
                 error_not_above_soe=sum(r["error_vs_lowest_objective"] <= 0.0 for r in sel),
                 missed_error_vs_soe=float(np.median([r["error_vs_lowest_objective"] for r in sel if not r["ok"]]))
                 if not all(r["ok"] for r in sel) else None)
        if args.peers:
            s["cblearn_SOE_ok"] = sum(r["cblearn_SOE_ok"] for r in sel)
            s["cblearn_SOE_ok_vs_lowest_objective"] = sum(r["cblearn_SOE_ok_vs_lowest_objective"] for r in sel)
            s["cblearn_SOE_worst"] = (min if p == 1 else max)(r["cblearn_SOE"] for r in sel)
            s["time_ratio_soe"] = float(np.median([r["roembed_time"] / r["cblearn_SOE_time"] for r in sel]))
        summary.append(s)
    columns = {"p": ".0f", "seeds": ".0f", "ok": ".0f", "ok_vs_lowest_objective": ".0f", "roembed_median": ".3f", "roembed_worst": ".3f",
               "restart_warnings": ".0f", "single_start_worst": ".3f", "roembed_error": ".4f", "soe_error": ".4f",
               "error_not_above_soe": ".0f", "missed_error_vs_soe": "+.1%", "cblearn_SOE_ok": ".0f",
               "cblearn_SOE_ok_vs_lowest_objective": ".0f", "cblearn_SOE_worst": ".3f",
               "time_ratio_soe": ".2f"}
    finish(args.out or HERE / "out" / "bench_defaults_lowdim.json", args, rows, summary, columns)


# -- beyond the protocol ---------------------------------------------------------------------------------------
def beyond_trial(setting, trial, peers):
    from roembed import RobustOrdinalEmbedding
    from roembed.data.diagnostics import free_coordinates
    from roembed.experiments.synthetic import make_synthetic

    kw = BEYOND[setting]
    data = make_synthetic(n_validation=10, n_test=20_000, random_state=BEYOND_SEED + trial, **kw)
    test, p = data.test.quadruplets, kw["dim"]
    est = RobustOrdinalEmbedding(p, random_state=trial)
    row = dict(setting=setting, trial=trial, roembed_time=timed_fit(est, data.train))
    gain = est.chosen_params_["ridge_check_gain"]
    row.update(roembed_error=triplet_error(est.embedding_, test), ridge_checked=gain is not None,
               ridge_kept=gain is not None and gain > 0,
               per_coordinate=est.graph_.n_queries / free_coordinates(kw["n_objects"], p),
               chosen={k: getattr(v, "name", v) for k, v in est.chosen_params_.items()})
    add_peers(row, data.train, test, p, trial, peers)
    print(json.dumps(row, default=str), flush=True)
    return row


def beyond(args):
    rows = [beyond_trial(setting, trial, args.peers) for setting in BEYOND for trial in range(args.trials)]
    summary = summarise(rows, args.peers)
    for s in summary:
        sel = [r for r in rows if r["setting"] == s["setting"]]
        s.update(per_coordinate=float(np.median([r["per_coordinate"] for r in sel])),
                 ridge_checked=sum(r["ridge_checked"] for r in sel), ridge_kept=sum(r["ridge_kept"] for r in sel))
    columns = {"setting": "", "trials": ".0f", "per_coordinate": ".1f", "roembed_error": ".4f",
               **{f"{k}_error": ".4f" for k in args.peers}, "best_peer": "", "rel_of_medians": "+.1%",
               "ridge_checked": ".0f", "ridge_kept": ".0f", "roembed_time": ".2f", "SOE_time": ".2f",
               "time_ratio_soe": ".2f"}
    finish(args.out or HERE / "out" / "bench_defaults_beyond.json", args, rows, summary, columns)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", nargs="+", default=list(DEFAULT_SETTINGS), choices=SETTINGS)
    parser.add_argument("--rate", type=float, default=0.25)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--n-test", type=int, default=None, help="synthetic test triplets (default: all ~465,000)")
    parser.add_argument("--peers", nargs="*", default=list(PEERS), choices=PEERS)
    parser.add_argument("--lowdim", action="store_true", help="the low-dimension reliability check instead")
    parser.add_argument("--lowdim-seeds", type=int, default=20)
    parser.add_argument("--beyond", action="store_true", help="the default against cblearn off the paper's protocol")
    parser.add_argument("--out", type=Path, default=None,
                        help="JSON (default benchmarks/out/bench_defaults.json, with --lowdim or --beyond "
                             "bench_defaults_lowdim.json or bench_defaults_beyond.json)")
    args = parser.parse_args(argv)
    if args.lowdim:
        return lowdim(args)
    if args.beyond:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return beyond(args)
    if any(s.startswith("music") for s in args.settings) and not MUSIC.is_dir():
        print(f"music data not found at {MUSIC}: skipping it")
        args.settings = [s for s in args.settings if not s.startswith("music")]
    rows, start = [], time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for setting in args.settings:
            for trial in range(args.trials):
                rows.append(run_trial(setting, args.rate, trial, args.n_test, args.peers))
    print(f"\n{time.perf_counter() - start:.0f} s in all")
    finish(args.out or HERE / "out" / "bench_defaults.json", args, rows, summarise(rows, args.peers),
           table_columns(args.peers))


if __name__ == "__main__":
    main()
