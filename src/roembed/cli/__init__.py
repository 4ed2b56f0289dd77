"""The ``roembed`` command line.  Each subcommand lives in its own module of this package."""
from __future__ import annotations

import sys

import click

from .. import __version__
from .._io import WriteError, shown_path


class StdoutClosed(Exception):
    """The program reading roembed's printed lines exited mid-run (``roembed fit ... | head``)."""


class RunningCommand(click.Command):
    """A subcommand whose run turns a closed stdout into :class:`StdoutClosed`: click's own handling ends the
    process with exit 1 and no word, and a fit's output set was lost in silence.  Its help, printed before any
    run, still ends quietly as click ends it (``roembed fit --help | head``)."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except BrokenPipeError as exc:
            raise StdoutClosed from exc


def _stdout_to_devnull() -> None:
    """Points the closed stdout at the null device, so the interpreter's last flush at exit does not print
    "Exception ignored ... BrokenPipeError"."""
    import os

    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


class OneLineErrors(click.Group):
    """A group whose usage errors are one line (``Error: ... (see 'roembed fit --help')``), exit 2,
    like every other input error of roembed, instead of click's usage block."""

    command_class = RunningCommand
    group_class = type  # `reproduce`: this class again, its commands RunningCommand too

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except getattr(click.exceptions, "NoArgsIsHelpError", ()) as exc:  # `roembed` alone (click >= 8.2)
            exc.show()  # the help, as click shows it, not squeezed into one line
            sys.exit(exc.exit_code)
        except click.UsageError as exc:
            hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
            click.echo(f"Error: {' '.join(exc.format_message().split())}{hint}", err=True)
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except WriteError as exc:  # a full disk or quota mid-run: the file and the reason, not a traceback
            click.echo(f"Error: {shown_path(exc.filename)}: cannot write ({exc.strerror})", err=True)
            sys.exit(2)
        except StdoutClosed:  # as a shell reports a process ended by SIGPIPE: 128 + 13
            _stdout_to_devnull()
            click.echo("roembed: stopped: the program reading its output exited (a pipe closed early, as `| head` "
                       "does); send the output to a file to let the run finish", err=True)
            sys.exit(141)
        except (click.Abort, KeyboardInterrupt) as exc:  # click turns Ctrl-C into Abort; the line of the imports'
            from .._entry import interrupted
            sys.exit(interrupted(exc))
        sys.exit(code if isinstance(code, int) else 0)


@click.group(cls=OneLineErrors, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="roembed")
def main() -> None:
    """Robust ordinal embedding from contaminated relative comparisons."""


def _register() -> None:
    """Imports the subcommand modules, which attach themselves to ``main``."""
    import importlib
    import pkgutil

    for mod in pkgutil.iter_modules(__path__):
        if not mod.name.startswith("_"):
            importlib.import_module(f"{__name__}.{mod.name}")


_register()

