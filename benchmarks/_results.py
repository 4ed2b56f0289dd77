"""What every benchmark script does at the end: record versions and write its JSON atomically."""
from __future__ import annotations

import json
import platform
from importlib import metadata
from pathlib import Path

from roembed._io import atomic_write


def versions(packages=("numpy", "scipy", "roembed", "cblearn", "torch")) -> dict:
    """Python and the installed versions of ``packages`` (those not installed are left out)."""
    found = dict(python=platform.python_version())
    for package in packages:
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    return found


def cell(row: dict, key: str, fmt: str) -> str:
    """``row[key]`` formatted for a table, or "-" when the run did not measure it."""
    return format(row[key], fmt) if key in row else "-"


def write_results(out: Path, args, **payload) -> None:
    """Writes ``{"args", "versions", **payload}`` to ``out`` (atomically) and says where."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(out) as fh:
        json.dump(dict(args={k: str(v) for k, v in vars(args).items()}, versions=versions(), **payload), fh,
                  indent=1, default=str)
    print(f"\nwrote {out}")
