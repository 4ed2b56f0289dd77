"""What the commands' options and first checks need, and nothing heavier than click: every command module
imports it when ``roembed --help`` lists the commands, so neither pandas nor scikit-learn loads for the help."""
from __future__ import annotations

import click

#: the methods ``roembed fit --method`` offers: names of :data:`roembed.estimators.registry.ESTIMATORS`
METHODS = ("robust", "roe", "soe", "gnmds", "ste", "tste", "ckl")


class BadInput(click.ClickException):
    """Bad input: one line on stderr, exit code 2."""

    exit_code = 2

    def show(self, file=None) -> None:
        click.echo(f"Error: {' '.join(self.format_message().split())}", err=True)


class DimensionType(click.ParamType):
    """A positive integer, or ``auto`` (chosen by query-grouped cross-validation)."""

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
