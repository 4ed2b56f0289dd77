"""Warnings that point at the line of the user's code that led to them, not at roembed's own.

A hand-counted ``stacklevel`` breaks whenever a call path gains or loses a frame (a subclass's ``fit`` calling
its parent's, a reader called through another); :func:`warn` counts the frames instead.
"""
from __future__ import annotations

import os
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
