"""What the commands' options and first checks need, and nothing heavier than click: every command module
imports it when ``roembed --help`` lists the commands, so neither pandas nor scikit-learn loads for the help,
and a missing input file is reported before they load."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import click

from .._io import missing_file

#: the methods ``roembed fit --method`` offers: names of :data:`roembed.estimators.registry.ESTIMATORS`
METHODS = ("robust", "roe", "soe", "gnmds", "ste", "tste", "ckl")


#: estimator class names that differ from their ``--method`` name (the others, ``SOE``, ``TSTE``, ``ROE``, ...,
#: match it); kept here, not read from the registry, so that ``roembed --help`` imports no estimator
CLASS_METHODS = {"robustordinalembedding": "robust"}


def method_key(name: str) -> str:
    """A method's name without case, hyphens or underscores: ``t-STE``, ``TSTE`` and ``t_ste`` are one method."""
    return name.lower().replace("-", "").replace("_", "")


class MethodChoice(click.Choice):
    """A choice of method names matched by :func:`method_key`: ``--method t-STE`` (the results tables' name) and
    ``--method TSTE`` are ``tste``, as ``reproduce --methods`` reads them; an estimator's class name
    (``RobustOrdinalEmbedding``) is its method (:data:`CLASS_METHODS`)."""

    def normalize_choice(self, choice, ctx) -> str:
        key = method_key(super().normalize_choice(choice, ctx))
        return CLASS_METHODS.get(key, key)


class BadInput(click.ClickException):
    """Bad input: one line on stderr, exit code 2."""

    exit_code = 2

    def show(self, file=None) -> None:
        click.echo(f"Error: {' '.join(self.format_message().split())}", err=True)


class FiniteFloatRange(click.FloatRange):
    """click's ``FloatRange`` without NaN, which passed its bounds (every comparison with NaN is false):
    ``--holdout nan`` fitted with no hold-out and said nothing."""

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if math.isnan(number):
            self.fail(f"{value!r} is not a number", param, ctx)
        return number


class FolderPath(click.Path):
    """A folder's path that is not blank: ``--bootstrap-store ""`` was the working folder (the store's files among
    the user's own)."""

    def __init__(self, **kwargs):
        super().__init__(file_okay=False, path_type=Path, **kwargs)

    def convert(self, value, param, ctx):
        if isinstance(value, str) and not value.strip():
            self.fail("an empty path; name a folder", param, ctx)
        return super().convert(value, param, ctx)


class JobsType(click.ParamType):
    """joblib's ``n_jobs``: 1 or more processes, -1 for all cores (-2 all but one, ...); not 0."""

    name = "INTEGER"

    def convert(self, value, param, ctx):
        try:
            jobs = int(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not an integer", param, ctx)
        if jobs == 0:
            self.fail("0: give 1 or more processes, or -1 for all cores", param, ctx)
        return jobs


class DimensionType(click.ParamType):
    """A positive integer, or ``auto`` (chosen by grouped cross-validation)."""

    name = "INTEGER|auto"

    def convert(self, value, param, ctx):
        if isinstance(value, int) or value == "auto":
            return value
        try:
            dim = int(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is neither a positive integer nor 'auto'", param, ctx)
        if dim < 1:
            self.fail(f"{value!r} is not a positive integer", param, ctx)
        return dim


STDIN = Path("/dev/stdin")


def _stdin_is_a_terminal() -> bool:
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):  # replaced or closed
        return False


def from_stdin(comparisons: tuple[Path, ...], names, labels, test_file):
    """The input paths with ``-`` read as standard input (``unzip -p a.zip votes.csv | roembed fit - -o out``),
    which can be read once: ``-`` may stand for one input only."""
    inputs = [*comparisons, names, labels, test_file]
    if inputs.count(Path("-")) > 1:
        raise BadInput("'-' (standard input) is given for two inputs; it can be read once")
    if Path("-") in inputs and _stdin_is_a_terminal():  # else it waits for input without a word
        click.echo("reading '-' from the terminal: type or paste the rows, then Ctrl-D twice (a file or a pipe is "
                   "the usual input: unzip -p export.zip votes.csv | roembed fit - ...)", err=True)

    def stdin(path):
        return STDIN if path == Path("-") else path

    return tuple(map(stdin, comparisons)), stdin(names), stdin(labels), stdin(test_file)


def check_input_file(path: Path | None) -> None:
    """A path that can be read: a file, or a pipe (standard input, a shell's ``<(...)``), read in one pass."""
    if path is None:
        return
    if path.is_dir():
        raise BadInput(f"{path}: is a folder, not a file (several files are read as one: roembed fit "
                       f"{path / '*.csv'} ...)")
    if not path.exists():
        raise BadInput(missing_file(path))


def init_path(path: Path | None) -> Path | None:
    """``--init``: an earlier run's ``embedding.csv``, or its output folder (read from ``embedding.csv`` inside)."""
    if path is None or not path.is_dir():
        check_input_file(path)
        return path
    if not (path / "embedding.csv").is_file():
        raise BadInput(f"--init {path}: a folder without embedding.csv; give an earlier run's output folder or its "
                       "embedding.csv")
    return path / "embedding.csv"


def input_paths(comparisons: tuple[Path, ...], names, labels, test_file) -> tuple:
    """``roembed fit``'s input paths, ``-`` read as standard input, each checked before the library loads (a
    misspelt name is answered in a fraction of a second, not after the imports)."""
    comparisons, names, labels, test_file = from_stdin(comparisons, names, labels, test_file)
    for path in (*comparisons, names, labels, test_file):
        check_input_file(path)
    return comparisons, names, labels, test_file
