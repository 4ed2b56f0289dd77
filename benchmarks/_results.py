"""What every benchmark script does at the end (print its table of medians, record versions, write its JSON),
and the process measurements several share (peak memory, load)."""
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


def print_table(summary: list[dict], columns: dict) -> None:
    """Prints ``summary`` (one dict a row) as an aligned table.

    ``columns`` maps each column to its format spec (``".4f"``, ``"+.1%"``, ``""``);
    a column no row has is left out, and a value a row lacks prints as "-".
    """
    names = [c for c in columns if any(c in row for row in summary)]
    body = [[format(row[c], columns[c]) if row.get(c) is not None else "-" for c in names] for row in summary]
    widths = [max([len(c)] + [len(r[i]) for r in body]) for i, c in enumerate(names)]
    head = " ".join(c.rjust(w) for c, w in zip(names, widths))
    print(head)
    print("-" * len(head))
    for r in body:
        print(" ".join(v.rjust(w) for v, w in zip(r, widths)))


def finish(out: Path, args, rows: list[dict], summary: list[dict], columns: dict, **payload) -> None:
    """The end of every benchmark: the table of ``summary`` and the JSON with every run."""
    print()
    print_table(summary, columns)
    write_results(out, args, runs=rows, summary=summary, **payload)


def write_results(out: Path, args, **payload) -> None:
    """Writes ``{"args", "versions", **payload}`` to ``out`` (atomically) and says where."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(out) as fh:
        json.dump(dict(args={k: str(v) for k, v in vars(args).items()}, versions=versions(), **payload), fh,
                  indent=1, default=str)
    print(f"\nwrote {out}")


def status_bytes(field: str) -> int:
    """A ``/proc/self/status`` size (``VmRSS``, ``VmHWM``) in bytes (0 where there is none)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def reset_peak() -> bool:
    """Resets the kernel's high-water mark ``VmHWM`` to the current resident set; False where it cannot."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def loadavg() -> str:
    """The 1, 5 and 15 minute load averages, as ``/proc/loadavg`` gives them."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return ""
