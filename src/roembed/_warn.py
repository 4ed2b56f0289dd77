"""Warnings that point at the line of the user's code that led to them, not at roembed's own.

A hand-counted ``stacklevel`` breaks whenever a call path gains or loses a frame (a subclass's ``fit`` calling
its parent's, a reader called through another); :func:`warn` counts the frames instead.
"""
from __future__ import annotations

import os
import re
import sys
import warnings

PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn(message, category=UserWarning) -> None:
    """``warnings.warn(message, category)`` attributed to the caller of the outermost roembed frame: the user's
    line, or scikit-learn's when it called roembed (a roembed fit run by joblib inside roembed still points
    at the user's line)."""
    frame, level, outermost = sys._getframe(0), 1, 1
    while frame is not None:
        if os.path.abspath(frame.f_code.co_filename).startswith(PACKAGE):
            outermost = level
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=outermost + 1)


def warn_counted(fits, what: str, label: str | None = None) -> None:
    """One ``UserWarning`` per kind of message that several fits gave, with how many gave it, instead of one per
    fit from every worker (warnings raised in joblib's worker processes would not reach the caller at all).
    ``fits``: one ``(key, messages)`` per fit; messages that differ only in their numbers are one kind, quoted
    by its first ("e.g."); with ``label``, the keys of the fits that gave it are listed (e.g.
    ``label="n_components"``: "3 of 55 cross-validation fits (n_components 1, 2): ...")."""
    kinds: dict[str, tuple[str, dict, set]] = {}  # numbers masked -> (first message, fit -> key, messages)
    for fit, (key, messages) in enumerate(fits):
        for message in map(str, messages):
            first, keys, seen = kinds.setdefault(re.sub(r"\d+(\.\d+)?", "#", message), (message, {}, set()))
            keys[fit] = key
            seen.add(message)
    for first, keys, seen in sorted(kinds.values(), key=lambda kind: kind[0]):
        where = f" ({label} {', '.join(map(str, sorted(set(keys.values()))))})" if label is not None else ""
        warn(f"{len(keys)} of {len(fits)} {what}{where}{', e.g.' if len(seen) > 1 else ''}: {first}", UserWarning)
