"""Tables and figures from a result store (see :mod:`roembed.experiments.runner`).

Tables follow the paper's layout: for each protocol, contamination model and
rate, one row per method with the min, median, max and standard deviation
(``ddof=1``) of the test error over trials.  Figures: test error vs ``q`` (mean
+- std), a method's error vs ``lambda`` (the sensitivity figure, from the grid
points recorded in each cell), and outlier precision/recall vs ``q``.
Every file is written atomically.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from .._io import atomic_path, atomic_write
from .runner import METHODS, ResultStore

STATS = ("min", "median", "max", "std")


def results_frame(records: Sequence[dict]) -> pd.DataFrame:
    """One row per successful cell: protocol, model, rate, trial, method, errors, outlier scores."""
    rows = []
    for r in records:
        if r.get("status") != "ok":
            continue
        out = r.get("outliers") or {}
        rows.append({"protocol": r["protocol"], "model": r["model"], "rate": float(r["rate"]),
                     "trial": int(r["trial"]), "method": r["method"], "seed": r.get("seed"),
                     "test_error": r["test_error"], "val_error": r["val_error"],
                     "params": r.get("params", {}), "seconds": r.get("seconds", np.nan),
                     "precision": out.get("precision", np.nan), "recall": out.get("recall", np.nan)})
    cols = ["protocol", "model", "rate", "trial", "method", "seed", "test_error", "val_error", "params",
            "seconds", "precision", "recall"]
    df = pd.DataFrame(rows, columns=cols)
    # a cell run twice (e.g. --retry-errors) counts once: keep the last record
    return df.drop_duplicates(["protocol", "model", "rate", "trial", "method"], keep="last").reset_index(drop=True)


def method_order(methods: Sequence[str]) -> list[str]:
    """Registry order (the paper's methods first), unknown names last in sorted order."""
    known = [m for m in METHODS if m in set(methods)]
    return known + sorted(set(methods) - set(known))


def summary_table(df: pd.DataFrame) -> pd.DataFrame:
    """min / median / max / std (ddof=1) / mean / n of the test error per protocol, model, rate, method."""
    clean = df["rate"] == 0  # clean data do not depend on the model: one "clean" block
    df = pd.concat([df[~clean], df[clean].assign(model="clean").drop_duplicates(["protocol", "trial", "method"])])
    g = df.groupby(["protocol", "model", "rate", "method"], sort=True)["test_error"]
    table = g.agg(["min", "median", "max", lambda s: s.std(ddof=1), "mean", "count"])
    table.columns = ["min", "median", "max", "std", "mean", "n_trials"]
    table = table.reset_index()
    order = {m: i for i, m in enumerate(method_order(table["method"].unique()))}
    table = table.sort_values(["protocol", "model", "rate", "method"],
                              key=lambda s: s.map(order) if s.name == "method" else s, kind="stable")
    return table.reset_index(drop=True)


def markdown_tables(summary: pd.DataFrame, rates: Sequence[float] | None = (0.0, 0.25), digits: int = 4) -> str:
    """The paper's layout in Markdown: one table per (protocol, model, rate); rows are methods.

    ``rates``: the rates tabulated (the paper's tables: clean and 25%); where the summary has none of them (a run
    of ``--rates 0.1`` alone), every rate it has, rather than an empty file."""
    parts = []
    if rates is not None and not any(np.isclose(rate, rates).any() for rate in summary["rate"]):
        rates = None
    for (protocol, model, rate), block in summary.groupby(["protocol", "model", "rate"], sort=False):
        if rates is not None and not np.isclose(rate, rates).any():
            continue
        n = block["n_trials"]
        trials = f"{n.min()}" if n.min() == n.max() else f"{n.min()}-{n.max()}"
        setting = "clean" if rate == 0 else f"contamination model `{model}`, {rate:.0%} contaminated"
        parts.append(f"**{protocol}, {setting}** ({trials} trial{'' if trials == '1' else 's'})\n")
        parts.append("| method | " + " | ".join(STATS) + " |")
        parts.append("|---|" + "---|" * len(STATS))
        for _, row in block.iterrows():
            cells = " | ".join(f"{row[s]:.{digits}f}" if np.isfinite(row[s]) else "-" for s in STATS)
            parts.append(f"| {row['method']} | {cells} |")
        parts.append("")
    return "\n".join(parts)


# ---------------------------------------------------------------------------
# figures
# ---------------------------------------------------------------------------
def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path) -> Path:
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=120, bbox_inches="tight", format=Path(path).suffix.lstrip(".") or "png")
    _pyplot().close(fig)
    return Path(path)


def _model_axes(models, width=4.2, height=3.2):
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(models), figsize=(width * len(models), height), squeeze=False, sharey=True)
    return fig, dict(zip(models, axes[0]))


def plot_error_vs_rate(df: pd.DataFrame, path, protocol: str = "synthetic"):
    """Test error vs contamination rate q (mean +- std over trials), one panel per model."""
    df = df[df["protocol"] == protocol]
    models = sorted(df["model"].unique())
    # clean data do not depend on the contamination model: every panel gets the q = 0 cells
    clean = df[df["rate"] == 0].drop_duplicates(["trial", "method"])
    fig, axes = _model_axes(models)
    methods = method_order(df["method"].unique())
    colours = _pyplot().get_cmap("tab20")  # more methods than the default 10-colour cycle
    style = {m: dict(color=colours(i % 20), marker="os^vD<>ph*"[i % 10]) for i, m in enumerate(methods)}
    for model, ax in axes.items():
        sub = pd.concat([clean, df[(df["model"] == model) & (df["rate"] > 0)]])
        for method in method_order(sub["method"].unique()):
            s = sub[sub["method"] == method].groupby("rate")["test_error"].agg(["mean", "std"]).fillna(0.0)
            ax.errorbar(s.index, s["mean"], yerr=s["std"], capsize=3, label=method, **style[method])
        ax.set_title(f"{protocol}: {model}")
        ax.set_xlabel("contamination rate q")
        ax.grid(alpha=0.3)
    next(iter(axes.values())).set_ylabel("test error")
    next(iter(axes.values())).legend(fontsize=8)
    return _save(fig, path)


