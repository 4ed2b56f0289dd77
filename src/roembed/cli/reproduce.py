"""``roembed reproduce``: run the paper's experiments and write tables and figures."""
from __future__ import annotations

import time
from pathlib import Path

import click

from .._warn import message_kinds
from . import main
from ._options import JobsType, method_key


def _floats(text: str) -> tuple[float, ...]:
    return tuple(float(v) for v in text.split(",") if v.strip())


def _names(text: str | None) -> tuple[str, ...] | None:
    return None if not text else tuple(v.strip() for v in text.split(",") if v.strip())


def _run(protocol, out: Path, models, rates, trials, methods, n_jobs, seed, retry_errors, progress) -> None:
    from ..experiments.report import write_report
    from ..experiments.runner import (METHODS, PAPER_METHODS, ResultStore, StoreMismatchError, available_methods,
                                      run_experiment)

    if methods is None:
        methods = tuple(available_methods(PAPER_METHODS))
        missing = sorted(set(PAPER_METHODS) - set(methods))
        if missing:
            click.echo(f"note: {', '.join(missing)} not importable yet; running {', '.join(methods) or 'nothing'}",
                       err=True)
    else:
        methods = _registered(methods, METHODS)
    if not methods:
        raise click.UsageError("no method to run")
    store = ResultStore(out / "results.jsonl")
    start = time.perf_counter()
    try:
        new = run_experiment(protocol, store, models=models, rates=rates, trials=trials, methods=methods,
                             n_jobs=n_jobs, seed=seed, progress=progress, retry_errors=retry_errors)
    except StoreMismatchError as exc:  # it skipped the stored cells and tabled them beside the new ones
        raise click.UsageError(str(exc)) from None
    wall = time.perf_counter() - start
    failed = [r for r in new if r["status"] != "ok"]
    written = write_report(store, out)
    click.echo(f"{len(new)} new cells in {wall:.1f} s wall ({len(failed)} failed); store: {store.path}")
    for first, cells, differ in message_kinds((None, r.get("warnings", [])) for r in new):
        click.echo(f"warning ({len(cells)} of {len(new)} cells; their records list it){', e.g.' if differ else ''}: "
                   f"{first}", err=True)
    for path in written.values():
        click.echo(f"wrote {path}")


def _registered(methods: tuple[str, ...], registry) -> tuple[str, ...]:
    """The registered names of ``methods``, matched without case, hyphens or underscores: ``roembed fit --method
    tste`` and the tables' ``t-STE`` are one method (``tste`` was "unknown")."""
    by_key = {method_key(name): name for name in registry}
    unknown = [m for m in methods if method_key(m) not in by_key]
    if unknown:
        # an estimator's class name (RobustOrdinalEmbedding): the methods that run it, each with what it is
        runs = {m: [name for name, spec in registry.items()
                    if method_key(spec.target.rpartition(":")[2]) == method_key(m)] for m in unknown}
        named = "".join(f"; {m} is run by " + ", ".join(f"{name} ({registry[name].description})"
                                                       if registry[name].description else name for name in names)
                        for m, names in runs.items() if names)
        raise click.BadParameter(f"unknown {unknown}; registered: {', '.join(registry)}{named}",
                                 param_hint="--methods")
    return tuple(by_key[method_key(m)] for m in methods)


def _common(f):
    options = [
        click.option("--trials", default=20, show_default=True, type=click.IntRange(1), help="Trials per setting."),
        click.option("--methods", default=None,
                     help="Comma-separated method names (default: the paper's ROE, GNMDS-p, CKL-p, STE-p; 'default' "
                          "is RobustOrdinalEmbedding() as a user gets it; an unknown name lists them all)."),
        click.option("--n-jobs", default=1, show_default=True, type=JobsType(), help="joblib workers (-1: all cores)."),
        click.option("--seed", default=0, show_default=True, type=click.IntRange(0),  # -1 was numpy's traceback
                     help="Base seed; trial seeds derive from it."),
        click.option("--retry-errors", is_flag=True, help="Rerun cells whose stored record is an error."),
        click.option("--no-progress", is_flag=True, help="No progress bar."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


@main.group()
def reproduce() -> None:
    """Reproduce the paper's experiments (resumable: rerun the same command to continue)."""


@reproduce.command()
@click.option("--models", default="vote,majority,unanimous,spammers", show_default=True,
              help="Contamination models, comma-separated.")
@click.option("--rates", default="0,0.1,0.15,0.2,0.25", show_default=True, help="Contamination rates q.")
@click.option("--n-test", default=None, type=click.IntRange(1),
              help="Cap the test triplets (default: all ~465,000, the paper's setting).")
@click.option("--out", "-o", default="results/synthetic", show_default=True, type=click.Path(path_type=Path))
@_common
def synthetic(models, rates, n_test, out, trials, methods, n_jobs, seed, retry_errors, no_progress):
    """The simulation: 100 points in R^10, 10k train / 10k validation triplets with 15..50 votes each."""
    from ..experiments.synthetic import CONTAMINATION_MODELS, SyntheticProtocol

    models = _names(models)
    if not models:  # '' was a traceback
        raise click.BadParameter(f"give at least one of {', '.join(CONTAMINATION_MODELS)}", param_hint="--models")
    bad = [m for m in models if m not in CONTAMINATION_MODELS]
    if bad:
        raise click.BadParameter(f"unknown {bad}; choose from {', '.join(CONTAMINATION_MODELS)}",
                                 param_hint="--models")
    _run(SyntheticProtocol(n_test=n_test), out, models, _rates(rates), trials, _names(methods), n_jobs, seed,
         retry_errors, not no_progress)


@reproduce.command()
@click.option("--data", "data_path", required=True, type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Folder with music_triplets_0based.csv (e.g. ../shared/data/music-aset400-ste).")
@click.option("--rates", default="0,0.25", show_default=True, help="Shares of training triplets flipped.")
@click.option("--out", "-o", default="results/music", show_default=True, type=click.Path(path_type=Path))
@_common
def music(data_path, rates, out, trials, methods, n_jobs, seed, retry_errors, no_progress):
    """Music artists (aset400): 5,000 train / 2,000 validation / rest test, p = 9."""
    from ..data import InvalidComparisonsError
    from ..experiments.music import MusicProtocol

    protocol = MusicProtocol(str(data_path.resolve()))
    try:  # a wrong folder is one line now, not a store of failed cells
        protocol.load()
    except (FileNotFoundError, InvalidComparisonsError) as exc:
        raise click.BadParameter(str(exc), param_hint="--data") from None
    _run(protocol, out, ("flip",), _rates(rates), trials, _names(methods), n_jobs, seed, retry_errors,
         not no_progress)


def _rates(text: str) -> tuple[float, ...]:
    try:
        rates = _floats(text)
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a comma-separated list of numbers", param_hint="--rates")
    if not rates or any(not 0 <= r <= 1 for r in rates):
        raise click.BadParameter("rates must lie in [0, 1]", param_hint="--rates")
    return rates
