"""What ``roembed fit`` does (its options are in :mod:`roembed.cli.fit`, which imports this module only when the
command runs, so that ``roembed --help`` loads neither pandas nor scikit-learn)."""
from __future__ import annotations

import filecmp
import time
from pathlib import Path

import click
import numpy as np
import pandas as pd

from ..data import InvalidComparisonsError
from ..metrics import describe_flags_by_vote, flags_by_vote, triplet_error
from ..model_selection import holdout_split, object_sets
from ..report.data import OUTPUT_FORMAT, total_weight
from ..data.diagnostics import object_groups
from ..data.io import NAME_COLUMNS, NAME_ID_COLUMNS, id_base, read_text
from ..data.validation import count_noun
from ..estimators.base import table_rows
from ._uncertainty import describe_bootstrap, write_bootstrap, write_dimension_selection
from ._options import BadInput
from ._report import chosen_params, collected_warnings, describe_choice, \
    has_outliers, make_estimator, open_output, parse_lam, progress, versions, warning_lines, write_json, write_results


TRAIN_ERROR_HINT = "on the answers fitted; --holdout 0.2 measures the error on new ones"
"""Said after the training error where no answers were held out.  Measured on synthetic single answers (forty-seventh
session, docs/cli.md): the default's error on new answers exceeded its training error by 0.14-0.18 at 5-5.4 queries
per free coordinate, 0.09 at 8, 0.12 at 10.6 with a quarter flipped, and 0.03 at 21."""


def holdout_interval(estimator, test) -> list[float]:
    """The 95% Wilson interval of the held-out error, sets of objects as the sample size (as ``--holdout`` holds
    out; :func:`roembed.metrics.triplet_error`), objects matched by name as ``score`` matches them."""
    error = triplet_error(estimator.embedding_, estimator._query(test), unit="object_set")
    return [error.low, error.high]


def read_names_file(path: Path, encoding: str = "utf-8", index_base: int = 0):
    """Object names from ``--names`` (:func:`roembed.data.io.names_from_text`), its problems as :class:`BadInput`."""
    from ..data.io import names_from_text

    text = _small_text(path, encoding)
    try:
        return list(names_from_text(text, path, index_base))
    except InvalidComparisonsError as exc:
        raise BadInput(str(exc)) from None


def _small_table(text: str, path: Path) -> pd.DataFrame:
    """:func:`roembed.data.io.small_table`, its problems as :class:`BadInput`."""
    from ..data.io import small_table

    try:
        return small_table(text, path)
    except InvalidComparisonsError as exc:
        raise BadInput(str(exc)) from None


def read_input(paths: list[Path], names: Path | None, skip_invalid: bool, encoding: str = "utf-8", columns=None,
               odd_position_base: int = 0, index_base: int = 0):
    """Reads comparisons in any format :func:`roembed.data.io.read_comparisons` detects, from one
    file or several (``columns``: :func:`parse_columns`'s list or dict; ``odd_position_base`` and
    ``index_base`` as the reader takes them); returns them and the reader's warnings as lines."""
    from ..data.io import read_comparisons
    from ..data.validation import InvalidComparisonsError, InvalidRowsError

    source = source_text(paths)
    try:
        with collected_warnings() as caught:
            data, report = read_comparisons(paths if len(paths) > 1 else paths[0],
                                            names=None if names is None
                                            else read_names_file(names, encoding, index_base),
                                            on_invalid="skip" if skip_invalid else "raise", encoding=encoding,
                                            columns=columns, odd_position_base=odd_position_base,
                                            index_base=index_base, return_report=True)
    except (InvalidComparisonsError, ValueError, KeyError, OSError, UnicodeDecodeError, ImportError) as exc:
        message = str(exc).strip("'\"") if isinstance(exc, KeyError) else str(exc)  # KeyError quotes its text
        if not any(str(p.name) in message for p in paths):
            message = f"{source}{' line 1' if 'columns' in message else ''}: {message}"
        if isinstance(exc, InvalidRowsError) and not skip_invalid:
            message += " (--skip-invalid drops invalid rows and reports them)"
        raise BadInput(message) from None
    if report.n_skipped:
        click.echo(str(report), err=True)  # never dropped quietly, even with --quiet
    return data, warning_lines(caught, source, [p.name for p in paths])


