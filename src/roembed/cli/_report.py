"""What ``roembed fit`` and ``roembed demo`` share: estimators by name, the
progress bar, one-line input errors, and writing results atomically."""
from __future__ import annotations

import contextlib
import json
import platform
import sys
from pathlib import Path

import click
import numpy as np
import pandas as pd

from .. import __version__
from .._csv import write_frame
from .._io import atomic_write
from ..annotator_model import HETEROGENEITY_P
from ..data.validation import count_noun
from ..estimators.registry import estimator_class
from ..estimators.robust import REFINE_FORCE_SHARE, REFINE_MIN_OUTLIERS, RIDGE_CHECK_FOLDS
from ..report.data import comparison_table, embedding_frame, responses_per_object
from ._options import METHODS, BadInput


def make_estimator(method: str, dim: int, *, seed: int, lam="auto", loss=None, max_iter=None, n_init=None,
                   device=None, init=None):
    """The estimator ``method`` with the given options; an option it does not take is bad input
    (never silently ignored).  ``device`` other than None or ``"cpu"``: the torch solver on that device
    (checked now: torch installed, the device there).  ``init`` (``--init``'s file) is only checked here: the
    table is read and set once the objects are known (:func:`roembed.cli._fit.read_init`)."""
    try:
        cls = estimator_class(method)
    except (ImportError, AttributeError, KeyError):
        raise BadInput(f"method {method!r} is not available in this installation of roembed") from None
    # lam="auto" and loss=None leave the estimator's own default
    options = {"n_components": dim, "random_state": seed, "lam": None if lam == "auto" else lam, "loss": loss,
               "max_iter": max_iter, "n_init": n_init, "init": init}
    if device not in (None, "cpu"):
        options["device"] = device
    accepted = cls().get_params()
    for key, value in options.items():
        if value is not None and key not in accepted:
            takers = sorted(m for m in METHODS if key in _params(m))
            raise BadInput(f"--{key.replace('_', '-')} does not apply to --method {method} "
                           f"(only to {', '.join(takers)})")
    if options.get("device") is not None:
        options.update(device=_torch_device(device), solver="torch")
    try:
        estimator = cls(**{k: v for k, v in options.items() if v is not None and k != "init"})
        estimator._check_params()
    except (TypeError, ValueError) as exc:
        raise BadInput(f"--method {method}: {exc}") from None
    return estimator


def _torch_device(device: str) -> str:
    """``device`` if torch is installed and has it, else bad input naming what is missing."""
    try:
        from ..solvers.torch_lbfgs import resolve_device

        return str(resolve_device(device))
    except (ImportError, RuntimeError) as exc:
        raise BadInput(f"--device {device}: {str(exc).splitlines()[0]}") from None


def _params(method: str) -> set:
    try:
        return set(estimator_class(method)().get_params())
    except (ImportError, AttributeError, KeyError):
        return set()


def open_output(out: Path):
    """The :class:`~roembed._io.OutputSet` for ``--out``, opened (so a folder that cannot be written
    fails now, before the fit); an existing folder is replaced only when it holds roembed's files."""
    from .._io import OutputFolderError, OutputSet

    output = OutputSet(out, replace=_foreign_files)
    try:
        output.open()
    except OutputFolderError as exc:
        raise BadInput(f"--out {exc}") from None
    return output


#: The names (before the first dot) of every file ``roembed fit`` and ``roembed demo`` write.
_OUTPUT_STEMS = ("embedding", "comparisons", "outliers", "annotators", "summary", "report",
                 "dimensions", "uncertainty", "flag_frequency", "annotator_intervals")


#: Files an operating system's file browser leaves in a folder it showed, lost without harm when ``--out`` is
#: replaced (as are roembed's own; any other file, hidden ones such as ``.git`` or ``.gitkeep`` included, keeps
#: the folder).
_BROWSER_FILES = (".DS_Store", "Thumbs.db", "desktop.ini")


def _foreign_files(folder: Path) -> str | None:
    """Why ``folder`` must not be replaced by a run's output (None: it holds only roembed output)."""
    foreign = sorted(p.name for p in folder.iterdir()  # .report.html.x.tmp: a killed run's temporary file
                     if p.name.lstrip(".").split(".")[0] not in _OUTPUT_STEMS
                     and p.name not in _BROWSER_FILES and not p.name.startswith("._"))  # ._x: macOS's AppleDouble
    if foreign:
        return (f"exists and holds files roembed did not write ({', '.join(foreign[:3])}"
                f"{', ...' if len(foreign) > 3 else ''}); it replaces the whole folder, so choose a new or empty one")
    return None