def grid_frame(records: Sequence[dict], method: str, param: str = "lam") -> pd.DataFrame:
    """The recorded grid points of ``method`` (one row per trial and value of ``param``)."""
    rows = [{"protocol": r["protocol"], "model": r["model"], "rate": float(r["rate"]), "trial": r["trial"],
             param: point["params"][param], "test_error": point["test_error"], "val_error": point["val_error"],
             "precision": point.get("precision", np.nan), "recall": point.get("recall", np.nan)}
            for r in records if r.get("status") == "ok" and r["method"] == method
            for point in r.get("grid", []) if param in point["params"]]
    return pd.DataFrame(rows, columns=["protocol", "model", "rate", "trial", param, "test_error", "val_error",
                                       "precision", "recall"])


def plot_lambda_sensitivity(grid: pd.DataFrame, path, param: str = "lam", method: str = "ROE"):
    """Test (solid) and validation (dashed) error vs ``param`` on a log axis, median over trials."""
    models = sorted(grid["model"].unique())
    rates = sorted(grid["rate"].unique())  # one colour per rate in every panel
    clean = grid[grid["rate"] == 0]  # clean cells are stored once; every panel gets them
    fig, axes = _model_axes(models)
    for model, ax in axes.items():
        sub = pd.concat([clean, grid[(grid["model"] == model) & (grid["rate"] > 0)]])
        for rate, block in sub.groupby("rate"):
            med = block.groupby(param)[["test_error", "val_error"]].median()
            lo = block.groupby(param)["test_error"].quantile(0.25)
            hi = block.groupby(param)["test_error"].quantile(0.75)
            color = f"C{rates.index(rate)}"
            ax.plot(med.index, med["test_error"], "o-", color=color, label=f"q={rate:g} test")
            ax.plot(med.index, med["val_error"], "--", color=color, alpha=0.7, label=f"q={rate:g} validation")
            ax.fill_between(med.index, lo, hi, color=color, alpha=0.15)
        ax.set_xscale("log")
        ax.set_xlabel(param)
        ax.set_title(f"{method}: {model}")
        ax.grid(alpha=0.3)
    next(iter(axes.values())).set_ylabel("error (median, IQR band)")
    next(iter(axes.values())).legend(fontsize=7)
    return _save(fig, path)


def plot_outlier_detection(df: pd.DataFrame, path, method: str = "ROE", protocol: str = "synthetic"):
    """Edge-level precision and recall of the flagged comparisons vs q (mean +- std), per model."""
    df = df[(df["protocol"] == protocol) & (df["method"] == method) & (df["rate"] > 0)]
    models = sorted(df["model"].unique())
    if not models:
        return None
    fig, axes = _model_axes(models)
    for model, ax in axes.items():
        s = df[df["model"] == model].groupby("rate")[["precision", "recall"]].agg(["mean", "std"])
        for metric, marker in (("precision", "o"), ("recall", "s")):
            ax.errorbar(s.index, s[(metric, "mean")], yerr=s[(metric, "std")].fillna(0.0), marker=marker,
                        capsize=3, label=metric)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("contamination rate q")
        ax.set_title(f"{method} outliers: {model}")
        ax.grid(alpha=0.3)
    next(iter(axes.values())).legend(fontsize=8)
    return _save(fig, path)


# ---------------------------------------------------------------------------
def write_report(store, out_dir, *, table_rates: Sequence[float] | None = (0.0, 0.25),
                 sensitivity_method: str = "ROE") -> dict:
    """Writes ``summary.csv``, ``tables.md`` and the figures into ``out_dir``; returns their paths."""
    store = store if isinstance(store, ResultStore) else ResultStore(store)
    out_dir = Path(out_dir)
    records = store.records()
    df = results_frame(records)
    written = {}
    if df.empty:
        return written
    summary = summary_table(df)
    with atomic_write(out_dir / "summary.csv") as fh:
        summary.to_csv(fh, index=False)
    written["summary"] = out_dir / "summary.csv"
    with atomic_write(out_dir / "tables.md") as fh:
        fh.write(markdown_tables(summary, table_rates))
    written["tables"] = out_dir / "tables.md"
    for protocol in df["protocol"].unique():
        if df.loc[df["protocol"] == protocol, "rate"].nunique() > 1:
            written[f"{protocol}_error_vs_rate"] = plot_error_vs_rate(
                df, out_dir / f"{protocol}_error_vs_rate.png", protocol)
        fig = plot_outlier_detection(df, out_dir / f"{protocol}_{sensitivity_method}_outliers.png",
                                     sensitivity_method, protocol)
        if fig is not None:
            written[f"{protocol}_outliers"] = fig
        grid = grid_frame([r for r in records if r["protocol"] == protocol], sensitivity_method)
        if not grid.empty:
            written[f"{protocol}_lambda"] = plot_lambda_sensitivity(
                grid, out_dir / f"{protocol}_{sensitivity_method}_lambda.png", method=sensitivity_method)
    return written


__all__ = ["grid_frame", "markdown_tables", "plot_error_vs_rate", "plot_lambda_sensitivity",
           "plot_outlier_detection", "results_frame", "summary_table", "write_report"]
