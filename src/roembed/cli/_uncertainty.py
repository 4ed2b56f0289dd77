"""The tables and pictures of ``roembed fit --dim auto`` and ``--bootstrap N`` (see docs/cli.md)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ._report import write_csv


def write_dimension_selection(estimator, folder: Path, formats) -> tuple[list[Path], dict]:
    """``dimensions.csv`` and ``dimensions.png`` of ``--dim auto``; the summary's part."""
    from .. import plotting

    selection = estimator.dimension_selection_
    table = selection.table.copy()
    table["fold_errors"] = [";".join(f"{e:.6g}" for e in errs) for errs in table["fold_errors"]]
    files = [write_csv(table, folder / "dimensions.csv")]
    files += plotting.save_figure(plotting.plot_dimension_selection(selection), folder / "dimensions", formats)
    return files, {"dim_selected": selection.n_components, "dim_least_error": selection.best,
                   "dim_rule": selection.rule}


def write_bootstrap(estimator, train, n_replicates: int, unit: str, seed: int, jobs: int, folder: Path, formats,
                    object_ids=None, names=None, labels=None, store=None,
                    label_title: str | None = None) -> tuple[list[Path], dict]:
    """Bootstraps the fitted ``estimator`` on ``train`` and writes ``uncertainty.csv`` (per object),
    ``flag_frequency.csv`` (robust methods), ``annotator_intervals.csv`` (with annotator ids) and the
    pictures ``uncertainty.png`` and ``flag_frequency.png``; returns the files and the summary's part.
    ``store``: the folder keeping the replicates (:func:`roembed.uncertainty.bootstrap`)."""
    from .. import plotting
    from ..uncertainty import bootstrap

    result = bootstrap(estimator, train, n_replicates, unit=unit, fitted=estimator, n_jobs=jobs, random_state=seed,
                       store=store)
    objects = result.objects().reset_index()
    if object_ids is not None:
        objects["object"] = np.asarray(object_ids)
    files = [write_csv(objects, folder / "uncertainty.csv")]
    used = objects["n_comparisons"].to_numpy() > 0
    plot_names = None if names is None else list(np.asarray(names, dtype=object))
    fig = plotting.plot_embedding(result.embedding, plot_names, labels, uncertainty=result, label_title=label_title,
                                  title=f"{type(estimator).__name__}: {100 * result.confidence:.0f}% "
                                        f"{'intervals' if result.embedding.shape[1] == 1 else 'regions'} from "
                                        f"{n_replicates} bootstrap replicates (by {unit})")
    files += plotting.save_figure(fig, folder / "uncertainty", formats)
    if result.flag_counts is not None:
        flags = result.flag_frequency()
        files.append(write_csv(flags, folder / "flag_frequency.csv"))
        files += plotting.save_figure(plotting.plot_flag_frequency(flags), folder / "flag_frequency", formats)
    if result.annotator_agreement is not None:
        files.append(write_csv(result.annotators(), folder / "annotator_intervals.csv"))
    error = result.heldout_error()
    part = {"bootstrap": {
        "replicates": n_replicates, "unit": unit, "store": None if store is None else str(store),
        "from_store": result.n_from_store, "confidence": result.confidence, "calibration": result.calibration,
        "out_of_bag_error": error.value, "out_of_bag_error_low": error.low, "out_of_bag_error_high": error.high,
        "median_stability": float(np.nanmedian(objects.loc[used, "stability"])) if "stability" in objects else None,
        "least_stable": objects.loc[used].nsmallest(5, "stability")["object"].tolist() if "stability" in objects
        else [],
    }}
    if "stability" in objects and names is not None:
        part["bootstrap"]["least_stable_names"] = objects.loc[used].nsmallest(5, "stability")["name"].tolist()
    return files, part


def describe_bootstrap(part: dict) -> str:
    """The bootstrap's answer to "how sure is this map?" in one line (it was in summary.json only)."""
    b = part["bootstrap"]
    line = (f"bootstrap ({b['replicates']} replicates by {b['unit']}): out-of-bag error {b['out_of_bag_error']:.4f} "
            f"({100 * b['confidence']:g}% interval {b['out_of_bag_error_low']:.4f}-{b['out_of_bag_error_high']:.4f})")
    if b["median_stability"] is not None:
        least = b.get("least_stable_names") or b["least_stable"]
        line += (f"; median stability {b['median_stability']:.2f} (the share of an object's nearest neighbours "
                 f"kept across replicates), least stable: {', '.join(map(str, least))}; uncertainty.csv has all")
    return line


__all__ = ["describe_bootstrap", "write_dimension_selection", "write_bootstrap"]
