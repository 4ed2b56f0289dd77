"""Optional dependencies (pyarrow, PyTorch), imported when a feature needs them."""
from __future__ import annotations

import importlib
import importlib.util


def import_optional(module: str, needed_for: str, install: str, package: str | None = None):
    """``module`` imported, or an ImportError in one line saying why not.

    Not installed: how to install it (``install``).  Installed but failing to import: its own reason, since
    "pip install" would change nothing (pyarrow 21 and later under numpy 1.26, as in cblearn's environment,
    stops with "pyarrow requires NumPy 2.0 or newer")."""
    package, top = package or module.split(".")[0], module.split(".")[0]
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if importlib.util.find_spec(top) is None:  # not on the path (or its import blocked)
            raise ImportError(f"{needed_for} needs {package}: {install}") from None
        raise ImportError(f"{needed_for} needs {package}, which is installed but failed to import: {exc}") from None
