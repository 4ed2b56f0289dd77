"""Size and speed of the HTML report: file size, time to write it, and time until the page
answers clicks in headless Chromium, for 10^3, 10^4 and 10^5 objects.

Data: ``n`` objects at random 2-D positions, ``100 n`` random triplets (one vote each, from
one of 200 annotators; 10% flagged with a random gamma).  No fit is run -- the report only
reads the fitted attributes, and ``bench_scale.py`` times the fit; the fake fit has exactly
the attributes of a robust one (``embedding_``, ``graph_``, ``gamma_``, ``outlier_mask_``).
Above ``roembed.report.MAX_COMPARISONS`` (10^6) the report keeps each object's worst
comparisons, so 10^5 objects (10^7 comparisons) are summarised.

Per size: ``write_s`` (``write_report``, Python), ``MB`` (the file), ``load_s`` (navigation
to Bokeh's document idle -- every view rendered, clicks answered -- by the page's clock,
median of ``--runs`` loads, each in a fresh browser), ``click_ms`` (the tap callback on the object
with the most comparisons: listing and drawing them, median), and the load average.

    python benchmarks/bench_report.py                 # 10^3, 10^4, 10^5 objects
    python benchmarks/bench_report.py --sizes 1000    # quick
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from _results import finish

HERE = Path(__file__).resolve().parent


class FakeFit:
    """The fitted attributes the report reads, for random data."""

    def __init__(self, n: int, m: int, seed: int, n_annotators: int = 200):
        from roembed.data import Comparisons

        rng = np.random.default_rng(seed)
        t = rng.integers(0, n, size=(int(1.05 * m), 3))
        t = t[(t[:, 0] != t[:, 1]) & (t[:, 0] != t[:, 2]) & (t[:, 1] != t[:, 2])][:m]
        names = [f"object {o}" for o in range(n)]
        annotator = rng.integers(0, n_annotators, size=len(t))
        self.graph_ = Comparisons(t, n_objects=n, annotator=annotator, object_names=names).aggregate()
        self.embedding_ = rng.normal(size=(n, 2))
        flagged = rng.random(len(self.graph_)) < 0.1
        self.gamma_ = np.where(flagged, rng.exponential(size=len(self.graph_)), 0.0)
        self.outlier_mask_ = flagged
        self.object_names_ = names
        self.n_objects_ = n
        votes = np.bincount(annotator, minlength=n_annotators)
        self.table = pd.DataFrame({"annotator": np.arange(n_annotators), "n_votes": votes,
                                   "agreement": rng.uniform(0.5, 1, n_annotators), "suspect": False})


def measure(n: int, runs: int, folder: Path) -> dict:
    from roembed.report import write_report
    from roembed.report.browser import open_report, start_chrome

    m = 100 * n
    made = time.perf_counter()
    fit = FakeFit(n, m, seed=n)
    made = time.perf_counter() - made
    path = folder / f"report-{n}.html"
    started = time.perf_counter()
    write_report(fit, path, annotators=fit.table, summary={"n_objects": n, "n_edges": len(fit.graph_)})
    write_s = time.perf_counter() - started
    busiest = int(np.argmax(np.bincount(fit.graph_.edges[:, [0, 1, 3]].reshape(-1), minlength=n)))
    loads, clicks = [], []
    for run in range(runs):  # a fresh browser per load: nothing cached
        chrome = start_chrome(network_log=False)
        try:
            loads.append(open_report(chrome, path))
            clicks.append(chrome.execute_script(
                "const s = Bokeh.documents[0].get_model_by_name('objects'); s.selected.indices = [];"
                "const t0 = performance.now(); s.selected.indices = [arguments[0]];"
                "return performance.now() - t0;", busiest))
            shown = chrome.execute_script("return Bokeh.documents[0].get_model_by_name('shown').data.edge.length")
        finally:
            chrome.quit()
        print(f"  n={n} load {run + 1}: {loads[-1]:.2f} s, click {clicks[-1]:.0f} ms", flush=True)
    return {"n_objects": n, "n_comparisons": len(fit.graph_), "data_s": made, "write_s": write_s,
            "MB": path.stat().st_size / 1e6, "load_s": float(np.median(loads)), "load_runs": loads,
            "click_ms": float(np.median(clicks)), "clicked_rows": shown,
            "summarised": "too many to include" in path.read_text(encoding="utf-8"),
            "loadavg": os.getloadavg()[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--runs", type=int, default=3, help="page loads per size (median)")
    parser.add_argument("--keep", type=Path, default=None, help="folder to keep the reports in")
    parser.add_argument("--out", type=Path, default=HERE / "out" / "bench_report.json")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for n in args.sizes:
            rows.append(measure(n, args.runs, folder))
            print({k: v for k, v in rows[-1].items() if k != "load_runs"}, flush=True)
    finish(args.out, args, rows, rows, {"n_objects": ",", "n_comparisons": ",", "summarised": "", "write_s": ".1f",
                                        "MB": ".1f", "load_s": ".2f", "click_ms": ".0f", "loadavg": ".1f"})


if __name__ == "__main__":
    main()
