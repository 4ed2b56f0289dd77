"""The ``roembed`` command line.  Each subcommand lives in its own module of this package."""
from __future__ import annotations

import click

from .. import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
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
