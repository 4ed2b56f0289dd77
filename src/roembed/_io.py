"""Atomic file writing: write to a temporary file beside the target, then rename."""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def _default_mode(fd_or_path) -> None:
    """Gives a ``mkstemp`` file (mode 0600) the permissions a plain ``open`` would: 0666 minus the umask."""
    umask = os.umask(0o022)
    os.umask(umask)
    os.chmod(fd_or_path, 0o666 & ~umask)


@contextlib.contextmanager
def atomic_write(path, mode: str = "w", **open_kwargs):
    """Opens a temporary file beside ``path``; on success it replaces ``path`` at once.

    If the block raises, the temporary file is removed and ``path`` is left as it was,
    so an interrupted run never leaves a half-written file that looks complete.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        _default_mode(tmp)
        with os.fdopen(fd, mode, **open_kwargs) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_path(path):
    """Context manager yielding a temporary path for writers that want a file name
    (``DataFrame.to_parquet``, ``Figure.savefig``); renamed onto ``path`` on success."""

    @contextlib.contextmanager
    def _cm():
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=target.suffix, dir=target.parent)
        os.close(fd)
        try:
            _default_mode(tmp)
            yield Path(tmp)
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise

    return _cm()
