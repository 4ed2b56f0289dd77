"""Tables and figures from stored results, on known inputs."""
import numpy as np
import pandas as pd
import pytest

from roembed.experiments.report import (grid_frame, markdown_tables, results_frame, summary_table,
                                        write_report)
from roembed.experiments.runner import ResultStore


def _record(method, rate, trial, err, model="vote", status="ok", grid=(), precision=None):
    r = {"key": f"synthetic|{model}|{rate:g}|{trial}|{method}", "protocol": "synthetic", "model": model,
         "rate": rate, "trial": trial, "method": method, "seed": trial, "status": status}
    if status == "ok":
        r.update(test_error=err, val_error=err + 0.01, params={}, seconds=1.0, grid=list(grid),
                 outliers={} if precision is None else {"precision": precision, "recall": 1 - precision})
    else:
        r["error"] = "ValueError: boom"
    return r


ERRORS = {"ROE": [0.1, 0.2, 0.3, 0.4], "STE-p": [0.5, 0.5, 0.7, 0.9]}


def _records():
    recs = []
    for rate in (0.0, 0.25):
        for method, errs in ERRORS.items():
            for t, e in enumerate(errs):
                grid = [{"params": {"lam": lam}, "test_error": e + k / 100, "val_error": e, "precision": 0.5,
                         "recall": 0.5} for k, lam in enumerate((0.1, 1.0, 10.0))] if method == "ROE" else ()
                recs.append(_record(method, rate, t, e + rate, grid=grid,
                                    precision=0.8 if method == "ROE" and rate else None))
    recs.append(_record("GNMDS-p", 0.0, 0, None, status="error"))
    return recs


def test_summary_known_values():
    table = summary_table(results_frame(_records()))
    roe = table[(table["method"] == "ROE") & (table["rate"] == 0.0)].iloc[0]
    assert (roe["min"], roe["median"], roe["max"], roe["n_trials"]) == pytest.approx((0.1, 0.25, 0.4, 4))
    assert roe["std"] == pytest.approx(np.std([0.1, 0.2, 0.3, 0.4], ddof=1))
    ste = table[(table["method"] == "STE-p") & (table["rate"] == 0.25)].iloc[0]
    assert (ste["min"], ste["median"], ste["max"]) == pytest.approx((0.75, 0.85, 1.15))
    assert "GNMDS-p" not in set(table["method"])  # error records are not results
    assert list(table["method"][:2]) == ["ROE", "STE-p"]  # the paper's order


def test_results_frame_keeps_last_record_of_a_cell():
    recs = [_record("ROE", 0.0, 0, 0.3), _record("ROE", 0.0, 0, 0.2)]
    df = results_frame(recs)
    assert len(df) == 1 and df["test_error"].iloc[0] == 0.2


def test_markdown_layout():
    md = markdown_tables(summary_table(results_frame(_records())), rates=(0.25,))
    assert "clean" not in md and "25% contaminated" in md and "`vote`" in md
    assert "| method | min | median | max | std |" in md
    assert "| ROE | 0.3500 | 0.5000 | 0.6500 | 0.1291 |" in md
    assert "(4 trials)" in md


def test_a_run_without_the_tables_rates_tabulates_its_own():
    """``roembed reproduce synthetic --rates 0.1`` wrote an empty tables.md (the tables keep the paper's clean and
    25% rates); a summary with none of them is tabulated at every rate it has."""
    records = [r for r in _records() if r["rate"] == 0.25]
    for r in records:
        r["rate"] = 0.1
    md = markdown_tables(summary_table(results_frame(records)))
    assert "10% contaminated" in md and "| ROE | 0.3500 | 0.5000 | 0.6500 | 0.1291 |" in md
    assert "clean" not in markdown_tables(summary_table(results_frame(_records())), rates=(0.25,))


def test_grid_frame():
    g = grid_frame(_records(), "ROE")
    assert len(g) == 2 * 4 * 3 and set(g["lam"]) == {0.1, 1.0, 10.0}


def test_write_report_files(tmp_path):
    store = ResultStore(tmp_path / "results.jsonl")
    for r in _records():
        store.append(r)
    written = write_report(store, tmp_path / "out")
    for key in ("summary", "tables", "synthetic_error_vs_rate", "synthetic_outliers", "synthetic_lambda"):
        assert written[key].stat().st_size > 0, key
    csv = pd.read_csv(written["summary"])
    assert set(csv.columns) >= {"protocol", "model", "rate", "method", "min", "median", "max", "std"}
    assert not list((tmp_path / "out").glob(".*.tmp")) and not list((tmp_path / "out").glob(".*png"))
    assert write_report(ResultStore(tmp_path / "empty.jsonl"), tmp_path / "none") == {}


def test_lambda_figure_shows_clean_curve_in_every_panel(tmp_path, monkeypatch):
    """Clean cells are stored once (under `vote`); every model's panel still gets them, in one colour."""
    from roembed.experiments import report

    recs = _records() + [_record("ROE", 0.25, 0, 0.3, model="unanimous",
                                 grid=[{"params": {"lam": lam}, "test_error": 0.3, "val_error": 0.3}
                                       for lam in (0.1, 1.0, 10.0)])]
    figures = []
    monkeypatch.setattr(report, "_save", lambda fig, path: figures.append(fig) or path)
    report.plot_lambda_sensitivity(grid_frame(recs, "ROE"), tmp_path / "lam.png")
    for ax in figures[0].axes:
        lines = {line.get_label(): line.get_color() for line in ax.get_lines()}
        assert {"q=0 test", "q=0.25 test"} <= set(lines), ax.get_title()
    colours = [{line.get_label(): line.get_color() for line in ax.get_lines()}["q=0 test"] for ax in figures[0].axes]
    assert len(set(colours)) == 1
