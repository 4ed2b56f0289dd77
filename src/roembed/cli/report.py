"""``roembed report``: one self-contained HTML file from a ``roembed fit`` output folder."""
from __future__ import annotations

from pathlib import Path

import click

from .._io import holds_working_folder, run_folder_problem
from . import main
from ._options import BadInput


def parse_axes(value: str | None):
    """``"1,3"`` (1-based, as the columns x1, x3) -> ``(0, 2)``."""
    if value is None:
        return None
    try:
        a, b = (int(v) for v in value.split(","))
    except ValueError:
        raise BadInput(f"--axes must be two coordinate numbers like 1,2, got {value!r}") from None
    return a - 1, b - 1


@main.command(short_help="Write an interactive HTML report of a fit's output folder.")
@click.argument("folder", type=click.Path(path_type=Path))
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="The HTML file to write [default: FOLDER/report.html].")
@click.option("--axes", default=None, help="Coordinates to show, e.g. 1,3 [default: 1,2, or the first two "
                                           "principal coordinates above 2 dimensions].")
@click.option("--thumbnails", type=click.Path(path_type=Path), default=None,
              help="Folder of images named after the objects (<name>.png/.jpg or <index>.png), shown on hover "
                   "and embedded in the file.")
@click.option("--labels", type=click.Path(path_type=Path), default=None,
              help="Table with a label per object (CSV/TSV) to colour the map by, as roembed fit --labels reads it "
                   "(the fit's own labels otherwise).")
@click.option("--label-column", default=None,
              help="Column of --labels to colour by [default: its one column that is not an index or names].")
@click.option("--title", default=None, help="Title of the page.")
@click.option("--max-comparisons", type=click.IntRange(min=1), default=None,
              help="Above this many comparisons keep each object's worst ones [default: 1,000,000].")
def report(folder, output, axes, thumbnails, labels, label_column, title, max_comparisons):
    """Write one HTML file (no server, no network) showing the fit in FOLDER.

    FOLDER is an output folder of ``roembed fit``.  The page shows the embedding
    (pan, zoom, hover; coloured by the labels given to the fit), and a click on an
    object lists and draws its comparisons with votes, opposing votes, gamma, flag
    and annotators; the outlier and annotator tables (click an annotator to see
    their comparisons), a searchable object table and the run's summary.  Exit
    code 2 when FOLDER holds no finished run or one from an older roembed.
    """
    problem = run_folder_problem(folder)  # before the library loads: a misspelt folder is told at once
    if problem:
        raise BadInput(problem)
    if joins_run(folder, output or folder / "report.html") and holds_working_folder(folder):
        raise BadInput(f"{folder}: is the working folder; the page joins its run by a swap of the whole folder, which "
                       "would leave this shell in a removed folder: run it from the folder above (cd .. && roembed "
                       f"report {folder.resolve().name}), or write the page elsewhere with --output FILE")
    from ._fit import check_label_options
    from ._report import collected_warnings, warning_lines

    check_label_options(labels, label_column)
    data = None
    if labels is not None:  # colours chosen after the fit, without fitting again
        data, notes = relabelled(folder, labels, label_column)
        for line in notes:
            click.echo(line, err=True)
    with collected_warnings() as caught:
        path = write_folder_report(folder, output, data=data, axes=parse_axes(axes), thumbnails=thumbnails,
                                   title=title, max_comparisons=max_comparisons)
    for line in warning_lines(caught):
        click.echo(line, err=True)
    click.echo(f"wrote {path}")