@contextlib.contextmanager
def collected_warnings():
    """Records warnings (each once) instead of letting Python print them with a source path.

    Deprecation notices stay hidden, as Python hides them outside ``__main__``: they speak to the authors of
    the code that raised them (pandas 2.0.0-2.0.2 under numpy 1.25+ raised one from every table read), not to
    someone reading a run's output."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        yield caught


def warning_lines(caught, source=None, named=()) -> list[str]:
    """One line per distinct warning, in the CLI's words (``--max-iter`` for ``max_iter``), after ``source``
    unless the warning names one of the files ``named`` itself."""
    from ..data.validation import SkippedRowsWarning

    lines = []
    for w in caught:
        if issubclass(w.category, SkippedRowsWarning):
            continue  # reported by the reader's own line
        text = " ".join(str(w.message).split()).replace("max_iter", "--max-iter").replace("n_init", "--n-init")
        named_here = any(name in text for name in named)
        line = f"warning: {source}: {text}" if source and not named_here else f"warning: {text}"
        if line not in lines:
            lines.append(line)
    return lines


def chosen_params(estimator) -> dict | None:
    """What a self-tuning estimator chose (``chosen_params_``, JSON-ready), or None."""
    chosen = getattr(estimator, "chosen_params_", None)
    if chosen is None:
        return None
    return {k: (getattr(v, "name", v) if not isinstance(v, (np.floating, np.integer)) else v.item())
            for k, v in chosen.items()}


def describe_choice(estimator) -> str | None:
    """One line saying what the self-tuning default chose, e.g. for ``roembed fit`` and ``demo``."""
    chosen = chosen_params(estimator)
    if chosen is None:
        return None
    refine = "none" if chosen.get("refine") is None else f"slope {chosen['refine']:g}"
    if chosen.get("refine") is not None and chosen.get("refine_alpha") is not None:
        refine += f" with ridge {chosen['refine_alpha']:.3g}"
    notes = []
    ensemble = chosen.get("refine_ensemble") or (1.0,)
    if chosen.get("refine") is not None and len(ensemble) > 1:
        notes.append("the mean of the maps at slopes " + ", ".join(f"{chosen['refine'] * m:g}" for m in ensemble))
    tuned = getattr(estimator, "tuning_results_", None)
    if getattr(estimator, "refine", None) == "auto" and tuned and \
            all(r["refine"] is None and "outlier_share" in r for r in tuned):  # the gate stopped every refinement
        notes.append(f"not tried: outlier shifts on under {REFINE_MIN_OUTLIERS:.0%} of the loss weight")
    elif getattr(estimator, "refine", None) == "auto" and tuned and chosen.get("refine") is not None and \
            max(tuned, key=lambda r: r["score"])["refine"] is None:  # chosen_candidate preferred the refinement
        notes.append(f"over the unrefined fit's higher held-out score: outlier shifts on at least "
                     f"{REFINE_FORCE_SHARE:.0%} of the loss weight")
    refine += f" ({'; '.join(notes)})" if notes else ""
    n_init = chosen.get("n_init")
    starts = "one start" if n_init == 1 else f"{n_init} starts"
    how = (f"validation on held-out queries, {len(tuned)} candidates" if tuned else
           f"no tuning, {starts}: too few queries to pin the map down" if chosen.get("too_few_queries") else
           "no tuning")
    if chosen.get("final_start"):  # lowest_final kept another restart minimum than the lowest plain objective
        how += (f"; the final fit ran from {chosen['final_starts']} distinct restart minima and ended lowest from "
                f"the one ranked {chosen['final_start'] + 1} by the plain objective")
    gain = chosen.get("ridge_check_gain")
    if gain is not None:  # the stronger ridge met the choice on folds of held-out queries (_check_ridge)
        how += (f"; few queries per coordinate: a stronger ridge {'won' if gain > 0 else 'lost'} on "
                f"{RIDGE_CHECK_FOLDS} folds of held-out queries ({gain:+.4f} agreement)")
    p = chosen.get("annotator_heterogeneity_p")
    p_text = None if p is None else (f"p = {p:.2g}" if p > 0 else "p < 1e-300")  # 0: below the smallest double
    gold, slips = chosen.get("gold_answers") or 0, chosen.get("gold_error")
    slips = "" if slips is None else f" with honest slips at {slips:.2f}"
    crowd = "" if p is None else (f"; annotator types on ({gold} responses to known-answer questions anchor them"
                                  f"{slips}, agreement test {p_text})" if gold and chosen.get("annotators") else
                                  f"; annotator types on (agreement differs between annotators, {p_text})"
                                  if chosen.get("annotators") and p <= HETEROGENEITY_P else
                                  f"; annotator types on (some annotators are contradicted by the others on the "
                                  f"queries they share; agreement test {p_text})" if chosen.get("annotators") else
                                  f"; annotator types off (too little evidence that annotators differ: {p_text}, "
                                  f"above {HETEROGENEITY_P:g})")
    ridge = "ridge" if chosen.get("refine") is None else "robust-stage ridge"
    return (f"chose loss {chosen['loss']}, weighting {chosen['weighting']}, refinement {refine}, "
            f"{ridge} {chosen['alpha']:.3g}, lam {chosen['lam']:.3g} ({how}){crowd}")


def parse_lam(value: str):
    """``"auto"`` or a positive number, for ``--lam``."""
    if value == "auto":
        return value
    try:
        lam = float(value)
    except ValueError:
        raise BadInput(f"--lam must be 'auto' or a positive number, got {value!r}") from None
    if not lam > 0 or not np.isfinite(lam):
        raise BadInput(f"--lam must be 'auto' or a positive number, got {value!r}")
    return lam


@contextlib.contextmanager
def progress(enabled: bool, description: str, every: float = 5.0):
    """Progress over solver iterations (on stderr) once a fit takes longer than a second: a tqdm
    bar with the rate and the current objective on a terminal; otherwise (a log file, a pipe)
    one plain line every ``every`` seconds: iterations, rate and objective."""
    if not enabled:
        yield
        return
    from ..solvers.progress import current_phase, observe_iterations

    if not sys.stderr.isatty():
        plain = _PlainProgress(description, every)
        with observe_iterations(plain):
            yield
        plain.close()
        return
    from tqdm.auto import tqdm

    with tqdm(desc=description, unit=" it", delay=1.0, file=sys.stderr, leave=False) as bar:
        shown = [description]

        def update(_iteration, value):
            label = _labelled(description, current_phase())
            if label != shown[0]:
                bar.set_description_str(label, refresh=False)
                shown[0] = label
            bar.update(1)
            bar.set_postfix(objective=f"{value:.5g}", refresh=False)

        with observe_iterations(update):
            yield


def _labelled(description: str, phase: str) -> str:
    """``fit robust (choosing tste, vote)``: the objective shown is that of the solve running now, and a fit
    runs several (restarts, the tuning's candidates, the final fit), each with its own objective."""
    return f"{description} ({phase})" if phase else description


class _PlainProgress:
    """``fit robust: 240 iterations, 61 it/s; final fit: objective 0.01234`` every few seconds, for
    non-terminals (iterations and rate counted over the whole fit, the objective that of the solve named before
    it, :func:`~roembed.solvers.progress.phase`: written as ``fit robust (final fit): 240 iterations`` the count
    read as the final fit's, 365 where that fit had run 61); once a line was written, a last one when the fit ends
    (``fit robust: done, 1204 iterations in 9.8 s``), so a log never ends on a count taken mid-fit.  The rate
    counts from the first iteration (the data checks and the aggregation before it are not iterations)."""

    def __init__(self, description: str, every: float):
        import time

        from ..solvers.progress import current_phase

        self.phase = current_phase  # read at each line written, not imported at each iteration
        self.clock = time.monotonic
        self.description, self.every = description, every
        self.start = self.clock()
        self.next = self.start + 1.0  # nothing for fits under a second
        self.count, self.first, self.printed = 0, None, False

    def __call__(self, _iteration, value) -> None:
        self.count += 1
        now = self.clock()
        if self.first is None:  # the first line after a second of iterations: a rate over a moment read
            self.first = now  # "2.09e+03 it/s" at the demo's second iteration, 74 it/s over its fit
            self.next = max(self.next, now + 1.0)
        if now >= self.next and self.count >= 2:
            rate = (self.count - 1) / max(now - self.first, 1e-9)
            solve = self.phase()
            click.echo(f"{self.description}: {self.count} iterations, {rate:.3g} it/s"
                       f"{f'; {solve}: ' if solve else ', '}objective {value:.5g}", err=True)
            self.next, self.printed = now + self.every, True

    def close(self) -> None:
        if self.printed:
            click.echo(f"{self.description}: done, {self.count} iterations in {self.clock() - self.start:.1f} s",
                       err=True)


def versions() -> dict:
    import matplotlib
    import scipy
    import sklearn

    return {"roembed": __version__, "python": platform.python_version(), "numpy": np.__version__,
            "scipy": scipy.__version__, "scikit-learn": sklearn.__version__, "pandas": pd.__version__,
            "matplotlib": matplotlib.__version__}


def write_csv(frame: pd.DataFrame, path: Path) -> Path:
    with atomic_write(path, newline="") as fh:
        write_frame(frame, fh)
    return path


def write_comparisons(estimator, path: Path, blocks: int = 8, min_rows: int = 1 << 18) -> Path:
    """``comparisons.csv``: :func:`comparison_table` written in ``blocks`` blocks of edges (of ``min_rows`` rows at
    least), so that one block's table, not the whole one, is in memory.  The whole table and its temporaries
    take about 130 bytes an edge: written at once at 10^7 edges, it lifted ``roembed fit``'s peak from the
    fit's 1.6 GB to 2.7 GB (docs/results.md, "The command line's memory at scale").  Few blocks, as each reads
    every response once for the annotator and other per-response columns."""
    n_edges = len(estimator.graph_)
    rows = max(min_rows, -(-n_edges // blocks))
    with atomic_write(path, newline="") as fh:
        for start in range(0, max(n_edges, 1), rows):
            edges = np.arange(start, min(start + rows, n_edges))
            write_frame(comparison_table(estimator, edges), fh, header=start == 0)
    return path


def write_json(data: dict, path: Path) -> Path:
    """``data`` as strict JSON: a NaN or infinite number is written as null (Python wrote ``NaN``, which jq,
    JavaScript's ``JSON.parse`` and other strict readers refuse: ``roembed demo --rate 0``'s precision)."""
    with atomic_write(path) as fh:
        json.dump(_finite(data), fh, indent=2, default=_json_default, allow_nan=False)
        fh.write("\n")
    return path


def _finite(value):
    """``value`` with every NaN or infinite float (NumPy's too) in its dicts, lists, tuples and arrays replaced by
    None."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, dict):
        return {key: _finite(v) for key, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    if isinstance(value, (float, np.floating)) and not np.isfinite(value):
        return None
    return value


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (Path, np.ndarray)):
        return str(value) if isinstance(value, Path) else value.tolist()
    raise TypeError(f"cannot write {type(value).__name__} to JSON")


def has_outliers(estimator) -> bool:
    return hasattr(estimator, "outlier_mask_")


def has_annotators(estimator) -> bool:
    return has_outliers(estimator) and estimator.graph_.comparisons.annotator is not None


def write_results(estimator, out: Path, *, labels=None, label_title=None, formats=("png",),
                  reliability: pd.DataFrame | None = None, object_ids=None,
                  groups=None) -> tuple[list[Path], pd.DataFrame | None]:
    """Writes embedding.csv, comparisons.csv, outliers.csv, annotators.csv and the pictures into ``out``.

    Objects in separate ``groups`` (no comparison between them) are coloured by group
    when there are no labels.  Returns the files written and the annotator table (None
    without annotator ids).
    """
    from .. import plotting

    files = [write_csv(embedding_frame(estimator, object_ids, groups, labels), out / "embedding.csv"),
             write_comparisons(estimator, out / "comparisons.csv")]
    used = responses_per_object(estimator) > 0  # objects without comparisons sit anywhere: not drawn
    names = None if estimator.object_names_ is None else np.asarray(estimator.object_names_)[used]
    title = (f"{type(estimator).__name__}, {count_noun(estimator.embedding_.shape[1], 'dimension')}, "
             f"{count_noun(int(used.sum()), 'object')} with comparisons")
    if labels is None and groups is not None and groups.max() > 0:
        labels, label_title = [f"group {g}" for g in groups], "unlinked groups"
        title += f" in {groups.max() + 1} unlinked groups (their relative placement means nothing)"
    labels = None if labels is None else np.asarray(labels, dtype=object)[used]
    files += plotting.save_figure(plotting.plot_embedding(estimator.embedding_[used], names, labels, title=title,
                                                          label_title=label_title), out / "embedding", formats)
    table = None
    if has_outliers(estimator):
        files.append(write_csv(estimator.outliers_, out / "outliers.csv"))
        files += plotting.save_figure(plotting.plot_outliers(estimator), out / "outliers", formats)
    if has_annotators(estimator):
        table = estimator.annotators_ if reliability is None else reliability
        files.append(write_csv(table, out / "annotators.csv"))
        files += plotting.save_figure(plotting.plot_annotators(table), out / "annotators", formats)
    return files, table


def describe_comparison(row, names) -> str:
    """``"a" closer to "b" than "c"`` (or the quadruplet form) for one outliers_ row."""
    def name(o):
        return f"{names[o]}" if names is not None else f"#{o}"

    i, j, l, k = (int(row[c]) for c in "ijlk")
    if i == l:
        return f"{name(i)} closer to {name(j)} than to {name(k)}"
    return f"d({name(i)}, {name(j)}) < d({name(l)}, {name(k)})"
