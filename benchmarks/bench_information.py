"""How much a unanimous flip costs: SOE on subsets of the clean triplets vs on the contaminated ones.

Under the ``unanimous`` model (q = 0.25) every vote of a flipped triplet agrees, so the votes carry
no information and a quarter of the 10,000 training triplets are plain label noise.  This fits
roembed's SOE (one vote per distinct triplet) to

* the observed triplets (flipped ones included),
* the clean triplets only (an oracle that drops the flipped ones),
* random subsets of the clean triplets (``--sizes``),

and prints the held-out error of each, the medians over ``--trials`` draws (trial ``r`` uses data
seed ``1000 + r``, as ``bench_robust.py``).  Near the decision boundary a flip rate q leaves
(1 - 2q)^2 of a clean triplet's Fisher information: at q = 0.25 the 10,000 noisy triplets are
worth about 2,500 clean ones there.

    python benchmarks/bench_information.py --trials 3
"""
from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _results import finish  # noqa: E402

DATA_SEED = 1000


def run_trial(trial: int, rate: float, sizes, n_test: int) -> dict:
    from roembed import Comparisons
    from roembed.estimators.competitors import SOE
    from roembed.experiments.synthetic import make_synthetic

    data = make_synthetic(rate=rate, model="unanimous", n_test=n_test, random_state=DATA_SEED + trial)
    truth = data.train_triplets
    flipped = data.triplet_majority_flipped
    observed = np.where(flipped[:, None], truth[:, [0, 2, 1]], truth)
    clean = np.flatnonzero(~flipped)
    rng = np.random.default_rng(trial)

    def error(triplets) -> float:
        est = SOE(data.X_true.shape[1], random_state=trial).fit(Comparisons(triplets, n_objects=len(data.X_true)))
        return 1.0 - est.score(data.test)

    row = {"trial": trial, "observed": error(observed), "clean_only": error(truth[clean]),
           **{f"clean_{m}": error(truth[rng.choice(clean, m, replace=False)]) for m in sizes if m < len(clean)},
           "all_clean": error(truth)}
    print(json.dumps(row), flush=True)
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--rate", type=float, default=0.25)
    parser.add_argument("--sizes", type=int, nargs="+", default=[2500, 5000])
    parser.add_argument("--n-test", type=int, default=100_000)
    parser.add_argument("--out", type=Path, default=HERE / "out" / "bench_information.json")
    args = parser.parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = [run_trial(t, args.rate, args.sizes, args.n_test) for t in range(args.trials)]
    columns = [k for k in rows[0] if k != "trial"]
    summary = [{"triplets": k, "median_error": float(np.median([r[k] for r in rows])), "trials": len(rows)}
               for k in columns]
    finish(args.out, args, rows, summary, {"triplets": "", "trials": ".0f", "median_error": ".4f"})


if __name__ == "__main__":
    main()