def relabelled(folder: Path, path: Path, column: str | None):
    """``(report data, notes)``: the run in ``folder`` read once, its objects labelled from the table at ``path``
    as ``roembed fit --labels`` labels them (by name, else by index: ``index0`` from 0, the others as the fit's
    ``--index-base``)."""
    from types import SimpleNamespace

    import numpy as np

    from ..report import RunFolderError, read_run
    from ._fit import read_labels
    from ._options import check_input_file

    check_input_file(path)
    try:
        data = read_run(folder)
    except RunFolderError as exc:
        raise BadInput(str(exc)) from None
    objects = data.objects
    base = int((data.summary.get("settings") or {}).get("index_base") or 0)
    codes = objects["object"].to_numpy() - base if np.issubdtype(objects["object"].dtype, np.integer) \
        else np.arange(len(objects))
    n = int(codes.max()) + 1
    names = [""] * n
    for code, name in zip(codes, objects["name"].astype(str)):
        names[code] = name
    fitted = SimpleNamespace(n_objects=n, object_names=names if any(names) else None,
                             used_objects=codes[objects["n_responses"].to_numpy() > 0])
    values, notes, column = read_labels(path, column, fitted, index_base=base)
    objects["label"] = [values[code] for code in codes]
    data.summary["label_column"] = column
    return data, notes


def joins_run(folder: Path, output: Path) -> bool:
    """Whether the page goes into the run's own folder, where it joins the run's set by a swap of the whole folder
    (:func:`add_to_run`)."""
    return folder.is_dir() and output.parent.resolve() == folder.resolve()


def write_folder_report(folder: Path, output: Path | None = None, data=None, **options) -> Path:
    """``roembed report`` as a function: bad folders and options become :class:`BadInput`.  ``data``: the
    folder's run already read (and relabelled, :func:`relabelled`), else it is read here."""
    from ..report import MAX_COMPARISONS, RunFolderError, write_report
    from ..report.page import AxesError

    options["max_comparisons"] = options.get("max_comparisons") or MAX_COMPARISONS
    output = output or folder / "report.html"
    source = folder if data is None else data
    try:
        if joins_run(folder, output):
            return add_to_run(folder, output.name, lambda path: write_report(source, path, **options))
        return write_report(source, output, **options)
    except RunFolderError as exc:
        raise BadInput(str(exc)) from None
    except AxesError as exc:  # in the option's own 1-based numbers
        given = f"--axes {exc.axes[0] + 1},{exc.axes[1] + 1}: the fit in {folder}"
        if exc.p == 1:
            raise BadInput(f"{given} has one coordinate, drawn across with the objects in its order up the page; "
                           "leave out --axes") from None
        raise BadInput(f"{given} has {exc.p} coordinates; give two different numbers from 1 to {exc.p}") from None
    except ValueError as exc:  # bad --thumbnails
        raise BadInput(str(exc)) from None
    except OSError as exc:  # a folder one may read, not write (a colleague's run, a read-only mount)
        reason = exc.strerror or str(exc).rsplit(": ", 1)[-1]
        elsewhere = "; --output FILE writes the page elsewhere" if joins_run(folder, output) else ""
        raise BadInput(f"{output}: cannot write ({reason}){elsewhere}") from None


def add_to_run(folder: Path, name: str, write) -> Path:
    """Adds the file ``name`` (written by ``write(path)``) to the run in ``folder`` as a new output set:
    the run's files hard-linked (copied where links fail) into a staging folder, the new file,
    ``summary.json`` listing it, then one swap (:class:`roembed._io.OutputSet`).  So the folder's
    promise holds: ``summary.json`` lists exactly its files, and an interrupted report leaves the
    run as it was."""
    import json
    import os
    import shutil

    from .._io import OutputSet
    from ._report import write_json

    output = OutputSet(folder)
    staging = output.open()
    try:
        write(staging / name)  # first: it checks that ``folder`` holds a finished run
        for entry in folder.iterdir():
            if entry.is_file() and not entry.name.startswith(".") and entry.name not in (name, "summary.json"):
                try:
                    os.link(entry, staging / entry.name)
                except OSError:
                    shutil.copy2(entry, staging / entry.name)
        summary = json.loads((folder / "summary.json").read_text())
        summary["files"] = sorted(set(summary.get("files") or []) | {name})
        write_json(summary, staging / "summary.json")
        output.commit()
    except BaseException:
        output.discard()
        raise
    return folder / name
