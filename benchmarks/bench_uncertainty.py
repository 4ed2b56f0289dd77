"""Bootstrap uncertainty: coverage, cost, Dask workers, and stability on the music data.

Sections (``--sections``, all by default):

``coverage``
    The paper's synthetic protocol (100 objects, 10,000 training triplets with 15-50 votes
    each) at p = 2 and p = 10, clean and with 25% ``spammers``; the default
    ``RobustOrdinalEmbedding(p)``; ``roembed.bootstrap`` with 100 replicates by query at 90%:
    the share of objects whose true position (aligned to the full fit by Procrustes with
    scaling) lies in its region, for the default ``"hotelling"`` calibration and the
    textbook ``"chi2"`` one (same replicates).  The wall time of the p = 10 runs is the cost
    target (100 replicates, 2 processes).  Seeds 0.. (exploration used 1001, 1002).
``cost``
    CPU seconds per replicate (serial, ``time.process_time``) of the paper's problem (p = 10,
    25% spammers), and the 100-replicate time on 2 cores it implies when the machine is idle
    (the wall times above are inflated by whatever else runs: see the load column).
``dask``
    The same bootstrap (p = 10, spammers, ``--dask-replicates``) on a ``LocalCluster`` with 1
    and then 2 worker processes (one thread each, data scattered once), against serial: the
    time ratio, and whether the replicates are identical.
``local``
    The local sandwich approximation (:func:`roembed.local_uncertainty`) against the bootstrap, on the
    coverage section's problems: coverage of its 90% regions; per object, the dispersion
    :math:`\sqrt{\mathrm{tr}\,\Sigma_i}` of both (Spearman rank correlation over objects) and the median
    ratio of the traces (local / bootstrap sample covariance); time of the local call against the
    bootstrap's replicates (same full fit, ``--n-jobs`` processes), for ``others="fixed"`` and ``"free"``.
    Exploration used seeds 100 and 101 (``--first-seed 100``); the documented table is seeds 0-2.
    ``--dump DIR`` keeps each fit and the bootstrap's covariances; ``--from-dump DIR`` recomputes the
    local figures from them without refitting or rerunning the bootstrap.
``sloped``
    Where the local regions are far too small: the synthetic protocol at n = 100 with ``--sloped-sizes``
    training triplets, p in ``--dims``, clean (even seeds) and with 25% ``vote`` flips (odd seeds), or each of
    ``--sloped-models`` for every seed (``unanimous`` and ``majority`` flips make the default refine), the
    default fit; per fit the queries where the fitted loss has a slope per coordinate
    (:func:`roembed.sandwich.sloped_queries`) and the coverage of the local 90% regions (``fixed`` and
    ``free``) against the truth.  Summarised below and from the thresholds of ``local_uncertainty``'s
    warning, :data:`roembed.sandwich.MIN_SLOPED_QUERIES_PER_COORDINATE` for unrefined fits (chosen on seeds
    100-104 of the default sweep) and :data:`~roembed.sandwich.MIN_REFINED_QUERIES_PER_COORDINATE` for refined
    ones (chosen on seeds 100-102 with ``--sloped-models clean vote unanimous majority``).
``music``
    The aset400 music triplets (``--music PATH``), p = 2, 100 replicates: per-artist stability
    against the number of comparisons the artist is in (Spearman rank correlation), and the
    picture for the README (``--figure``).

The machine load (``/proc/loadavg``) is recorded beside every time.
Prints a table and writes JSON (``--out``, default benchmarks/out/uncertainty.json).
"""
from __future__ import annotations

import argparse
import itertools
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _results import finish  # noqa: E402
from roembed.experiments import CONTAMINATION_MODELS  # noqa: E402


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0] if Path("/proc/loadavg").exists() else "?"


def synthetic_problems(seeds, dims, settings):
    """``(seed, dim, setting, data, estimator)`` of the paper's synthetic protocol: ``clean``, or 25% of one of
    :data:`~roembed.experiments.CONTAMINATION_MODELS` (``spammers``, ``unanimous``, ...)."""
    from roembed import RobustOrdinalEmbedding
    from roembed.experiments import make_synthetic

    for seed in seeds:
        for dim in dims:
            for setting in settings:
                rate, model = (0.0, "vote") if setting == "clean" else (0.25, setting)
                data = make_synthetic(dim=dim, rate=rate, model=model, n_test=1000, random_state=seed)
                yield seed, dim, setting, data, RobustOrdinalEmbedding(dim, random_state=seed)