def parse_columns(value: str | None):
    """``--columns``: None, a list of names (a file without a header) or a dict of renames ``old=new``
    (``old=``: drop the column), as :func:`roembed.data.io.read_comparisons` takes them."""
    if value is None:
        return None
    items = [item.strip() for item in value.split(",")]
    renames = ["=" in item for item in items]
    if any(renames) and not all(renames):
        raise BadInput(f"--columns {value!r}: either names for a file without a header (a,b,c) or renames "
                       "(old=new,...), not both")
    if all(renames):
        pairs = [item.split("=", 1) for item in items]
        if any(not old.strip() for old, _ in pairs):
            raise BadInput(f"--columns {value!r}: a rename needs the old name before '='")
        return {old.strip(): new.strip() or None for old, new in pairs}
    if not all(items):
        raise BadInput(f"--columns {value!r}: an empty column name")
    return items


def source_text(paths: list[Path]) -> str:
    return str(paths[0]) if len(paths) == 1 else f"{paths[0]} (+{len(paths) - 1} more)"


def _small_text(path: Path, encoding: str) -> str:
    """A names or labels file, read whole in one pass (a pipe works too) and decoded as comparisons are."""
    try:
        return read_text(path, encoding)
    except UnicodeDecodeError:
        raise BadInput(f"{path}: not {encoding} text; give its encoding with --encoding (e.g. latin-1)") from None
    except OSError as exc:
        raise BadInput(f"{path}: cannot read it ({exc.strerror or exc})") from None


def read_labels(path: Path, column: str | None, comparisons, encoding: str = "utf-8",
                index_base: int = 0) -> tuple[list[str], list[str], str]:
    """``(labels, notes, column)``: one label per object from a CSV/TSV, warning lines when objects that have
    comparisons have no row (they are drawn as unlabelled; a table that spells the names otherwise matches few)
    or several rows that disagree (the first counts), and the column read.  Rows are matched to objects by a
    column of object names (the one matching most names) or else by an integer index column
    (``index0``/``index1``/``index``/``object``, else the first column; ``index0`` counts from 0 and ``index1``
    from 1 whatever the comparisons do, the others as the comparisons do, as ``embedding.csv``'s ``object``; the
    numbers such comparisons keep as names are no names to match).  Without ``column``,
    the one column that is neither of these nor a names column is read (``index0, name, genres``: genres); with
    two or more, the user names one.  Multi-valued labels (``"rock;pop"``) keep their first value."""
    table = _small_table(_small_text(path, encoding), path)
    if column is not None and column not in table.columns:
        raise BadInput(f"{path} line 1: no column {column!r} (columns: {', '.join(table.columns)})")
    n = comparisons.n_objects
    shown = names = comparisons.object_names
    if index_base and names is not None and list(names) == [str(o + index_base) for o in range(n)]:
        names = None  # the file's numbers, kept as names by the reader: matched as an index below
    key, by_name = None, False
    if names is not None:
        wanted = set(names)
        # index0 and index1 count as they say whatever the file does: never names, even where --index-base 1 made
        # "1", "2"... names
        fixed = {k for k, base in NAME_ID_COLUMNS.items() if base is not None}
        hits = {c: table[c].isin(wanted).sum() for c in table.columns if c != column and c.strip().lower() not in fixed}
        if hits and max(hits.values()) > 0:
            key, by_name = max(hits, key=hits.get), True
    if key is None:
        key = next((c for c in INDEX_COLUMNS if c in table.columns), table.columns[0])
    if column is None:
        column = _label_column(path, table, key)
    notes = _conflicting_rows(path, table, key, column)
    if by_name:
        lookup = dict(zip(table[key][::-1], table[column][::-1]))  # an object's first row counts
        values = [lookup.get(name, "") for name in names]
        has_row = np.isin(np.asarray(names, dtype=object), table[key].to_numpy(dtype=object))
    else:
        base = id_base(key, index_base)
        index = pd.to_numeric(table[key], errors="coerce") - base
        bad = index.isna() | (index < 0) | (index >= n) | (index != index.round())
        if bad.any():
            r = int(np.flatnonzero(bad.to_numpy())[0])
            named = "neither one of the objects' names nor " if names is not None else ""  # no name matched
            raise BadInput(f"{path} line {r + 2}: {key} {table[key].iloc[r]!r} is {named or 'not '}an object index in "
                           f"{base}..{n - 1 + base}")
        values = [""] * n
        for o, v in zip(index.astype(int)[::-1], table[column][::-1]):  # an object's first row counts
            values[o] = v
        has_row = np.isin(np.arange(n), index.astype(int).to_numpy())
    used = comparisons.used_objects
    rowless = used[~has_row[used]]
    if len(rowless):
        examples = ", ".join(str(shown[o]) if shown is not None else str(o) for o in rowless[:5])
        notes.append(f"warning: {path}: {len(rowless)} of the {len(used)} objects with comparisons have no row in "
                     f"its {key} column (e.g. {examples}{', ...' if len(rowless) > 5 else ''}): drawn unlabelled")
    return [_first_label(v) for v in values], notes, column


