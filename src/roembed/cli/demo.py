"""``roembed demo``: the main job on built-in data (the paper's synthetic protocol)."""
from __future__ import annotations

import time
from pathlib import Path

import click

from . import main
from ._options import FiniteFloatRange


@main.command()
@click.option("--out", "-o", type=click.Path(file_okay=False, path_type=Path), default=Path("roembed-demo"),
              show_default=True, help="Folder for the plots, tables and summary.json.")
@click.option("--model", type=click.Choice(["spammers", "unanimous", "majority", "vote"]), default="spammers",
              show_default=True, help="Contamination model of the synthetic data.")
@click.option("--rate", type=FiniteFloatRange(0.0, 1.0), default=0.25, show_default=True,
              help="Contamination rate (share of spammers / of contaminated triplets / of flipped votes).")
@click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=0, show_default=True, help="Seed of the data and the fit.")
@click.option("--top", type=click.IntRange(min=0), default=10, show_default=True,
              help="How many suspicious comparisons to print.")
@click.option("--svg", is_flag=True, help="Also write the plots as SVG.")
@click.option("--report", "html_report", is_flag=True,
              help="Also write report.html: the interactive report of `roembed report`.")
@click.option("--quiet", "-q", is_flag=True, help="Print only the results.")
def demo(out, model, rate, seed, top, svg, html_report, quiet):
    """Fit the robust estimator to contaminated synthetic comparisons.

    The data follow Ma, Xu & Cao (2019): 100 objects in 10 dimensions, 10,000
    training triplets answered 15-50 times each by 100 annotators, with 25% of
    the annotators spammers (default) or 25% of the triplets answered wrongly by
    everyone (--model unanimous).  Prints the held-out triplet error (on every
    other triplet), the most suspicious comparisons and, for spammers, the
    annotators found; writes plots and tables to OUT.
    """
    from ._report import open_output  # the library loads when the command runs, not for `roembed --help`

    started = time.perf_counter()
    output = open_output(out)  # fails now, not after the fit, when --out cannot be written
    try:
        files = _demo(output.folder, model, rate, seed, top, svg, quiet, started, html_report)
        output.commit()
    except BaseException:
        output.discard()
        raise
    click.echo(f"wrote {', '.join(files)} to {out}")


def _demo(folder, model, rate, seed, top, svg, quiet, started, html_report=False):
    from ..experiments import make_synthetic
    from ..metrics import contradicted, outlier_precision_recall, set_precision_recall
    from ..report.data import OUTPUT_FORMAT
    from ._report import chosen_params, collected_warnings, describe_choice, describe_comparison, make_estimator, \
        progress, warning_lines, write_json, write_results

    data = make_synthetic(rate=rate, model=model, random_state=seed)
    click.echo(f"data: {data.train!r} ({model} contamination at rate {rate:g}); "
               f"{len(data.test)} held-out test triplets")
    estimator = make_estimator("robust", 10, seed=seed)
    fit_started = time.perf_counter()
    with collected_warnings() as caught, progress(not quiet, "fit"):  # Python printed them with its source line
        estimator.fit(data.train)
    fit_seconds = time.perf_counter() - fit_started
    test_error = 1.0 - estimator.score(data.test)
    # ground truth: a comparison (edge) is contaminated when the true points contradict it
    wrong_edge = contradicted(data.X_true, estimator.graph_.edges)
    flagged = estimator.outlier_mask_
    scores = outlier_precision_recall(flagged, wrong_edge)
    precision, recall = scores["precision"], scores["recall"]
    click.echo(f"fitted {type(estimator).__name__} in {fit_seconds:.1f} s: "
               f"held-out triplet error {test_error:.4f}")
    if describe_choice(estimator):
        click.echo(describe_choice(estimator))
    for line in warning_lines(caught):
        click.echo(line, err=True)
    # nan read as a failure where nothing was flagged or nothing planted (--rate 0)
    click.echo(f"flagged {flagged.sum()} of {len(flagged)} comparisons; against the planted truth: precision "
               + (f"{precision:.3f}" if flagged.any() else "- (nothing flagged)") + ", recall "
               + (f"{recall:.3f}" if wrong_edge.any() else "- (nothing planted)"))
    if top:
        click.echo("most suspicious comparisons (largest outlier shift gamma):")
        for _, row in estimator.outliers_.head(top).iterrows():
            truth = "contaminated" if wrong_edge[int(row["edge"])] else "actually true"
            click.echo(f"  {describe_comparison(row, None):<40} votes {row['votes']:4.0f} vs "
                       f"{row['opposing_votes']:4.0f}  gamma {row['gamma']:.3f}  [{truth}]")
    files, table = write_results(estimator, folder, formats=("png", "svg") if svg else ("png",))
    summary = {"output_format": OUTPUT_FORMAT, "input": f"synthetic data ({model}, rate {rate:g}, seed {seed})",
               "estimator": "robust", "model": model, "rate": rate, "seed": seed, "test_error": test_error,
               "outlier_precision": precision, "outlier_recall": recall,
               "n_flagged": int(flagged.sum()), "n_edges": len(flagged), "lam_used": estimator.lam_,
               "chosen": chosen_params(estimator)}
    if table is not None and len(data.spammers):
        found = set(table.loc[table["suspect"], "annotator"].tolist())
        planted = set(data.spammers.tolist())
        found_scores = set_precision_recall(found, planted)
        summary.update(spammer_precision=found_scores["precision"], spammer_recall=found_scores["recall"])
        click.echo(f"suspect annotators: {sorted(found)}; planted spammers: {sorted(planted)} "
                   f"(precision {summary['spammer_precision']:.2f}, recall {summary['spammer_recall']:.2f})")
    summary.update(fit_seconds=round(fit_seconds, 2), seconds=round(time.perf_counter() - started, 2))
    summary["files"] = sorted({p.name for p in files} | {"summary.json"} | ({"report.html"} if html_report else set()))
    write_json(summary, folder / "summary.json")
    if html_report:
        from ..report import write_report

        write_report(folder, folder / "report.html")  # from the folder, as roembed fit --report
    return summary["files"]
