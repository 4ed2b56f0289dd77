"""``roembed fit``: embed a comparisons file, report outliers and annotators.

The command's options live here and its work in :mod:`roembed.cli._fit`, imported when the command runs: ``roembed
--help`` and ``roembed fit --help`` load neither pandas nor scikit-learn (a few tenths of a second instead of
several)."""
from __future__ import annotations

from pathlib import Path

import click

from . import main
from ._options import METHODS, DimensionType, FiniteFloatRange, FolderPath, JobsType, MethodChoice, init_path, input_paths


@main.command(short_help="Embed a comparisons file; report outliers and suspect annotators.")
@click.argument("comparisons", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--dim", type=DimensionType(), default=2, show_default=True,
              help="Embedding dimension, or 'auto': chosen by 5-fold grouped cross-validation "
                   "(one-standard-error rule; writes dimensions.csv and dimensions.png).")
@click.option("--out", "-o", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Output folder (created if missing).")
@click.option("--encoding", default="utf-8", show_default=True,
              help="Text encoding of the input files (e.g. latin-1, cp1252, utf-16).")
@click.option("--columns", default=None,
              help="Column names for a file without a header, comma-separated (e.g. "
                   "a,b,c,odd_position,annotator), or renames old=new of a file's own columns (e.g. "
                   "rater=annotator; old= drops a column).")
@click.option("--odd-position-base", type=click.Choice(["0", "1"]), default="0", show_default=True,
              help="The first position's number in an odd_position column: 0 (positions 0, 1, 2) or 1 "
                   "(1, 2, 3, as in THINGS' exports).")
@click.option("--index-base", type=click.Choice(["0", "1"]), default="0", show_default=True,
              help="The first object index's number in the file: 0, or 1 (MATLAB, THINGS); embedding.csv keeps the "
                   "file's numbers (as the names too, when there is no --names; i, j, l, k in comparisons.csv and "
                   "outliers.csv are rows of embedding.csv, counted from 0), and --names gives the names of objects "
                   "1, 2, ... in order.")
@click.option("--names", type=click.Path(path_type=Path),
              help="Object names: one per line, or a table whose first name column with distinct names gives them "
                   "(in the order of its index0, index1, index or object column, if any).")
@click.option("--method", type=MethodChoice(sorted(METHODS)), default="robust", show_default=True,
              help="robust: the flagship robust estimator; roe: the paper's ROE; the others are the "
                   "classic non-robust losses (no outliers.csv / annotators.csv).")
@click.option("--loss", default=None, help="Loss of the robust estimator (soe, ste, tste, gnmds, ckl, roe).")
@click.option("--lam", default="auto", show_default=True,
              help="Outlier penalty of robust/roe: a positive number (smaller flags more), or 'auto' for the "
                   "estimator's default (robust: chosen from the residual scale of a plain fit, and the "
                   "flags are the comparisons the final map contradicts, with a margin over 2 robust standard "
                   "deviations below the median).")
@click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=0, show_default=True,
              help="Random seed (start and hold-out split).")
@click.option("--holdout", type=FiniteFloatRange(0.0, 0.9), default=0.0, show_default=True,
              help="Fraction of the comparisons held out to measure the error (whole sets of objects: every "
                   "comparison among the same objects on one side; printed with its "
                   "95% interval; a warning where that reaches 0.5, chance).")
@click.option("--test", "test_file", type=click.Path(path_type=Path), default=None,
              help="Held-out comparisons in a file of their own, read like COMPARISONS; objects are matched "
                   "to the training file's by name, or by index when it has none. Their error is reported "
                   "(instead of --holdout). A comparison of an object that no training comparison shows is an "
                   "error (--skip-invalid drops and reports it).")
@click.option("--init", "init_file", type=click.Path(path_type=Path), default=None,
              help="An earlier run's embedding.csv (or its output folder) to start from (the only start, unless "
                   "it places under half of the objects): objects matched by name, or by number where the file "
                   "has no names; objects it lacks start at its centre. For refitting as responses accrue; robust "
                   "methods, a fixed --dim.")
@click.option("--max-iter", type=click.IntRange(min=1), default=None,
              help="Iteration limit of each solve (default: the method's own, 3000 for robust, 1000 for roe, "
                   "2000 for the others).")