def _first_label(value: str) -> str:
    return value.split(";")[0].strip()


def _conflicting_rows(path: Path, table: pd.DataFrame, key: str, column: str) -> list[str]:
    """A warning line when an object has several rows whose labels differ (a table of one row per image or per
    rater): the last row silently won; now the first does, and the line says so."""
    labels = table[column].map(_first_label)
    spread = labels.groupby(table[key], sort=False).nunique()
    differ = spread.index[spread > 1]
    if not len(differ):
        return []
    example = differ[0]
    seen = list(dict.fromkeys(labels[table[key] == example]))
    objects = f"{len(differ)} objects have" if len(differ) > 1 else "1 object has"
    return [f"warning: {path}: {objects} rows with different {column} (e.g. {example}: "
            f"{', '.join(seen[:3])}{', ...' if len(seen) > 3 else ''}): each object's first row is used"]


INDEX_COLUMNS = tuple(NAME_ID_COLUMNS)


def check_label_options(labels, label_column) -> None:
    """``--label-column`` names a column of ``--labels`` (fit and report)."""
    if label_column is not None and labels is None:
        raise BadInput(f"--label-column {label_column} names a column of --labels, which is missing")


def _label_column(path: Path, table: pd.DataFrame, key: str) -> str:
    """The labels table's one column that is not the rows' key, an index or a names column, for ``--labels``
    without ``--label-column``."""
    not_labels = {*INDEX_COLUMNS, *NAME_COLUMNS} - {"label"}
    others = [c for c in table.columns if c != key and c.strip().lower() not in not_labels]
    if len(others) == 1:
        return others[0]
    if not others:
        raise BadInput(f"{path} line 1: no column of labels beside {', '.join(table.columns)}")
    raise BadInput(f"{path}: which column labels the objects? give --label-column, one of {', '.join(others)}")


def run(comparisons, dim, out, encoding, columns, odd_position_base, index_base, names, method, loss, lam, seed,
        holdout, test_file, init_file, max_iter, device, n_init, annotator_rounds, labels, label_column, skip_invalid,
        n_bootstrap, bootstrap_unit, bootstrap_store, jobs, svg, html_report, quiet, verbose):
    """The command ``roembed fit`` with its options' values (see :func:`roembed.cli.fit.fit`), its input paths
    already checked (:func:`roembed.cli._options.input_paths`)."""
    started = time.perf_counter()
    if test_file is not None and holdout > 0:
        raise BadInput(f"--test {test_file} and --holdout {holdout:g}: give one or the other")
    check_test_is_not_training(test_file, comparisons)
    check_label_options(labels, label_column)
    lam = parse_lam(lam)
    columns = parse_columns(columns)
    if n_bootstrap == 1:
        raise BadInput("--bootstrap 1: a bootstrap needs at least 2 replicates")
    if n_bootstrap and annotator_rounds:
        raise BadInput("--bootstrap cannot be combined with --annotator-rounds (replicates are not reweighted)")
    if bootstrap_store is not None and not n_bootstrap:
        raise BadInput("--bootstrap-store goes with --bootstrap N")
    if bootstrap_unit != "query" and not n_bootstrap:
        raise BadInput(f"--bootstrap-unit {bootstrap_unit} goes with --bootstrap N")
    if bootstrap_store is not None and bootstrap_store.resolve().is_relative_to(out.resolve()):
        raise BadInput(f"--bootstrap-store {bootstrap_store}: must lie outside --out {out} "
                       "(each run replaces the output folder as a whole)")
    extras = dict(n_bootstrap=n_bootstrap, bootstrap_unit=bootstrap_unit, bootstrap_store=bootstrap_store, jobs=jobs,
                  columns=columns, odd_position_base=int(odd_position_base), index_base=int(index_base),
                  test_file=test_file, init_file=init_file)
    say = (lambda *a, **k: None) if quiet else click.echo
    estimator = make_estimator(method, dim, seed=seed, lam=lam, loss=loss, max_iter=max_iter, n_init=n_init,
                               device=device, init=init_file)
    if init_file is not None and dim == "auto":
        raise BadInput(f"--init {init_file} starts a map of a fixed dimension: give --dim, not auto")
    if annotator_rounds and not hasattr(estimator, "_store_outliers"):
        raise BadInput(f"--annotator-rounds does not apply to --method {method} (only to robust, roe: "
                       "it scores annotators by the outliers they flag)")
    output = open_output(out)  # fails now, not after the fit, when --out cannot be written
    try:
        summary = _fit_and_write(output.folder, list(comparisons), encoding, dim, names, method, loss, lam, seed, holdout, max_iter,
                                 annotator_rounds, labels, label_column, skip_invalid, svg, verbose, quiet,
                                 estimator, started, html_report=html_report, **extras)
        output.commit()
    except BaseException:
        output.discard()
        raise
    say(f"wrote {', '.join(summary['files'])} to {out}")