def coverage_runs(seeds, dims, settings, replicates, n_jobs):
    from roembed import bootstrap

    rows = []
    for seed, dim, setting, data, est in synthetic_problems(seeds, dims, settings):
        t0 = time.perf_counter()
        res = bootstrap(est, data.train, replicates, n_jobs=n_jobs, random_state=seed)
        seconds = time.perf_counter() - t0
        row = dict(seed=seed, dim=dim, setting=setting, replicates=replicates, seconds=seconds, load=load(),
                   coverage=res.coverage(data.X_true))
        res.calibration = "chi2"
        row["coverage_chi2"] = res.coverage(data.X_true)
        row["stability_median"] = float(np.nanmedian(res.stability()))
        row["heldout_error"] = res.heldout_error().value
        rows.append(row)
        print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
    return rows


def local_rows(seed, dim, setting, full, X_true, boot_sample_covariances, boot) -> list[dict]:
    """One row per ``others`` of :func:`roembed.local_uncertainty` against the bootstrap (``boot``: its
    coverage, median squared Mahalanobis distance of the truth, seconds and replicates)."""
    from scipy.stats import spearmanr

    from roembed import local_uncertainty
    from roembed.metrics import procrustes

    rows = []
    truth = procrustes(full.embedding_, X_true).apply(X_true)
    chosen = full.chosen_params_
    for others in ("fixed", "free"):
        t0 = time.perf_counter()
        local = local_uncertainty(full, others=others)
        local_seconds = time.perf_counter() - t0
        used = np.intersect1d(full.graph_.comparisons.used_objects, np.flatnonzero(local.has_region))
        trace_local = np.trace(local.covariances, axis1=1, axis2=2)[used]
        trace_boot = np.trace(boot_sample_covariances, axis1=1, axis2=2)[used]
        row = dict(seed=seed, dim=dim, setting=setting, others=others, load=load(),
                   chosen=f"{chosen['loss']}/{chosen['weighting']}/{chosen['refine']}",
                   coverage_local=local.coverage(X_true), spearman_dispersion=float(spearmanr(trace_local,
                                                                                              trace_boot).statistic),
                   median_trace_ratio=float(np.median(trace_local / trace_boot)),
                   median_m2_local=float(np.nanmedian(local.mahalanobis2(truth)[used])),
                   no_region=int(len(full.graph_.comparisons.used_objects) - len(used)),
                   local_seconds=local_seconds, **boot)
        row["speedup"] = row["bootstrap_seconds"] / local_seconds
        rows.append(row)
        print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
    return rows


BOOT_KEYS = ("bootstrap_seconds", "replicates", "fit_seconds", "coverage_bootstrap", "median_m2_bootstrap")


def local_runs(seeds, dims, settings, replicates, n_jobs, dump=None, from_dump=None):
    """The local approximation against the bootstrap; ``dump``: pickle each fit and the bootstrap's covariances;
    ``from_dump``: read them back instead of fitting and bootstrapping (the bootstrap's figures as recorded)."""
    import pickle

    from roembed import bootstrap
    from roembed.metrics import procrustes

    rows = []
    for seed, dim, setting, data, est in synthetic_problems(seeds, dims, settings):
        if from_dump is not None:
            with open(from_dump / f"local_{seed}_{dim}_{setting}.pkl", "rb") as fh:
                saved = pickle.load(fh)
            boot = saved.get("boot") or {k: saved["row"][k] for k in BOOT_KEYS}  # (first dumps: in the row)
            rows += local_rows(seed, dim, setting, saved["estimator"], saved["X_true"], saved["sample_covariances"],
                               boot)
            continue
        t0 = time.perf_counter()
        full = est.__class__(**est.get_params()).fit(data.train)
        fit_seconds = time.perf_counter() - t0
        t0 = time.perf_counter()
        res = bootstrap(est, data.train, replicates, fitted=full, n_jobs=n_jobs, random_state=seed, k=0)
        truth = procrustes(full.embedding_, data.X_true).apply(data.X_true)
        boot = dict(bootstrap_seconds=time.perf_counter() - t0, replicates=replicates, fit_seconds=fit_seconds,
                    coverage_bootstrap=res.coverage(data.X_true),
                    median_m2_bootstrap=float(np.median(res.mahalanobis2(truth)[res.used_objects])))
        rows += local_rows(seed, dim, setting, full, data.X_true, res.sample_covariances, boot)
        if dump is not None:
            dump.mkdir(parents=True, exist_ok=True)
            with open(dump / f"local_{seed}_{dim}_{setting}.pkl", "wb") as fh:
                pickle.dump(dict(estimator=full, X_true=data.X_true, sample_covariances=res.sample_covariances,
                                 boot=boot), fh)
    return rows


