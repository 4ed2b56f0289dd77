"""Atomic file writing: write to a temporary file beside the target, then rename."""
from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
from pathlib import Path


def _default_mode(fd_or_path) -> None:
    """Gives a ``mkstemp`` file (mode 0600) the permissions a plain ``open`` would: 0666 minus the umask."""
    umask = os.umask(0o022)
    os.umask(umask)
    os.chmod(fd_or_path, 0o666 & ~umask)


class WriteError(OSError):
    """A file could not be written (a full disk, a quota, a file system gone read-only): the ``OSError``
    of the write, with ``filename`` the file meant (the write itself names none, or only its temporary file)."""


@contextlib.contextmanager
def writing(path: Path):
    """Re-raises an ``OSError`` of the block as a :class:`WriteError` naming ``path``, the file it writes."""
    try:
        yield
    except WriteError:
        raise
    except OSError as exc:
        raise WriteError(exc.errno, exc.strerror or str(exc), str(path)) from exc


@contextlib.contextmanager
def atomic_write(path, mode: str = "w", **open_kwargs):
    """Opens a temporary file beside ``path``; on success it replaces ``path`` at once.

    If the block raises, the temporary file is removed and ``path`` is left as it was,
    so an interrupted run never leaves a half-written file that looks complete; an ``OSError``
    comes out as a :class:`WriteError` naming ``path``.
    """
    path = Path(path)
    with writing(path):
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
    (``DataFrame.to_parquet``, ``Figure.savefig``); renamed onto ``path`` on success (an ``OSError``: a
    :class:`WriteError` naming ``path``)."""

    @contextlib.contextmanager
    def _cm():
        target = Path(path)
        with writing(target):
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


def private_temp_folder(name: str) -> str | None:
    """``<temporary folder>/<name>-<uid>``, made if missing; None unless this user owns it and only they can
    write it (or where it cannot be made)."""
    uid = getattr(os, "getuid", lambda: None)()
    path = os.path.join(tempfile.gettempdir(), name if uid is None else f"{name}-{uid}")
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        info = os.lstat(path)
    except OSError:
        return None
    private = stat.S_ISDIR(info.st_mode) and not info.st_mode & 0o022 and (uid is None or info.st_uid == uid)
    return path if private else None


_STAGING = ".roembed-staging-"  # <out>.roembed-staging-<pid>-<random>: a run being written
_RETIRED = ".roembed-retired-"  # <out>.roembed-retired-<pid>-<random>: the previous run, being removed


def shown_path(path) -> str:
    """``path`` as a user knows it: a file in a run's staging folder as the file it becomes in ``out``."""
    return re.sub(rf"(^|[/\\])\.([^/\\]+){re.escape(_STAGING)}\d+-[^/\\]+", r"\1\2", str(path))


class OutputFolderError(OSError):
    """The output folder cannot be written (read-only, below a file, not roembed's)."""


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_stale(out: Path) -> None:
    """Removes staging/retired folders of ``out`` left by runs that were killed (their process is gone)."""
    import shutil

    for prefix in (_STAGING, _RETIRED):
        for stale in out.parent.glob(f".{out.name}{prefix}*"):
            pid = stale.name[len(f".{out.name}{prefix}"):].split("-")[0]
            if pid.isdigit() and (int(pid) == os.getpid() or not _pid_alive(int(pid))):
                shutil.rmtree(stale, ignore_errors=True)


def _exchange(a: Path, b: Path) -> bool:
    """Swaps two paths atomically with Linux's ``renameat2(RENAME_EXCHANGE)``; False where unavailable."""
    try:
        import ctypes

        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    return renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


def holds_working_folder(out: Path) -> bool:
    """True when ``out`` is the working folder or one above it (False where the working folder is gone)."""
    try:
        return Path.cwd().is_relative_to(out.resolve())
    except OSError:
        return False