def read_init(path: Path, data, object_ids: np.ndarray, index_base: int, dim: int) -> tuple[pd.DataFrame, int]:
    """``(start, placed)``: ``--init``, an earlier run's ``embedding.csv``, matched to the objects now
    (:func:`roembed.estimators.base.table_rows`; where they are numbered, its ``object`` column holds the file's
    numbers, ``--index-base`` and all), as a table of the coordinates indexed by the rows of this fit, and how many
    of the objects it places."""
    try:
        table = pd.read_csv(path, sep=None, engine="python", dtype={"name": str}, keep_default_na=False,
                            na_values={"object": [""]})  # sep=None: a comma, or the semicolon of a spreadsheet
    except (OSError, ValueError, UnicodeDecodeError, pd.errors.ParserError) as exc:
        raise BadInput(f"--init {path}: not a table ({' '.join(str(exc).split())})") from None
    if not len(table):
        raise BadInput(f"--init {path}: no rows")
    file_named = "name" in table.columns and (table["name"] != "").any()
    if file_named != (data.object_names is not None):
        raise BadInput(f"--init {path}: " + ("names its objects, but the comparisons' file numbers them" if file_named
                       else "has no object names, but these comparisons name their objects (by the file, --names or "
                            "--index-base 1): give the embedding.csv of a run on named objects"))
    if not file_named and "object" in table.columns:
        table = table.assign(object=pd.to_numeric(table["object"], errors="coerce"))
    try:  # numbered objects: the file's numbers, as the comparisons' file has them
        objects, values = table_rows(table, data.n_objects, dim, data.object_names,
                                     np.asarray(object_ids) + index_base)
    except ValueError as exc:
        raise BadInput(f"--init {path}: {exc}") from None
    start = pd.DataFrame(values, columns=[f"x{d + 1}" for d in range(dim)], index=pd.Index(objects, name="object"))
    return start, len(objects)  # the start indexed by the rows of this fit


def check_test_is_not_training(test_file: Path | None, comparisons: tuple[Path, ...]) -> None:
    """``--test`` naming a training file, or a copy of one: its error would be the training error, shown as the
    error on new answers."""
    if test_file is None or not test_file.is_file():
        return
    for path in comparisons:
        if path.is_file() and filecmp.cmp(path, test_file, shallow=False):
            raise BadInput(f"--test {test_file}: the same comparisons as {path}, which is fitted; its error would "
                           "be the training error (give answers the fit does not see, or --holdout)")