def sloped_runs(seeds, dims, sizes, models=None):
    """One row per (seed, model, p, m): sloped queries per coordinate and the local regions' coverage
    (``sloped``).  ``models`` None: clean for even seeds, 25% ``vote`` flips for odd ones; else each of
    ``models`` (``clean`` or a contamination model at 25%) for every seed."""
    from roembed import RobustOrdinalEmbedding, local_uncertainty
    from roembed.experiments import make_synthetic

    rows = []
    for seed, model, dim, m in itertools.product(seeds, models or [None], dims, sizes):
        model = model or ("vote" if seed % 2 else "clean")
        rate = 0.0 if model == "clean" else 0.25
        data = make_synthetic(dim=dim, n_train=m, rate=rate, model="vote" if model == "clean" else model,
                              n_test=100, random_state=seed)
        est = RobustOrdinalEmbedding(dim, random_state=seed).fit(data.train)
        chosen = est.chosen_params_
        row = dict(seed=seed, model=model, dim=dim, m=m, rate=rate, refined=chosen["refine"] is not None,
                   chosen=f"{chosen['loss']}/{chosen['weighting']}/{chosen['refine']}")
        for others in ("fixed", "free"):
            local = local_uncertainty(est, others=others)
            row[f"coverage_{others}"] = local.coverage(data.X_true)
        row.update(queries=local.n_queries, sloped_queries=local.n_sloped_queries,
                   sloped_per_coordinate=local.sloped_queries_per_coordinate)
        rows.append(row)
        print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
    return rows


def cost_run(replicates, seed=0):
    from roembed import RobustOrdinalEmbedding, bootstrap
    from roembed.experiments import make_synthetic

    data = make_synthetic(dim=10, rate=0.25, model="spammers", n_test=1000, random_state=seed)
    est = RobustOrdinalEmbedding(10, random_state=seed)
    full = RobustOrdinalEmbedding(**est.get_params()).fit(data.train)
    c0, t0 = time.process_time(), time.perf_counter()
    bootstrap(est, data.train, replicates, fitted=full, n_jobs=1, random_state=seed)
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    row = dict(replicates=replicates, cpu_per_replicate=cpu / replicates, wall_per_replicate=wall / replicates,
               implied_100_on_2_cores=100 * cpu / replicates / 2, load=load())
    print(row, flush=True)
    return row


def dask_runs(replicates, seed=0):
    import dask
    import joblib
    from distributed import Client, LocalCluster

    from roembed import RobustOrdinalEmbedding, bootstrap
    from roembed.experiments import make_synthetic

    data = make_synthetic(dim=10, rate=0.25, model="spammers", n_test=1000, random_state=seed)
    est = RobustOrdinalEmbedding(10, random_state=seed)
    full = est.__class__(**est.get_params()).fit(data.train)
    t0 = time.perf_counter()
    serial = bootstrap(est, data.train, replicates, fitted=full, n_jobs=1, random_state=seed)
    rows = [dict(workers="serial", seconds=time.perf_counter() - t0, load=load(), identical=True)]
    env = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    for workers in (1, 2):
        with dask.config.set({"distributed.worker.multiprocessing-method": "fork"}):
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=None, env=env)
        with Client(cluster):
            with joblib.parallel_config(backend="dask", scatter=[data.train]):
                bootstrap(est, data.train, 2, fitted=full, n_jobs=-1, random_state=seed + 1)  # warm the workers
                t0 = time.perf_counter()
                res = bootstrap(est, data.train, replicates, fitted=full, n_jobs=-1, random_state=seed)
                seconds = time.perf_counter() - t0
        cluster.close()
        rows.append(dict(workers=workers, seconds=seconds, load=load(),
                         identical=bool(np.array_equal(res.replicates, serial.replicates))))
        print(rows[-1], flush=True)
    one = rows[1]["seconds"]
    for r in rows:
        r["speedup_vs_1_worker"] = one / r["seconds"]
    return rows


