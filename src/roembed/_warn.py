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


def message_kinds(fits) -> list[tuple[str, dict, bool]]:
    """The kinds of message that several fits gave: ``(first message, {fit: key}, whether its messages
    differ)``, the most frequent kind first (then in the order first seen).  ``fits``: one ``(key, messages)``
    per fit.  Messages that differ only in their numbers and parenthesised examples ("6 of 400 objects appear
    in no comparison (e.g. cure, ...)" from one fit, "5 of 400 ... (e.g. joe, ...)" from another) are one
    kind, quoted by its first."""
    kinds: dict[str, tuple[str, dict, set]] = {}  # masked -> (first message, fit -> key, messages)
    for fit, (key, messages) in enumerate(fits):
        for message in map(str, messages):
            masked = re.sub(r"\d+(\.\d+)?", "#", re.sub(r"\([^()]*\)", "(...)", message))
            first, keys, seen = kinds.setdefault(masked, (message, {}, set()))
            keys[fit] = key
            seen.add(message)
    return sorted(((first, keys, len(seen) > 1) for first, keys, seen in kinds.values()),
                  key=lambda kind: -len(kind[1]))  # stable: kinds given as often stay in the order first seen


def warn_counted(fits, what: str, label: str | None = None) -> None:
    """One ``UserWarning`` per kind of message that several fits gave (:func:`message_kinds`), with how many
    gave it, instead of one per fit from every worker (warnings raised in joblib's worker processes would not
    reach the caller at all).  With ``label``, the keys of the fits that gave it are listed (e.g.
    ``label="n_components"``: "3 of 55 cross-validation fits (n_components 1, 2): ...")."""
    fits = list(fits)
    for first, keys, differ in message_kinds(fits):
        where = f" ({label} {', '.join(map(str, sorted(set(keys.values()))))})" if label is not None else ""
        warn(f"{len(keys)} of {len(fits)} {what}{where}{', e.g.' if differ else ''}: {first}", UserWarning)