def _numbered_like(test, data, object_ids: np.ndarray, path: Path, source: str, skip_invalid: bool):
    """``(test, note)``: ``--test``'s comparisons numbered as the fitted objects, by name when both files name
    their objects, else by index (``object_ids``: the training indices of ``data``'s objects).  A test comparison
    of an object that occurs in no training comparison has no place on the map to be scored at: an error, or
    with ``--skip-invalid`` dropped and reported in ``note`` (else None)."""
    named = data.object_names is not None
    if (test.object_names is not None) != named:
        named_file, numbered = (path, source) if test.object_names is not None else (source, path)
        raise BadInput(f"{path}: {named_file} names its objects but {numbered} numbers them; give both the same "
                       "kind of ids (or --names for both)")
    fitted = data.used_objects
    seen = (np.isin(np.asarray(test.object_names, dtype=object), np.asarray(data.object_names, dtype=object)[fitted])
            if named else np.isin(np.arange(test.n_objects), object_ids[fitted]))
    unseen = ~seen[test.quadruplets].all(axis=1)
    note = None
    if unseen.any():
        row = test.quadruplets[np.argmax(unseen)]
        first = row[~seen[row]][0]
        count = f"{int(unseen.sum())} of {len(test)} test comparisons"
        label = repr(test.object_names[first]) if named else str(first)
        where = f"an object that occurs in no comparison of {source} (the first: {label})"
        if unseen.all():
            raise BadInput(f"{path}: every test comparison has {where}: nothing to score")
        if not skip_invalid:
            raise BadInput(f"{path}: {count} have {where}; --skip-invalid drops them and reports it")
        test, note = test[~unseen], f"warning: {path}: dropped {count} with {where}"
    return (test.renumbered(data.object_names) if named else test.take_objects(object_ids)), note