class OutputSet:
    """Writes one run's files as a set: into a fresh staging folder beside ``out``, which
    replaces ``out`` by renames on :meth:`commit`.

    So ``out`` always holds exactly the files of one complete run (never a mix of an
    old and a new run, never a file of an older run with another method), and a run
    that fails or is interrupted leaves ``out`` as it was.  The swap is two renames
    (``out`` -> retired, staging -> ``out``), or one atomic exchange where Linux offers it; a reader can check a folder by its
    ``summary.json``, which lists exactly the files of its run.  An interrupted run
    (Ctrl-C, or SIGTERM, which the command line turns into the same exception) discards its staging
    folder; one killed outright leaves it to the next run into the same ``out``.

    ``replace`` decides whether an existing ``out`` may be replaced: a callable taking
    the folder and returning ``None`` (fine) or a reason to refuse.
    """

    def __init__(self, out, replace=None):
        self.out = Path(out)
        self._replace = replace
        self.folder: Path | None = None

    def open(self) -> Path:
        """Creates the staging folder (fails early, before any work, when ``out`` cannot be written)."""
        out = self.out
        if out.exists() and not out.is_dir():
            raise OutputFolderError(f"{out}: exists and is not a folder")
        if holds_working_folder(out):  # '.' (or '') in an empty folder was an OSError traceback
            raise OutputFolderError(f"{out}: is the working folder{' or holds it' * (out.resolve() != Path.cwd())}, "
                                    "which a run cannot replace; name a new folder for its files")
        if out.is_dir() and self._replace is not None:
            reason = self._replace(out)
            if reason:
                raise OutputFolderError(f"{out}: {reason}")
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            _remove_stale(out)
            self.folder = Path(tempfile.mkdtemp(prefix=f".{out.name}{_STAGING}{os.getpid()}-", dir=out.parent))
        except (FileExistsError, NotADirectoryError):
            raise OutputFolderError(f"{out}: cannot create the folder: a parent is a file") from None
        except PermissionError:
            raise OutputFolderError(f"{out}: cannot write there: permission denied") from None
        except OSError as exc:
            raise OutputFolderError(f"{out}: cannot write there: {exc.strerror or exc}") from None
        umask = os.umask(0o022)
        os.umask(umask)
        os.chmod(self.folder, 0o777 & ~umask)  # mkdtemp makes it 0700
        return self.folder

    def files(self) -> list[str]:
        """Names of the files staged so far, sorted."""
        return sorted(p.name for p in self.folder.iterdir() if not p.name.startswith("."))

    def commit(self) -> Path:
        """Swaps the staged folder in for ``out`` and removes the previous run's files."""
        import shutil

        if self.out.is_dir() and _exchange(self.folder, self.out):  # one atomic swap (Linux renameat2)
            shutil.rmtree(self.folder, ignore_errors=True)  # now holds the previous run
            self.folder = None
            return self.out
        retired = None
        if self.out.exists():
            retired = Path(tempfile.mkdtemp(prefix=f".{self.out.name}{_RETIRED}{os.getpid()}-", dir=self.out.parent))
            os.replace(self.out, retired / "run")
        os.replace(self.folder, self.out)
        self.folder = None
        if retired is not None:
            shutil.rmtree(retired, ignore_errors=True)
        return self.out

    def discard(self) -> None:
        import shutil

        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    def __enter__(self) -> "OutputSet":
        self.open()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.discard()


_WEB = re.compile(r"([a-z][a-z0-9+.-]+):/+", re.IGNORECASE)


def missing_file(path) -> str:
    """``"<path>: <why>"`` for a file that does not exist: a web address (which ``Path`` has turned into
    ``https:/host/...``; shown as typed) is named as one, since roembed never downloads; a pattern
    (``day*.csv``, which a shell leaves as it is when nothing matches and Python never expands) as one."""
    web = _WEB.match(str(path))
    if web:
        return (f"{web[1]}://{str(path)[web.end():]}: a web address: roembed reads files on this machine only "
                "(download it first)")
    if any(c in Path(path).name for c in "*?["):
        return f"{path}: no such file, and no file matches it as a pattern (in Python, pass sorted(glob.glob(pattern)))"
    return f"{path}: no such file"


def run_folder_problem(folder) -> str | None:
    """Why ``folder`` cannot be a finished ``roembed fit`` run, from the folder alone (one line naming it), or
    None: it is missing, or has no ``summary.json``.  Light (no library), so ``roembed report`` answers at once;
    ``report.read_run`` checks the rest."""
    folder = Path(folder).expanduser()
    if folder.is_file():
        return (f"{folder}: a file, not a run's folder (give the folder it lies in: {folder.parent})"
                if (folder.parent / "summary.json").is_file() else f"{folder}: a file, not a run's folder")
    if not folder.is_dir():
        return f"{folder}: no such folder"
    if not (folder / "summary.json").is_file():
        return f"{folder}: not a finished roembed run (no summary.json; did the fit complete?)"
    return None
