"""What a resumable bootstrap store costs, and what a resumed run takes.

The paper's synthetic problem (p = 10, 25% ``spammers``, the default ``RobustOrdinalEmbedding(10)``,
full fit done once), ``--replicates`` (20) bootstrap replicates on ``--n-jobs`` processes:

``plain``    no store;
``store``    a fresh store (manifest, then one file per replicate as it comes back);
``resumed``  the store with ``--stored`` (15) of the replicates, the others deleted: the run reads 15
             and computes the rest;
``read``     every replicate stored: fingerprint and reading only.

Runs are interleaved (plain, store, resumed, read; ``--runs`` times) so the machine's load hits them
alike; medians, and each against ``plain``.  Every result is checked bit-identical to ``plain``.
Prints a table and writes JSON (``--out``, default benchmarks/out/bootstrap_store.json).
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _results import finish  # noqa: E402


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0] if Path("/proc/loadavg").exists() else "?"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replicates", type=int, default=20)
    parser.add_argument("--stored", type=int, default=15)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=HERE / "out" / "bootstrap_store.json")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")

    from roembed import RobustOrdinalEmbedding, bootstrap
    from roembed.experiments import make_synthetic

    data = make_synthetic(dim=10, rate=0.25, model="spammers", random_state=args.seed)
    est = RobustOrdinalEmbedding(10, random_state=args.seed)
    full = RobustOrdinalEmbedding(**est.get_params()).fit(data.train)
    B = args.replicates

    def run(store):
        t0 = time.perf_counter()
        res = bootstrap(est, data.train, B, fitted=full, n_jobs=args.n_jobs, random_state=args.seed, store=store)
        return res, time.perf_counter() - t0

    rows, reference = [], None
    folder = Path(tempfile.mkdtemp(prefix="bench-store-"))
    try:
        for r in range(args.runs):
            plain, seconds = run(None)
            reference = plain if reference is None else reference
            rows.append(dict(run=r, case="plain", seconds=seconds, from_store=0, load=load(),
                             identical=bool(np.array_equal(plain.replicates, reference.replicates))))
            store = folder / f"run{r}"
            for case in ("store", "resumed", "read"):
                if case == "resumed":
                    for i in range(args.stored, B):
                        (store / f"replicate-{i:04d}.npz").unlink()
                res, seconds = run(store)
                rows.append(dict(run=r, case=case, seconds=seconds, from_store=res.n_from_store, load=load(),
                                 identical=bool(np.array_equal(res.replicates, reference.replicates)
                                                and np.array_equal(res.oob_errors, reference.oob_errors)
                                                and res.flag_frequency().equals(reference.flag_frequency()))))
                print(rows[-1], flush=True)
            size = sum(p.stat().st_size for p in store.iterdir())
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    plain_median = float(np.median([r["seconds"] for r in rows if r["case"] == "plain"]))
    summary = []
    for case in ("plain", "store", "resumed", "read"):
        sel = [r for r in rows if r["case"] == case]
        median = float(np.median([r["seconds"] for r in sel]))
        summary.append(dict(case=case, replicates=B, from_store=sel[0]["from_store"], seconds=median,
                            vs_plain=median / plain_median, identical=str(all(r["identical"] for r in sel)),
                            loads=" ".join(r["load"] for r in sel)))
    finish(args.out, args, rows, summary, {"case": "", "replicates": "d", "from_store": "d", "seconds": ".2f",
                                           "vs_plain": ".3f", "identical": "", "loads": ""},
           store_bytes=size, store_bytes_per_replicate=size / B)
    print(f"store size: {size / 1e6:.2f} MB ({size / B / 1e3:.0f} kB per replicate with the manifest)")


if __name__ == "__main__":
    main()