def music_run(path, replicates, n_jobs, figure):
    from scipy.stats import spearmanr

    from roembed import RobustOrdinalEmbedding, bootstrap, load_music, load_music_genres

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = load_music(path)
    est = RobustOrdinalEmbedding(2, random_state=0)
    t0 = time.perf_counter()
    res = bootstrap(est, data, replicates, n_jobs=n_jobs, random_state=0)
    seconds = time.perf_counter() - t0
    objects = res.objects()
    rho_stab = spearmanr(objects["stability"], objects["n_comparisons"]).statistic
    rho_disp = spearmanr(objects["dispersion"], objects["n_comparisons"]).statistic
    least = objects.nsmallest(20, "stability")
    row = dict(replicates=replicates, seconds=seconds, load=load(), n_objects=len(objects),
               spearman_stability_vs_comparisons=float(rho_stab),
               spearman_dispersion_vs_comparisons=float(rho_disp),
               median_comparisons=float(objects["n_comparisons"].median()),
               median_comparisons_20_least_stable=float(least["n_comparisons"].median()),
               heldout_error=res.heldout_error().value, heldout_low=res.heldout_error().low,
               heldout_high=res.heldout_error().high)
    print(row, flush=True)
    if figure:
        from roembed.plotting import plot_embedding, save_figure

        genres = load_music_genres(path)
        labels = [g[0] if isinstance(g, list) and g else "" for g in genres.reindex(list(data.object_names))]
        fig = plot_embedding(res.embedding, names=list(data.object_names), labels=labels, uncertainty=res,
                             title=f"aset400 music artists: 90% regions from {replicates} query-bootstrap replicates")
        save_figure(fig, figure)
        print(f"wrote {figure}")
    return row, objects


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sections", nargs="+", default=["coverage", "cost", "dask", "music"],
                        choices=["coverage", "local", "sloped", "cost", "dask", "music"])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--first-seed", type=int, default=0, help="Seeds first-seed .. first-seed + seeds - 1.")
    parser.add_argument("--dims", type=int, nargs="+", default=[2, 10])
    parser.add_argument("--settings", nargs="+", default=["clean", "spammers"],
                        choices=("clean",) + CONTAMINATION_MODELS)
    parser.add_argument("--sloped-sizes", type=int, nargs="+", default=[2500, 5000, 10000, 20000, 40000])
    parser.add_argument("--sloped-models", nargs="+", default=None, choices=("clean",) + CONTAMINATION_MODELS,
                        help="sloped: these settings for every seed (default: clean for even seeds, vote for odd)")
    parser.add_argument("--replicates", type=int, default=100)
    parser.add_argument("--dask-replicates", type=int, default=20)
    parser.add_argument("--cost-replicates", type=int, default=10)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--music", type=Path, default=Path("/work/shared/data/music-aset400-ste"))
    parser.add_argument("--figure", type=Path, default=None, help="Write the music picture here (e.g. docs/figures/"
                                                                   "music_uncertainty.png).")
    parser.add_argument("--dump", type=Path, default=None, help="local: pickle each fit and its bootstrap "
                                                                 "covariances here (e.g. benchmarks/out/local).")
    parser.add_argument("--from-dump", type=Path, default=None, help="local: read the fits and bootstrap "
                                                                      "covariances --dump wrote instead of rerunning.")
    parser.add_argument("--out", type=Path, default=HERE / "out" / "uncertainty.json")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    payload, summary = {}, []
    if "coverage" in args.sections:
        rows = coverage_runs(range(args.first_seed, args.first_seed + args.seeds), args.dims, args.settings, args.replicates, args.n_jobs)
        payload["coverage"] = rows
        for dim in args.dims:
            for setting in args.settings:
                sel = [r for r in rows if r["dim"] == dim and r["setting"] == setting]
                summary.append(dict(what=f"coverage p={dim} {setting}", median=float(np.median([r["coverage"] for r in sel])),
                                    chi2=float(np.median([r["coverage_chi2"] for r in sel])),
                                    lo=min(r["coverage"] for r in sel), hi=max(r["coverage"] for r in sel),
                                    seconds=float(np.median([r["seconds"] for r in sel])), n=len(sel),
                                    load=sel[-1]["load"]))
    if "local" in args.sections:
        rows = local_runs(range(args.first_seed, args.first_seed + args.seeds), args.dims, args.settings,
                          args.replicates, args.n_jobs, args.dump, args.from_dump)
        payload["local"] = rows
        for dim, setting, others in itertools.product(args.dims, args.settings, ("fixed", "free")):
            sel = [r for r in rows if r["dim"] == dim and r["setting"] == setting and r["others"] == others]
            med = lambda key: float(np.median([r[key] for r in sel]))  # noqa: E731
            summary.append(dict(what=f"local {others} p={dim} {setting}", median=med("coverage_local"),
                                lo=min(r["coverage_local"] for r in sel), hi=max(r["coverage_local"] for r in sel),
                                bootstrap=med("coverage_bootstrap"), spearman=med("spearman_dispersion"),
                                ratio=med("median_trace_ratio"), local_s=med("local_seconds"),
                                seconds=med("bootstrap_seconds"), speedup=med("speedup"), n=len(sel),
                                load=sel[-1]["load"]))
    if "sloped" in args.sections:
        from roembed.sandwich import MIN_REFINED_QUERIES_PER_COORDINATE, MIN_SLOPED_QUERIES_PER_COORDINATE

        rows = sloped_runs(range(args.first_seed, args.first_seed + args.seeds), args.dims, args.sloped_sizes,
                           args.sloped_models)
        payload["sloped"] = rows
        for refined, limit in ((False, MIN_SLOPED_QUERIES_PER_COORDINATE), (True, MIN_REFINED_QUERIES_PER_COORDINATE)):
            fits = [r for r in rows if r["refined"] == refined]
            for others in ("fixed", "free"):
                for side, sel in (("below", [r for r in fits if r["sloped_per_coordinate"] < limit]),
                                  ("from", [r for r in fits if r["sloped_per_coordinate"] >= limit])):
                    cov = [r[f"coverage_{others}"] for r in sel]
                    summary.append(dict(what=f"{'refined' if refined else 'unrefined'}, sloped/coordinate {side} "
                                             f"{limit}: local {others}", n=len(sel),
                                        median=float(np.median(cov)) if cov else None, lo=min(cov, default=None),
                                        hi=max(cov, default=None), load=load()))
    if "cost" in args.sections:
        row = cost_run(args.cost_replicates)
        payload["cost"] = row
        summary.append(dict(what="cost: CPU s per replicate (p=10 spammers)", median=row["cpu_per_replicate"],
                            seconds=row["implied_100_on_2_cores"], load=row["load"]))
    if "dask" in args.sections:
        rows = dask_runs(args.dask_replicates)
        payload["dask"] = rows
        for r in rows:
            summary.append(dict(what=f"dask workers={r['workers']}", seconds=r["seconds"], load=r["load"],
                                median=r["speedup_vs_1_worker"], chi2=None, identical=str(r["identical"])))
    if "music" in args.sections:
        row, objects = music_run(args.music, args.replicates, args.n_jobs, args.figure)
        payload["music"] = row
        payload["music_objects"] = objects.reset_index().to_dict(orient="records")
        summary.append(dict(what="music spearman(stability, n_comparisons)",
                            median=row["spearman_stability_vs_comparisons"], seconds=row["seconds"], load=row["load"]))
    finish(args.out, args, payload.pop("coverage", []), summary,
           {"what": "", "median": ".3f", "chi2": ".3f", "lo": ".2f", "hi": ".2f", "bootstrap": ".3f",
            "spearman": ".2f", "ratio": ".2f", "n": "d", "local_s": ".3f", "seconds": ".1f", "speedup": ".0f",
            "load": "", "identical": ""}, **payload)


if __name__ == "__main__":
    main()
