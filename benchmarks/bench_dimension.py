"""Choosing the dimension: does ``select_dimension`` return the true p?

The paper's synthetic protocol (100 objects, 10,000 training triplets with 15-50 votes
each, 100 annotators) with points drawn in p in {2, 5, 10} dimensions, clean and with
25% ``spammers``.  ``select_dimension`` with its defaults (5 folds of whole sets of objects, the
one-standard-error rule, patience 2) on the default ``RobustOrdinalEmbedding``; for
contrast the same selection with the plain (non-robust) SOE on the first ``--plain-seeds``
seeds.  Seeds 0.. (exploration used 2001).  Rows are appended to a JSONL store as they
finish (``--store``), so an interrupted run resumes where it stopped.

Prints, per (p, setting, estimator), how many seeds returned the true p and the
distribution of the answers; writes JSON (``--out``, default benchmarks/out/dimension.json).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _results import finish  # noqa: E402


def one(seed, dim, setting, which, n_jobs):
    from roembed import SOE, RobustOrdinalEmbedding, select_dimension
    from roembed.experiments import make_synthetic

    rate, model = (0.25, "spammers") if setting == "spammers" else (0.0, "vote")
    data = make_synthetic(dim=dim, rate=rate, model=model, n_test=10, random_state=seed)
    est = RobustOrdinalEmbedding(random_state=seed) if which == "robust" else SOE(random_state=seed)
    t0 = time.perf_counter()
    sel = select_dimension(est, data.train, n_jobs=n_jobs, random_state=seed)
    load = Path("/proc/loadavg").read_text().split()[0]
    return dict(seed=seed, dim=dim, setting=setting, estimator=which, chosen=sel.n_components, best=sel.best,
                tried=int(sel.table["n_components"].max()), seconds=time.perf_counter() - t0, load=load,
                errors=sel.table["error"].round(5).tolist())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--first-seed", type=int, default=0,
                        help="run seeds first-seed .. seeds - 1 (two processes on one store: split the seeds)")
    parser.add_argument("--plain-seeds", type=int, default=5)
    parser.add_argument("--dims", type=int, nargs="+", default=[2, 5, 10])
    parser.add_argument("--settings", nargs="+", default=["clean", "spammers"])
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--store", type=Path, default=HERE / "out" / "dimension.jsonl")
    parser.add_argument("--out", type=Path, default=HERE / "out" / "dimension.json")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    args.store.parent.mkdir(parents=True, exist_ok=True)
    rows = [json.loads(line) for line in args.store.read_text().splitlines()] if args.store.exists() else []
    done = {(r["seed"], r["dim"], r["setting"], r["estimator"]) for r in rows}
    for seed in range(args.first_seed, args.seeds):  # seeds outermost: an interrupted run has every setting at a few seeds
        for dim in args.dims:
            for setting in args.settings:
                for which in ("robust", "plain") if seed < args.plain_seeds else ("robust",):
                    if (seed, dim, setting, which) in done:
                        continue
                    row = one(seed, dim, setting, which, args.n_jobs)
                    rows.append(row)
                    with open(args.store, "a") as fh:
                        fh.write(json.dumps(row) + "\n")
                    print(row, flush=True)
    summary = []
    for which in ("robust", "plain"):
        for dim in args.dims:
            for setting in args.settings:
                sel = [r for r in rows if r["dim"] == dim and r["setting"] == setting and r["estimator"] == which]
                if sel:
                    answers = Counter(r["chosen"] for r in sel)
                    summary.append(dict(estimator=which, true_p=dim, setting=setting, seeds=len(sel),
                                        correct=sum(r["chosen"] == dim for r in sel),
                                        answers=" ".join(f"{k}:{v}" for k, v in sorted(answers.items())),
                                        seconds=sorted(r["seconds"] for r in sel)[len(sel) // 2],
                                        load=sel[-1]["load"]))
    finish(args.out, args, rows, summary, {"estimator": "", "true_p": "d", "setting": "", "seeds": "d",
                                           "correct": "d", "answers": "", "seconds": ".0f", "load": ""})


if __name__ == "__main__":
    main()