@click.option("--device", default="cpu", show_default=True,
              help="Where the robust fit runs: cpu (NumPy), or a torch device such as cuda or cuda:1 "
                   "(needs PyTorch; float32, the objective through Triton's kernels on CUDA).")
@click.option("--n-init", type=click.IntRange(min=1), default=None,
              help="Starts of the first fit, the lowest objective kept; the final fit also runs from up to two other "
                   "distinct minima and keeps a clearly lower final objective (default: 20 for --dim 1, 10 for "
                   "--dim 2, else 1).")
@click.option("--annotator-rounds", type=click.IntRange(min=0), default=0, show_default=True,
              help="Rounds of down-weighting unreliable annotators and refitting (needs annotator ids).")
@click.option("--labels", type=click.Path(path_type=Path),
              help="Table with a label per object (CSV/TSV), to colour the embedding plot.")
@click.option("--label-column", default=None,
              help="Column of --labels to colour by [default: its one column that is not an index or names].")
@click.option("--skip-invalid", is_flag=True,
              help="Drop invalid rows (reporting how many and the first few) instead of stopping at the first.")
@click.option("--bootstrap", "n_bootstrap", type=click.IntRange(min=0), default=0, show_default=True,
              help="Bootstrap replicates (0: none): per-object 90% regions and stability (uncertainty.csv, "
                   "uncertainty.png), flag frequencies, annotator intervals.")
@click.option("--bootstrap-unit", type=click.Choice(["query", "annotator", "object", "object_set",
                                                          "query+annotator"]),
              default="query", show_default=True, help="What the bootstrap resamples (object_set: every "
                                                       "comparison among the same objects together).")
@click.option("--bootstrap-store", type=FolderPath(), default=None,
              help="Folder keeping each finished bootstrap replicate (outside --out): rerunning the same "
                   "command resumes an interrupted run; a larger --bootstrap extends it.")
@click.option("--jobs", type=JobsType(), default=1, show_default=True,
              help="Parallel processes for --bootstrap and --dim auto (-1: all cores).")
@click.option("--svg", is_flag=True, help="Also write the plots as SVG.")
@click.option("--report", "html_report", is_flag=True,
              help="Also write report.html: the interactive report of `roembed report`.")
@click.option("--quiet", "-q", is_flag=True, help="Print nothing but errors and skipped-row reports.")
@click.option("--verbose", "-v", is_flag=True, help="Also print the suspect annotators and each reweighting round.")
def fit(**options):
    """Learn an embedding from the comparisons in COMPARISONS (CSV/TSV/JSON/Parquet/Feather, or one array
    in .mat/.npy/.npz; several files with the same columns are read as one; .gz, .bz2, .xz and
    one-file .zip work; - reads standard input).

    The format is detected from the columns: triplets (anchor, closer, farther),
    quadruplets (i, j, l, k), odd-one-out answers (a, b, c and odd: the odd object, or
    odd_position: 0, 1 or 2, or 1, 2 or 3 with --odd-position-base 1), or salmon/NEXT
    responses (head, left, right, winner; the head also as anchor, query, center, ..., the winner as choice,
    chosen, answer, ...), with
    optional annotator (or puid, worker_id, ...), weight and tie columns; other columns
    are kept and listed per flagged comparison in outliers.csv.  Writes to OUT: embedding.csv,
    comparisons.csv (every comparison with its votes, gamma and flag),
    outliers.csv (flagged comparisons with votes, annotators and gamma),
    annotators.csv (when the file has annotator ids), summary.json, the plots
    embedding.png, outliers.png, annotators.png, and with --report report.html
    (see `roembed report`); --dim auto adds dimensions.csv/.png, --bootstrap N adds
    uncertainty.csv/.png, flag_frequency.csv/.png and annotator_intervals.csv.
    Exit code 2 on bad input.
    """
    inputs = ("comparisons", "names", "labels", "test_file")
    options.update(zip(inputs, input_paths(*(options[key] for key in inputs))))
    options["init_file"] = init_path(options["init_file"])
    from ._fit import run  # the library loads here

    run(**options)
