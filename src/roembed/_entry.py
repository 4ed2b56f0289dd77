"""The ``roembed`` console script: what the process sets up before the command line runs, and how it ends
when stopped from outside.

- The command line is imported inside the guard, so Ctrl-C while numpy, pandas and scikit-learn load prints
  one line (exit 130), not a traceback.
- SIGTERM (``kill``, ``timeout``, a batch scheduler's time limit) unwinds the run as Ctrl-C does: the run's
  staging folder removed, one line, exit 143 (128 + 15).  Once the run is over both signals act as by default.
- stdout escapes characters its encoding lacks, and matplotlib gets a folder where the home cannot be written.
"""
import signal
import sys


class Terminated(KeyboardInterrupt):
    """Raised by the SIGTERM handler: a :class:`KeyboardInterrupt`, so every cleanup written for Ctrl-C runs."""


def _terminate(signum, frame):
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM (cleanup stuck) kills at once
    raise Terminated


def interrupted(exc: BaseException) -> int:
    """Prints the one line for an interrupted run and returns its exit code (143 after SIGTERM, else 130).
    ``exc`` is the KeyboardInterrupt, or click's Abort raised from it."""
    terminated = any(isinstance(e, Terminated) for e in (exc, exc.__cause__, exc.__context__))
    sys.stderr.write(f"roembed: {'terminated' if terminated else 'interrupted'}\n")
    return 143 if terminated else 130


def _matplotlib_folder() -> None:
    """Where matplotlib cannot write its folder (a home that is not writable, as containers run), it logs two
    warnings on every run and rebuilds its font cache in a temporary folder; the command line gives it
    ``roembed-matplotlib-<uid>`` in the temporary folder instead (``MPLCONFIGDIR``), kept between runs."""
    import os

    if os.environ.get("MPLCONFIGDIR"):
        return
    if sys.platform.startswith(("linux", "freebsd")):  # matplotlib's own choice of folder
        folder = os.path.join(os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config"), "matplotlib")
    else:
        folder = os.path.expanduser("~/.matplotlib")
    existing = folder  # made by matplotlib when it is first imported, not here
    while not os.path.exists(existing) and os.path.dirname(existing) != existing:
        existing = os.path.dirname(existing)
    if os.path.isdir(existing) and os.access(existing, os.W_OK):
        return
    from ._io import private_temp_folder

    private = private_temp_folder("roembed-matplotlib")
    if private is not None:
        os.environ["MPLCONFIGDIR"] = private


def _printable_output() -> None:
    """Characters the terminal's encoding lacks (an emoji in an object's name, printed to a Latin-1 terminal or
    to a file redirected on Windows) are printed as ``\\U0001f3b8`` escapes, as stderr already does: a
    UnicodeEncodeError in a printed line ended the run after its fit, before its files were written."""
    try:
        sys.stdout.reconfigure(errors="backslashreplace")
    except (AttributeError, ValueError):  # not a text file of io's (a replaced stream), or closed
        pass


def run() -> None:
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:  # not where the caller chose to ignore it
        signal.signal(signal.SIGTERM, _terminate)
    _matplotlib_folder()
    _printable_output()
    try:
        from .cli import main
        main()
    except KeyboardInterrupt as exc:
        sys.exit(interrupted(exc))
    finally:  # the run is over (its files written or discarded): a signal while the process winds down (joblib's
        for signum in (signal.SIGINT, signal.SIGTERM):  # workers joined at exit) ends it quietly, no traceback
            signal.signal(signum, signal.SIG_DFL)