def _fit_and_write(folder, paths, encoding, dim, names, method, loss, lam, seed, holdout, max_iter, annotator_rounds,
                   labels, label_column, skip_invalid, svg, verbose, quiet, estimator, started, *,
                   html_report=False, n_bootstrap=0, bootstrap_unit="query", bootstrap_store=None, jobs=1,
                   columns=None, odd_position_base=0, index_base=0, test_file=None, init_file=None) -> dict:
    """Reads, fits and writes every output into ``folder`` (the staging folder); returns the summary."""
    say = (lambda *a, **k: None) if quiet else click.echo
    data, notes = read_input(paths, names, skip_invalid, encoding, columns, odd_position_base, index_base)
    comparisons = source_text(paths)
    no_ids = f"{comparisons} has no annotator column (annotator, worker_id, puid, ...)"
    if annotator_rounds and data.annotator is None:
        raise BadInput(f"--annotator-rounds {annotator_rounds}: {no_ids}")
    if n_bootstrap and "annotator" in bootstrap_unit and data.annotator is None:  # before the fit, not after it
        raise BadInput(f"--bootstrap-unit {bootstrap_unit}: {no_ids}")
    label_values, label_notes, label_column = (read_labels(labels, label_column, data, encoding, index_base)
                                               if labels is not None else (None, [], None))
    notes += label_notes
    object_ids = np.arange(data.n_objects)
    used = data.used_objects
    if 2 * len(used) < data.n_objects:  # mostly unused ids (e.g. 10 of 1,000,000): fit the used ones only
        notes.append(f"warning: {comparisons}: only {len(used)} of the {data.n_objects} object ids occur in a "
                     f"comparison; fitting those {len(used)} (embedding.csv keeps their ids)")
        data, object_ids = data.drop_unused_objects(), used
        label_values = None if label_values is None else [label_values[o] for o in used]
    if dim != "auto" and dim >= len(used):
        most = max(len(used) - 1, 1)
        raise BadInput(f"--dim {dim}: only {len(used)} objects have comparisons; {len(used)} points fit in "
                       f"{count_noun(most, 'dimension')}, so use --dim {most} or less")
    start_note = ""
    if init_file is not None:
        init, placed = read_init(init_file, data, object_ids, index_base, dim)
        estimator.set_params(init=init)
        new = data.n_objects - placed
        start_note = (f"; starting from {init_file} ({placed:,} of {data.n_objects:,} objects"
                      + (f", {new:,} new at its centre)" if new else ")"))
        if 2 * placed < data.n_objects:  # matched by number, a map of other objects fits as well as one of these
            notes.append(f"warning: --init {init_file}: places only {placed:,} of the {data.n_objects:,} objects; "
                         "is it a map of these objects? (the fit starts from it all the same, in one or two dimensions "
                         "as the first of the default's restarts)")
    if test_file is not None:
        test, more = read_input([test_file], names, skip_invalid, encoding, columns, odd_position_base, index_base)
        test, dropped = _numbered_like(test, data, object_ids, test_file, comparisons, skip_invalid)
        notes += more + ([dropped] if dropped else [])
        train = data
    else:
        try:
            train, test = (holdout_split(data, holdout, seed, groups="object_set") if holdout > 0
                           else (data, None))
        except InvalidComparisonsError as exc:
            raise BadInput(f"--holdout {holdout:g}: {exc}") from None
    ties = data.extra.get("tie")
    extra = sorted(set(data.extra) - {"tie"})
    say(f"{data!r} from {comparisons}"
        + (f" ({int(ties.sum()) // 2} tie answers as half a vote each way)" if ties is not None and ties.any() else "")
        + (f"; kept per-response columns {', '.join(extra)}" if extra else ""))
    say(f"fitting {type(estimator).__name__} in {dim} dimension{'' if dim == 1 else 's'}"
        + (f" (torch, {estimator.device})" if getattr(estimator, "solver", None) == "torch" else "")
        + (f" on {len(train)} responses, {len(test)} held out" if test is not None and test_file is None else "")
        + (f"; {len(test)} test comparisons from {test_file}" if test_file is not None else "") + start_note)
    reliability, rounds = None, None
    try:
        with collected_warnings() as caught, progress(not quiet, f"fit {method}"):
            if annotator_rounds and train.annotator is not None:
                from ..annotators import fit_with_annotator_reweighting

                result = fit_with_annotator_reweighting(estimator, train, max_rounds=annotator_rounds,
                                                        log=click.echo if verbose else (lambda s: None))
                estimator, reliability, rounds = result.estimator, result.reliability, result.history
            else:
                from joblib import parallel_config

                with parallel_config(n_jobs=jobs if dim == "auto" else None):  # --dim auto: folds on --jobs
                    estimator.fit(train)
    except ValueError as exc:
        raise BadInput(f"{comparisons}: {exc}") from None
    if describe_choice(estimator):
        say(describe_choice(estimator))
    notes += warning_lines(caught, comparisons)
    with collected_warnings() as caught:  # a held-out comparison of an object the fit never saw: say so
        errors = {"train_error": 1.0 - estimator.score(train),
                  "train_error_unweighted": 1.0 - estimator.score(train.with_weight(np.ones(len(train)))),
                  "holdout_error": None if test is None else 1.0 - estimator.score(test),
                  "holdout_error_interval": None if test is None else holdout_interval(estimator, test)}
    held_out = test_file if test_file is not None else f"--holdout {holdout:g}"
    notes += warning_lines(caught, held_out)
    if test is not None and errors["holdout_error_interval"][1] >= 0.5:
        low, high = errors["holdout_error_interval"]
        n_sets = count_noun(len(np.unique(object_sets(test))), "held-out set of objects", "held-out sets of objects")
        notes.append(f"warning: {held_out}: the held-out error's 95% interval reaches 0.5, chance "
                     f"({low:.4f}-{high:.4f} over {n_sets}): on these "
                     "answers the map's predictions cannot be told from guessing (more comparisons or fewer dimensions "
                     "may change that)")
    for line in notes:
        click.echo(line, err=True)  # never quiet: these say what the result cannot be trusted for
    groups = object_groups(train)
    with collected_warnings() as caught:  # e.g. characters of the names that the pictures' font lacks
        files, table = write_results(estimator, folder, labels=label_values, label_title=label_column,
                                     formats=("png", "svg") if svg else ("png",), reliability=reliability,
                                     object_ids=object_ids + index_base, groups=groups)
    for line in warning_lines(caught):
        click.echo(line, err=True)
        notes.append(line)
    formats = ("png", "svg") if svg else ("png",)
    extra = {}
    if dim == "auto":
        more, part = write_dimension_selection(estimator, folder, formats)
        files += more
        extra.update(part)
        say(f"dimension {part['dim_selected']} chosen (least held-out error at {part['dim_least_error']}); "
            "see dimensions.csv")
    if n_bootstrap:
        from ..uncertainty import StoreError

        try:
            with collected_warnings() as caught, progress(not quiet, f"bootstrap {n_bootstrap}"):
                more, part = write_bootstrap(estimator, train, n_bootstrap, bootstrap_unit, seed, jobs, folder,
                                             formats, object_ids + index_base, estimator.object_names_, label_values,
                                             store=bootstrap_store, label_title=label_column)
        except InvalidComparisonsError as exc:
            raise BadInput(f"--bootstrap-unit {bootstrap_unit}: {exc}") from None
        except StoreError as exc:
            raise BadInput(f"--bootstrap-store {exc}") from None
        if bootstrap_store is not None:
            say(f"bootstrap: {part['bootstrap']['from_store']} of {n_bootstrap} replicates read from {bootstrap_store}")
        for line in warning_lines(caught, f"--bootstrap {n_bootstrap}"):
            click.echo(line, err=True)
            notes.append(line)
        files += more
        extra.update(part)
    weighted = not np.all(train.weight == train.weight[0])
    summary = {
        "output_format": OUTPUT_FORMAT,
        "input": [str(p) for p in paths] if len(paths) > 1 else str(paths[0]), "n_objects": data.n_objects, "n_responses": len(data),
        "total_weight": total_weight(data),
        "label_column": label_column,
        "settings": {"method": method, "dim": dim, "loss": loss, "lam": lam, "seed": seed, "holdout": holdout,
                     "test": None if test_file is None else str(test_file),
                     "init": None if init_file is None else str(init_file),
                     "max_iter": max_iter, "annotator_rounds": annotator_rounds, "columns": columns,
                     "odd_position_base": odd_position_base, "index_base": index_base,
                     "estimator": {k: v for k, v in estimator.get_params().items() if np.isscalar(v) or v is None}},
        "versions": versions(),
        "iterations": getattr(estimator, "n_iter_", None),
        "objective": getattr(estimator, "objective_", None),
        "lam_used": getattr(estimator, "lam_", None),
        "chosen": chosen_params(estimator),
        **errors,
        "n_holdout_responses": 0 if test is None else len(test),
        "n_edges": len(estimator.graph_),
        "n_groups": int(groups.max() + 1),
        "n_outliers": int(estimator.outlier_mask_.sum()) if has_outliers(estimator) else None,
        "outliers_by_vote": (flags_by_vote(estimator.graph_, estimator.outlier_mask_)
                             if has_outliers(estimator) else None),
        "n_suspect_annotators": None if table is None else int(table["suspect"].sum()),
        "n_position_biased_annotators": (None if table is None or "position_biased" not in table
                                         else int(table["position_biased"].sum())),
        "suspect_rule": None if table is None else table.attrs.get("suspect_rule"),
        "reweighting_rounds": None if rounds is None else rounds.to_dict(orient="records"),
        **extra,
        "warnings": [line.removeprefix("warning: ") for line in notes],
        "seconds": round(time.perf_counter() - started, 3),
    }
    summary["files"] = sorted({p.name for p in files} | {"summary.json"} | ({"report.html"} if html_report else set()))
    write_json(summary, folder / "summary.json")
    if html_report:
        from ..report import write_report

        # from the folder, as `roembed report` reads it, so one run gives one page; built from the estimator,
        # it lacked the bootstrap's regions and flag frequencies and the unlinked groups' colours
        write_report(folder, folder / "report.html")
    staged = sorted(p.name for p in folder.iterdir())
    if staged != summary["files"]:  # the promise: summary.json lists exactly the files of its run
        raise RuntimeError(f"internal error: staged {staged} but the summary lists {summary['files']}")
    by_vote = describe_flags_by_vote(summary["outliers_by_vote"])
    say(f"train error {summary['train_error']:.4f}"
        + (f" weighted, {summary['train_error_unweighted']:.4f} unweighted" if weighted else "")
        + (f", held-out error {summary['holdout_error']:.4f} (95% interval {summary['holdout_error_interval'][0]:.4f}-"
           f"{summary['holdout_error_interval'][1]:.4f})" if test is not None else f" ({TRAIN_ERROR_HINT})")
        + (f", {summary['n_outliers']:,} of {summary['n_edges']:,} comparisons flagged" if has_outliers(estimator)
           else "")
        + (f" ({by_vote})" if by_vote else "")
        + (f", {summary['n_suspect_annotators']} of {len(table)} annotators suspect" if table is not None else "")
        + (f" ({summary['n_position_biased_annotators']} pick one screen position more often than chance)"
           if summary["n_position_biased_annotators"] else ""))
    if "bootstrap" in summary:
        say(describe_bootstrap(summary))
    if verbose and table is not None and table["suspect"].any():
        say(table[table["suspect"]].head(20).to_string(index=False))
    return summary
