"""``roembed fit`` keeps its promises on real crowd data: no crash after the fit, options
never ignored silently, one output set per folder, and a word wherever the data
cannot support the result."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from roembed.cli import main
from roembed.experiments import make_synthetic
from cli_testkit import one_line_error

SRC = str(Path(__import__("roembed").__file__).resolve().parents[1])  # the roembed under test


def run(*args):
    return CliRunner().invoke(main, ["fit", *map(str, args)])




def check_output_set(out: Path):
    """The whole promise: summary.json lists exactly the files present, nothing else lies around."""
    summary = json.loads((out / "summary.json").read_text())
    assert summary["files"] == sorted(p.name for p in out.iterdir())
    assert not [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}")]  # no staging left
    return summary


@pytest.fixture(scope="module")
def clean_votes(tmp_path_factory):
    """Annotator data without contamination: every annotator agrees 100% with a good embedding."""
    data = make_synthetic(n_objects=12, dim=2, n_train=300, n_validation=10, n_test=10, votes=(2, 3), rate=0.0,
                          model="spammers", n_annotators=4, random_state=1)
    t = data.train.triplets
    path = tmp_path_factory.mktemp("clean") / "votes.csv"
    pd.DataFrame({"anchor": t[:, 0], "closer": t[:, 1], "farther": t[:, 2],
                  "annotator": [f"w{a}" for a in data.train.annotator]}).to_csv(path, index=False)
    return path


# -- crashes -------------------------------------------------------------------------------
def test_wilson_interval_contains_a_perfect_agreement():
    from roembed.annotators import wilson_interval

    low, high = wilson_interval(np.array([10.0, 37.0, 0.0]), np.array([10.0, 37.0, 5.0]))
    assert high[0] == 1.0 and high[1] == 1.0 and low[2] == 0.0
    assert np.all(low <= np.array([1.0, 1.0, 0.0])) and np.all(high >= np.array([1.0, 1.0, 0.0]))


def test_annotators_agreeing_100_percent_do_not_crash_the_plot(clean_votes, tmp_path):
    out = tmp_path / "out"
    result = run(clean_votes, "--out", out, "--quiet")
    assert result.exit_code == 0, result.output
    summary = check_output_set(out)
    assert "annotators.png" in summary["files"]
    assert (pd.read_csv(out / "annotators.csv")["agreement"] == 1.0).any()


def test_roe_with_annotator_rounds(clean_votes, tmp_path):
    result = run(clean_votes, "--out", tmp_path / "o", "--method", "roe", "--annotator-rounds", 1, "--quiet",
                 "--max-iter", 50)
    assert result.exit_code == 0, result.output
    summary = check_output_set(tmp_path / "o")
    assert isinstance(summary["objective"], float)
    assert all(isinstance(r["objective"], float) for r in summary["reweighting_rounds"])


def test_out_below_a_file_is_one_line_before_the_fit(clean_votes, tmp_path):
    (tmp_path / "afile").write_text("x")
    line = one_line_error(run(clean_votes, "--out", tmp_path / "afile" / "out"), "--out", "afile")
    assert "Traceback" not in line
    one_line_error(run(clean_votes, "--out", tmp_path / "afile"), "--out", "is a file")


def test_out_in_a_read_only_folder(clean_votes, tmp_path, monkeypatch):
    import tempfile

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkdtemp", refuse)
    one_line_error(run(clean_votes, "--out", tmp_path / "ro" / "out"), "--out", "permission denied")


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into read-only folders")
def test_out_in_a_really_read_only_folder(clean_votes, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    one_line_error(run(clean_votes, "--out", ro / "out"), "--out", "permission denied")


def test_parquet_without_pyarrow_is_one_line(clean_votes, tmp_path, monkeypatch):
    from roembed.data.io import read_comparisons, write_comparisons

    path = write_comparisons(read_comparisons(clean_votes), tmp_path / "votes.parquet")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    one_line_error(run(path, "--out", tmp_path / "o"), "votes.parquet", "pyarrow")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("args, fragment", [
    (("--method", "soe", "--lam", "0.5"), "--lam does not apply to --method soe"),
    (("--method", "ste", "--loss", "tste"), "--loss does not apply to --method ste"),
    (("--method", "roe", "--loss", "ste"), "--loss does not apply to --method roe"),
    (("--seed", "-1"), "--seed"),
    (("--method", "soe", "--n-init", "3"), "--n-init does not apply to --method soe"),
    (("--n-init", "0"), "--n-init"),
])
def test_options_a_method_does_not_take_are_refused(clean_votes, tmp_path, args, fragment):
    result = run(clean_votes, "--out", tmp_path / "o", *args)
    assert result.exit_code == 2 and fragment in result.stderr, result.output
    assert "votes.csv" not in result.stderr  # an option's fault, not the file's
    assert not (tmp_path / "o").exists()


def test_n_init_reaches_the_estimator_and_its_warning_names_the_option(clean_votes, tmp_path, monkeypatch):
    from roembed.estimators import robust

    result = run(clean_votes, "--out", tmp_path / "o", "--n-init", "3", "--quiet")
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "o" / "summary.json").read_text())["chosen"]["n_init"] == 3
    # every start but the first lands far off: the restart warning, in the CLI's words
    real = robust.stage_plain

    def spread(problem, settings, state):
        out = real(problem, settings, state)
        if settings.n_init > 1:
            best = out.restart_objectives.min()
            out.restart_objectives[:] = [best, 2 * best + 1, 3 * best + 1]
        return out

    monkeypatch.setattr(robust, "stage_plain", spread)
    result = run(clean_votes, "--out", tmp_path / "p", "--n-init", "3", "--quiet")
    lines = [line for line in result.stderr.splitlines() if "starts reached" in line]
    assert result.exit_code == 0 and len(lines) == 1 and "--n-init" in lines[0], result.stderr


def test_messages_name_the_real_problem(clean_votes, tmp_path):
    one_line_error(run(tmp_path, "--out", tmp_path / "o"), "is a folder, not a file",
                   f"several files are read as one: roembed fit {tmp_path / '*.csv'}")
    big = tmp_path / "big.csv"
    big.write_text("anchor,closer,farther\n0,1,2\n1,2,100000000000000000000\n")
    line = one_line_error(run(big, "--out", tmp_path / "o"), "big.csv line 3", "too large")
    assert "negative" not in line
    result = run(clean_votes, "--out", tmp_path / "o", "--method", "soe", "--max-iter", 1, "--quiet")
    assert result.exit_code == 0
    warning = [line for line in result.stderr.splitlines() if "converge" in line]
    assert len(warning) == 1 and "--max-iter" in warning[0] and ".py" not in warning[0], result.stderr


def stuck_in_the_write(clean_votes, out: Path, marker: Path, **popen) -> subprocess.Popen:
    """``roembed fit ... --out out`` in a child process, held (60 s) in the middle of writing its output set, once
    ``marker`` exists: after the first CSV is written into the staging folder."""
    child = textwrap.dedent(f"""
        import signal, sys, time
        signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C as a terminal delivers it, even where
        # this process was started with SIGINT ignored (a shell's background job: the test then waited 60 s)
        import roembed.cli._report as report
        original = report.write_csv
        def slow(frame, path):
            result = original(frame, path)
            open({str(marker)!r}, "w").close()
            for _ in range(600):  # short sleeps: a SIGINT the kernel hands to another thread (the fit's pools) is
                time.sleep(0.1)   # acted on at the next one; one long sleep ran to its end (the test timed out)
            return result
        report.write_csv = slow
        sys.argv = ["roembed", "fit", {str(clean_votes)!r}, "--out", {str(out)!r}, "--quiet", "--method", "soe"]
        from roembed._entry import run
        run()
    """)
    proc = subprocess.Popen([sys.executable, "-c", child], env={**os.environ, "PYTHONPATH": SRC}, **popen)
    deadline = time.monotonic() + 120
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    if not marker.exists():
        proc.kill()
        raise AssertionError("the child never reached the write")
    return proc


@pytest.mark.parametrize("module, args", [
    ("click", ["fit", "--help"]),  # the command line's own import
    ("pandas", ["fit", "VOTES", "--out", "OUT"]),  # the library's, when the command runs
])
def test_ctrl_c_during_imports_is_one_line(module, args, clean_votes, tmp_path):
    args = [{"VOTES": str(clean_votes), "OUT": str(tmp_path / "out")}.get(a, a) for a in args]
    code = ("import builtins, sys\n"
            "real = builtins.__import__\n"
            "def imp(name, *a, **k):\n"
            f"    if name == {module!r} or name.startswith({module + '.'!r}): raise KeyboardInterrupt\n"
            "    return real(name, *a, **k)\n"
            "builtins.__import__ = imp\n"
            f"sys.argv = ['roembed', *{args!r}]\n"
            "from roembed._entry import run\n"
            "run()\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": SRC}, timeout=120)
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr.strip() == "roembed: interrupted", proc.stderr


@pytest.mark.parametrize("signum, code, line", [(signal.SIGINT, 130, "interrupted"),
                                                 (signal.SIGTERM, 143, "terminated")])
@pytest.mark.parametrize("earlier_run", [False, True])
def test_a_signal_during_a_run_is_one_line_and_leaves_the_folder_as_it_was(clean_votes, tmp_path, signum, code,
                                                                           line, earlier_run):
    """A real SIGINT or SIGTERM in the middle of the output set's write (click turns Ctrl-C into its Abort, which
    printed 'Aborted!' with exit 1; SIGTERM, a scheduler's time limit, killed the process and left its staging
    folder): one line, exit 128 + the signal, the earlier run's set whole or no folder at all, and no staging."""
    out, marker = tmp_path / "out", tmp_path / "writing"
    before = {}
    if earlier_run:
        assert run(clean_votes, "--out", out, "--quiet", "--seed", 1).exit_code == 0
        before = {p.name: p.read_bytes() for p in out.iterdir()}
    proc = stuck_in_the_write(clean_votes, out, marker, stderr=subprocess.PIPE, text=True)
    try:
        assert any(p.name.startswith(".out") for p in tmp_path.iterdir())  # its staging folder, half written
        proc.send_signal(signum)
        stderr = proc.communicate(timeout=60)[1]
    finally:
        proc.kill()
    assert proc.returncode == code, stderr
    assert stderr.strip() == f"roembed: {line}", stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"] * earlier_run + ["writing"]  # no staging left
    if earlier_run:
        assert {p.name: p.read_bytes() for p in out.iterdir()} == before
        check_output_set(out)


def test_a_home_that_cannot_be_written_gives_no_matplotlib_lines(clean_votes, tmp_path):
    """A container user's home that cannot be written: matplotlib logged two lines on every run ("mkdir -p
    failed ...", "Matplotlib created a temporary cache directory ...") and rebuilt its font cache each time.
    The command line points it at a private folder of the temporary folder, kept between runs."""
    env = {k: v for k, v in os.environ.items() if k not in ("MPLCONFIGDIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")}
    env.update(HOME="/dev/null", TMPDIR=str(tmp_path), PYTHONPATH=SRC)  # ~/.config: below a file, even for root
    code = "import sys; from roembed._entry import run; sys.argv[0] = 'roembed'; run()"
    for out in ("first", "second"):
        proc = subprocess.run([sys.executable, "-c", code, "fit", str(clean_votes), "--out", str(tmp_path / out),
                               "--quiet", "--method", "soe"], capture_output=True, text=True, env=env, timeout=300)
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr
        assert "embedding.png" in check_output_set(tmp_path / out)["files"]
    folder = tmp_path / f"roembed-matplotlib-{os.getuid()}"
    assert [p.name for p in folder.iterdir() if p.name.startswith("fontlist")]  # the font cache, kept


def test_names_the_terminal_cannot_print_are_escaped_not_fatal(tmp_path):
    """An emoji in a name printed (the bootstrap's least stable objects) to a Latin-1 terminal, or to a file
    redirected on Windows: a UnicodeEncodeError after the fit, exit 1 and no output.  Now an escape."""
    rng = np.random.default_rng(0)
    names = [f"\U0001F3B8 band {i}" for i in range(10)] + ["Motörhead", "Zoë"]  # whichever five are printed
    X = rng.normal(size=(len(names), 2))
    rows = []
    for _ in range(300):
        a, b, c = rng.choice(len(names), 3, replace=False)
        if np.linalg.norm(X[a] - X[b]) > np.linalg.norm(X[a] - X[c]):
            b, c = c, b
        rows.append((names[a], names[b], names[c]))
    path = tmp_path / "named.csv"
    pd.DataFrame(rows, columns=["anchor", "closer", "farther"]).to_csv(path, index=False)
    env = {**os.environ, "PYTHONIOENCODING": "latin-1", "PYTHONPATH": SRC}
    code = "import sys; from roembed._entry import run; sys.argv[0] = 'roembed'; run()"
    proc = subprocess.run([sys.executable, "-c", code, "fit", str(path), "--out", str(tmp_path / "out"),
                           "--bootstrap", "12", "--method", "soe"], capture_output=True, env=env, timeout=300)
    stdout = proc.stdout.decode("latin-1")
    assert proc.returncode == 0, proc.stderr.decode("latin-1")[-2000:]
    least = stdout.split("least stable: ")[1].split(";")[0].split(", ")
    assert len(least) == 5 and all(name in [n.encode("latin-1", "backslashreplace").decode("latin-1")
                                            for n in names] for name in least), least
    assert any(name.startswith("\\U0001f3b8 band") for name in least), least
    assert "uncertainty.csv" in check_output_set(tmp_path / "out")["files"]


def test_a_closed_stdout_stops_the_run_with_one_line_and_keeps_the_old_set(clean_votes, tmp_path):
    """``roembed fit ... | head``: the reader gone, click ended the process with exit 1 and no word (the fit
    lost in silence).  Now one line on stderr, exit 141 (a shell's code for SIGPIPE), the earlier run whole,
    no staging and no "Exception ignored" at exit; the help still ends quietly."""
    out = tmp_path / "out"
    assert run(clean_votes, "--out", out, "--quiet", "--seed", 1).exit_code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    code = "import sys; from roembed._entry import run; sys.argv[0] = 'roembed'; run()"
    env = {**os.environ, "PYTHONPATH": SRC}
    for args in (["fit", str(clean_votes), "--out", str(out), "--method", "soe"], ["fit", "--help"]):
        read, write = os.pipe()
        os.close(read)  # the reader has gone before the first line
        try:
            proc = subprocess.run([sys.executable, "-c", code, *args], stdout=write, stderr=subprocess.PIPE,
                                  text=True, env=env, timeout=300)
        finally:
            os.close(write)
        if args[1] == "--help":
            assert "stopped" not in proc.stderr and "Traceback" not in proc.stderr  # click's own quiet end
            continue
        assert proc.returncode == 141, proc.stderr
        assert proc.stderr.strip().splitlines()[-1].startswith("roembed: stopped: the program reading its output "
                                                                "exited"), proc.stderr
        assert "Exception ignored" not in proc.stderr and "Traceback" not in proc.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    check_output_set(out)


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_reading_dash_from_a_terminal_says_so(tmp_path):
    """`roembed fit -` typed at a terminal (no pipe) waited for input without a word.  Now one line on stderr
    says it reads the terminal and how to end; rows typed there are fitted (the chunked reader reads once more
    after the first end of input, and a terminal, unlike a pipe, answers that read only at a second Ctrl-D)."""
    master, slave = os.openpty()
    code = "import sys; from roembed._entry import run; sys.argv[0] = 'roembed'; run()"
    proc = subprocess.Popen([sys.executable, "-c", code, "fit", "-", "--out", str(tmp_path / "out"), "--dim", "1",
                             "--quiet"], stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": SRC})
    os.close(slave)
    try:
        os.write(master, b"anchor,closer,farther\n0,1,2\n1,2,0\n2,0,1\n0,2,3\n3,1,0\n\x04")
        time.sleep(1)
        os.write(master, b"\x04")
        stderr = proc.communicate(timeout=120)[1]
    finally:
        proc.kill()
        os.close(master)
    assert proc.returncode == 0, stderr
    assert stderr.splitlines()[0].startswith("reading '-' from the terminal: type or paste the rows, then Ctrl-D")
    assert check_output_set(tmp_path / "out")["n_responses"] == 5


def test_a_signal_after_the_run_while_the_process_winds_down_is_not_a_traceback(tmp_path):
    """SIGTERM to a whole job (a scheduler's time limit) just after the run ended, while joblib's workers were
    joined at exit: the handler raised there and Python printed "Exception ignored ... Terminated" with its
    traceback.  Once the run is over, the signal has its default action."""
    code = textwrap.dedent("""
        import atexit, os, signal, sys
        atexit.register(lambda: os.kill(os.getpid(), signal.SIGTERM))  # as joblib's exit hook would be hit
        sys.argv = ["roembed", "--version"]
        from roembed._entry import run
        run()
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": SRC}, timeout=120)
    assert "roembed, version" in proc.stdout
    assert proc.returncode == -signal.SIGTERM and proc.stderr == "", proc.stderr


# -- output sets ---------------------------------------------------------------------------
def test_rerun_with_another_method_leaves_no_stale_file(clean_votes, tmp_path):
    out = tmp_path / "out"
    assert run(clean_votes, "--out", out, "--quiet").exit_code == 0
    assert "outliers.csv" in check_output_set(out)["files"]
    assert run(clean_votes, "--out", out, "--quiet", "--method", "soe").exit_code == 0
    assert check_output_set(out)["files"] == ["comparisons.csv", "embedding.csv", "embedding.png", "summary.json"]


@pytest.mark.parametrize("kept", ["notes.txt", ".gitkeep", ".git/HEAD"])
def test_out_holding_other_files_is_not_replaced(clean_votes, tmp_path, kept):
    """The run replaces the whole folder: hidden files (a git checkout's .git) are the user's too."""
    out = tmp_path / "mine"
    (out / kept).parent.mkdir(parents=True)
    (out / kept).write_text("keep me")
    one_line_error(run(clean_votes, "--out", out), "--out", kept.split("/")[0])
    assert (out / kept).read_text() == "keep me" and sorted(p.name for p in out.iterdir()) == [kept.split("/")[0]]


@pytest.mark.parametrize("out", ["", ".", "./", "..", "../work"])
def test_out_naming_the_working_folder_is_refused(clean_votes, tmp_path, monkeypatch, out):
    """In an empty working folder '--out .' (or '') passed the other-files check and ended in an OSError traceback
    (renaming the working folder); now one line, and nothing written (no staging left either)."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    one_line_error(run(clean_votes, "--out", out), "--out", "is the working folder")
    assert list(work.iterdir()) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["work"]


def test_out_holding_a_file_browsers_litter_is_replaced(clean_votes, tmp_path):
    out = tmp_path / "out"
    assert run(clean_votes, "--out", out, "--quiet").exit_code == 0
    for litter in (".DS_Store", "._embedding.csv", "Thumbs.db", ".report.html.k2j4.tmp"):  # the last: a killed run's
        (out / litter).write_text("")
    assert run(clean_votes, "--out", out, "--quiet", "--method", "soe").exit_code == 0
    assert check_output_set(out)["files"] == ["comparisons.csv", "embedding.csv", "embedding.png", "summary.json"]


@pytest.mark.parametrize("victim", ["outliers", "summary", "embedding.png"])
def test_interrupted_rerun_keeps_the_whole_old_set(clean_votes, tmp_path, monkeypatch, victim):
    out = tmp_path / "out"
    assert run(clean_votes, "--out", out, "--quiet", "--seed", 1).exit_code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    import roembed.cli._report as report
    import roembed.plotting as plotting

    if victim == "embedding.png":
        def crash(*args, **kwargs):
            raise KeyboardInterrupt
        monkeypatch.setattr(plotting, "save_figure", crash)
    else:
        original = report.write_csv if victim == "outliers" else report.write_json
        name = "write_csv" if victim == "outliers" else "write_json"

        def crash(data, path):
            if path.stem == victim:
                path.write_text("half")
                raise KeyboardInterrupt
            return original(data, path)
        monkeypatch.setattr(report, name, crash)
        if victim == "summary":
            import roembed.cli._fit as fit_module
            monkeypatch.setattr(fit_module, "write_json", crash)
    result = run(clean_votes, "--out", out, "--quiet", "--seed", 2)
    assert result.exit_code != 0
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # the old run, whole
    check_output_set(out)


def test_sigkill_during_the_write_leaves_one_consistent_set(clean_votes, tmp_path):
    out = tmp_path / "out"
    assert run(clean_votes, "--out", out, "--quiet", "--seed", 1).exit_code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    marker = tmp_path / "writing"
    proc = stuck_in_the_write(clean_votes, out, marker)
    try:
        staging = [p for p in tmp_path.iterdir() if p.name.startswith(".out")]
        assert staging and (staging[0] / "embedding.csv").exists()  # killed in the middle of its set
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # the old set, whole
    # the next run into the same folder removes the killed run's staging folder
    assert run(clean_votes, "--out", out, "--quiet", "--method", "soe").exit_code == 0
    check_output_set(out)


def no_space_left(monkeypatch, module, name):
    """Makes ``module.name`` fail as a full disk does (ENOSPC)."""
    import errno

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(module, name, full)


def test_a_full_disk_mid_write_is_one_line_naming_the_file_and_keeps_the_old_set(clean_votes, tmp_path,
                                                                                   monkeypatch):
    """The disk filling while the set is written (the OSError of a buffered write surfaces at flush or fsync;
    a traceback through pandas before, exit 1): one line naming the file as the user will look for it (in
    --out, not the hidden staging folder), exit 2, the earlier run whole and no staging left."""
    out = tmp_path / "out"
    assert run(clean_votes, "--out", out, "--quiet", "--seed", 1).exit_code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    no_space_left(monkeypatch, os, "fsync")  # the first file atomic_write finishes
    line = one_line_error(run(clean_votes, "--out", out, "--quiet", "--seed", 2), "No space left on device")
    assert line.startswith(f"Error: {out}{os.sep}") and line.endswith(".csv: cannot write (No space left on device)")
    assert "staging" not in line
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    check_output_set(out)


@pytest.mark.parametrize("path, shown", [
    ("/w/.out.roembed-staging-123-abc_9/embedding.csv", "/w/out/embedding.csv"),
    (".my.run.roembed-staging-7-x/summary.json", "my.run/summary.json"),  # a relative --out with a dot
    ("C:\\w\\.out.roembed-staging-9-ab\\e.csv", "C:\\w\\out\\e.csv"),  # Windows' separators
    ("/w/store/replicate-0000.npz", "/w/store/replicate-0000.npz"),  # not in a staging folder: as it is
    ("/w/.out.roembed-staging-x/e.csv", "/w/.out.roembed-staging-x/e.csv"),  # no process id: not ours
])
def test_a_file_in_the_staging_folder_is_named_as_it_will_be_in_out(path, shown):
    from roembed._io import shown_path

    assert shown_path(path) == shown


def test_a_full_disk_in_the_bootstrap_store_names_the_store_file(clean_votes, tmp_path, monkeypatch):
    store, out = tmp_path / "store", tmp_path / "out"
    no_space_left(monkeypatch, np, "savez")  # a replicate's file
    line = one_line_error(run(clean_votes, "--out", out, "--quiet", "--bootstrap", 2, "--bootstrap-store", store),
                          "cannot write (No space left on device)")
    assert line.startswith(f"Error: {store / 'replicate-0000.npz'}:"), line
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["store"]
    assert not [p for p in store.iterdir() if p.name.startswith(".")]  # no temporary replicate file left


# -- results the data cannot support --------------------------------------------------------
def write_triplets(path, rows, weight=None):
    frame = pd.DataFrame(rows, columns=["anchor", "closer", "farther"])
    if weight is not None:
        frame["weight"] = weight
    frame.to_csv(path, index=False)
    return path


def all_triplets(objects):
    return [(a, b, c) for a in objects for b in objects for c in objects if len({a, b, c}) == 3 and b < c]


def test_disconnected_groups_are_reported(tmp_path):
    rows = all_triplets(range(5)) + all_triplets(range(5, 10))
    result = run(write_triplets(tmp_path / "two.csv", rows), "--out", tmp_path / "o", "--method", "soe", "--quiet")
    assert result.exit_code == 0, result.output
    assert "2 groups with no comparison between them" in result.stderr and "two.csv" in result.stderr
    emb = pd.read_csv(tmp_path / "o" / "embedding.csv")
    assert emb["group"].tolist() == [0] * 5 + [1] * 5
    summary = check_output_set(tmp_path / "o")
    assert summary["n_groups"] == 2 and any("groups" in w for w in summary["warnings"])


def test_held_out_comparisons_of_an_object_the_fit_never_saw_are_counted(tmp_path):
    """--holdout can put an object's only comparison on the held-out side: its coordinates are then the
    start's, and the held-out error counts it without a word unless the run says so."""
    from roembed import read_comparisons
    from roembed.model_selection import holdout_split

    rows = all_triplets(range(6))[:40] + [(8, 0, 1)]
    path = write_triplets(tmp_path / "t.csv", rows)
    data = read_comparisons(path)
    seed = next(s for s in range(100) if 8 in holdout_split(data, 0.5, s, "object_set")[1].quadruplets)  # object 8 held out
    result = run(path, "--out", tmp_path / "o", "--method", "soe", "--holdout", 0.5, "--seed", seed, "--quiet")
    assert result.exit_code == 0, result.output
    line = [line for line in result.stderr.splitlines() if "--holdout" in line and "chance" not in line]
    assert len(line) == 1 and line[0].startswith("warning: --holdout 0.5: 1 of "), result.stderr
    assert "have an object the fit saw in no comparison (the first: 8)" in line[0] and ".py" not in line[0]
    assert line[0].removeprefix("warning: ") in check_output_set(tmp_path / "o")["warnings"]
    kept = next(s for s in range(100) if 8 not in holdout_split(data, 0.5, s, "object_set")[1].quadruplets)
    result = run(path, "--out", tmp_path / "k", "--method", "soe", "--holdout", 0.5, "--seed", kept, "--quiet")
    assert result.exit_code == 0 and "saw in no comparison" not in result.stderr, result.stderr


def test_pure_contradiction_is_reported(tmp_path):
    rows = all_triplets(range(6))
    rows += [(a, c, b) for a, b, c in rows]
    result = run(write_triplets(tmp_path / "c.csv", rows), "--out", tmp_path / "o", "--quiet")
    assert result.exit_code == 0, result.output
    assert "pure contradiction" in result.stderr


def test_unused_ids_are_reported_and_not_fitted(tmp_path):
    ids = [0, 3, 17, 99, 1000, 5000, 77777, 123456, 654321, 999999]
    rows = [(ids[a], ids[b], ids[c]) for a, b, c in all_triplets(range(10))[::3]]
    result = run(write_triplets(tmp_path / "ids.csv", rows), "--out", tmp_path / "o", "--method", "soe", "--quiet")
    assert result.exit_code == 0, result.output
    assert "only 10 of the 1000000 object ids" in result.stderr
    emb = pd.read_csv(tmp_path / "o" / "embedding.csv")
    assert emb["object"].tolist() == ids and (emb["n_responses"] > 0).all()
    # a --test file of the same ids is scored against the kept objects, not against the file's own indices
    test_rows = [(ids[a], ids[b], ids[c]) for a, b, c in all_triplets(range(10))[1::3]]
    result = run(write_triplets(tmp_path / "ids.csv", rows), "--out", tmp_path / "t", "--method", "soe", "--quiet",
                 "--test", write_triplets(tmp_path / "test_ids.csv", test_rows))
    assert result.exit_code == 0, result.output
    X = pd.read_csv(tmp_path / "t" / "embedding.csv").set_index("object")[["x1", "x2"]]
    d = lambda a, b: float(((X.loc[a] - X.loc[b]) ** 2).sum())
    wrong = np.mean([d(i, j) >= d(i, k) for i, j, k in test_rows])
    assert json.loads((tmp_path / "t" / "summary.json").read_text())["holdout_error"] == pytest.approx(wrong)


def test_a_few_unused_ids_are_reported(tmp_path):
    rows = [r for r in all_triplets(range(8)) if 6 not in r]
    result = run(write_triplets(tmp_path / "ids.csv", rows), "--out", tmp_path / "o", "--method", "soe", "--quiet")
    assert result.exit_code == 0 and "1 of 8 objects appear in no comparison (e.g. 6)" in result.stderr


def test_dim_not_below_the_objects_is_refused(tmp_path):
    path = write_triplets(tmp_path / "small.csv", all_triplets(range(4)))
    one_line_error(run(path, "--out", tmp_path / "o", "--dim", 4), "--dim 4", "only 4 objects", "--dim 3")
    assert not (tmp_path / "o").exists()


def test_extreme_weights_warn_and_report_both_errors(tmp_path):
    rows = all_triplets(range(6))
    weight = np.ones(len(rows))
    weight[3] = 1e300
    path = write_triplets(tmp_path / "w.csv", rows, weight)
    result = run(path, "--out", tmp_path / "o", "--method", "soe")
    assert result.exit_code == 0, result.output
    assert "extreme weights" in result.stderr
    summary = check_output_set(tmp_path / "o")
    assert summary["train_error"] < 1e-6 < summary["train_error_unweighted"]
    assert "unweighted" in result.stdout


# -- inputs real users have ----------------------------------------------------------------
def test_several_compressed_latin_1_files_with_ties_and_extra_columns(clean_votes, tmp_path):
    import gzip

    frame = pd.read_csv(clean_votes)
    frame["annotator"] = frame["annotator"].str.replace("w1", "José")
    frame["tie"] = np.arange(len(frame)) % 5 == 0
    frame["sampler"] = np.where(np.arange(len(frame)) % 2, "random", "active")
    half = len(frame) // 2
    a, b = tmp_path / "a.csv.gz", tmp_path / "b.csv"
    a.write_bytes(gzip.compress(frame.iloc[:half].to_csv(index=False).encode("latin-1")))
    b.write_bytes(frame.iloc[half:].to_csv(index=False).encode("latin-1"))
    line = one_line_error(run(a, b, "--out", tmp_path / "o"), "a.csv.gz line", "not utf-8", "--encoding latin-1")
    assert "Traceback" not in line
    result = run(a, b, "--out", tmp_path / "o", "--encoding", "latin-1")
    assert result.exit_code == 0, result.output
    assert "tie answers as half a vote each way" in result.stdout and "sampler" in result.stdout
    summary = check_output_set(tmp_path / "o")
    assert summary["input"] == [str(a), str(b)] and summary["n_responses"] == len(frame) + frame["tie"].sum()
    annotators = pd.read_csv(tmp_path / "o" / "annotators.csv")
    assert "José" in set(annotators["annotator"])
    outliers = pd.read_csv(tmp_path / "o" / "outliers.csv")
    assert {"sampler", "tie"} <= set(outliers.columns)


def test_progress_writes_plain_lines_when_not_a_terminal(monkeypatch, capsys):
    import roembed.cli._report as report
    from roembed.solvers.progress import _OBSERVERS

    now = [100.0]
    monkeypatch.setattr("time.monotonic", lambda: now[0])
    with report.progress(True, "fit soe", every=5.0):
        observers = _OBSERVERS.get()
        assert len(observers) == 1
        for it in range(1, 301):  # 300 iterations over 12 s: a line after 1 s of iterations, then every 5 s
            now[0] += 0.04
            observers[0](it, 1.0 / it)
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 4 and all(line.startswith("fit soe: ") for line in lines)
    assert lines[0] == "fit soe: 26 iterations, 25 it/s, objective 0.038462"
    assert lines[-1] == "fit soe: done, 300 iterations in 12.0 s"  # the log ends on the total
    assert "\r" not in err  # plain lines, no carriage-return redraws


def test_progress_names_the_solve_whose_objective_it_shows(monkeypatch, capsys):
    """A default fit runs several solves (restarts at p <= 2, the tuning's candidates, the final fit), each with
    its own objective: every iteration runs inside a named phase, in the fit's order, and the plain progress line
    says which phase its objective belongs to (a bare "objective" rising from line to line looked like a fit
    going wrong)."""
    import roembed.cli._report as report
    from roembed import RobustOrdinalEmbedding
    from roembed.solvers.progress import _OBSERVERS, current_phase, observe_iterations, phase

    data = make_synthetic(n_objects=30, dim=2, n_train=600, n_validation=10, rate=0.2, model="unanimous",
                          random_state=0)
    seen = []
    with observe_iterations(lambda _it, _value: seen.append(current_phase())):
        RobustOrdinalEmbedding(2, random_state=0).fit(data.train)
    phases = list(dict.fromkeys(seen))
    assert "" not in phases
    assert phases[0] == "restarts" and phases[-1] == "final fit", phases
    assert any(p.startswith("choosing soe, ") for p in phases) and any(p.startswith("choosing tste, ") for p in phases)
    assert seen.index("final fit") > max(i for i, p in enumerate(seen) if p.startswith("choosing"))
    # verbose=N in Python names the solve as well
    RobustOrdinalEmbedding(2, random_state=0, verbose=1).fit(data.train)
    printed = [line.split("] iteration")[0] for line in capsys.readouterr().out.splitlines()]
    assert list(dict.fromkeys(printed)) == [f"[RobustOrdinalEmbedding: {p}" for p in phases]

    now = [100.0]
    monkeypatch.setattr("time.monotonic", lambda: now[0])
    with report.progress(True, "fit robust", every=5.0):
        observer = _OBSERVERS.get()[0]
        with phase("restarts"):
            for it in range(1, 30):  # one iteration every 1/8 s: exact in binary
                now[0] += 0.125
                observer(it, 0.2)
        with phase("final fit"):
            for it in range(1, 60):
                now[0] += 0.125
                observer(it, 0.3)
    lines = capsys.readouterr().err.strip().splitlines()
    # the count is the whole fit's, the objective the solve's: "fit robust (final fit): 88 iterations" read as
    # the final fit's count
    assert lines == ["fit robust: 9 iterations, 8 it/s; restarts: objective 0.2",
                     "fit robust: 49 iterations, 8 it/s; final fit: objective 0.3",
                     "fit robust: done, 88 iterations in 11.0 s"]


def test_progress_bar_on_a_terminal_names_the_phase(monkeypatch):
    """On a terminal the tqdm bar's description follows the phase, written once (tqdm's ``set_description``
    appends its own ": ", which doubled the colon)."""
    import io

    import roembed.cli._report as report
    from roembed.solvers.progress import _OBSERVERS, phase

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    with report.progress(True, "fit robust"):
        observer = _OBSERVERS.get()[0]
        for label in ("restarts", "final fit"):
            with phase(label):
                for it in range(3):
                    time.sleep(0.4)  # past tqdm's one-second delay and its refresh interval
                    observer(it, 0.5)
    shown = terminal.getvalue().replace("\r", "\n")
    assert "fit robust (restarts): " in shown and "fit robust (final fit): " in shown
    assert "): :" not in shown


def test_progress_rate_counts_from_the_first_iteration_and_short_fits_stay_quiet(monkeypatch, capsys):
    """Setup before the first iteration (checks, aggregation) is not in the rate, a lone first iteration
    after a slow setup is not reported as the whole fit, and a fit under a second writes nothing."""
    import roembed.cli._report as report
    from roembed.solvers.progress import _OBSERVERS

    now = [100.0]
    monkeypatch.setattr("time.monotonic", lambda: now[0])
    with report.progress(True, "fit robust", every=5.0):
        observer = _OBSERVERS.get()[0]
        now[0] += 2.0  # 2 s of setup
        observer(1, 0.5)
        for it in range(2, 14):  # then 12 iterations, one every 1/8 s (exact in binary)
            now[0] += 0.125
            observer(it, 0.5 / it)
    lines = capsys.readouterr().err.strip().splitlines()
    # the first line waits for a second of iterations (its rate was read over the first two before)
    assert lines == ["fit robust: 9 iterations, 8 it/s, objective 0.055556",
                     "fit robust: done, 13 iterations in 3.5 s"]
    with report.progress(True, "fit quick", every=5.0):
        observer = _OBSERVERS.get()[0]
        for it in range(1, 20):
            now[0] += 0.01
            observer(it, 1.0)
    assert capsys.readouterr().err == ""


def test_device_runs_the_robust_fit_on_the_torch_solver(tmp_path):
    """--device: the torch solver on that device (here the CPU, where a GPU is not), the same outputs as
    the NumPy path's fit: the same chosen candidate (lam to float32), the same number of flagged comparisons."""
    pytest.importorskip("torch")
    data = write_triplets(tmp_path / "t.csv", all_triplets(range(8))[::2])
    numpy_run = run(data, "--out", tmp_path / "a")
    torch_run = run(data, "--out", tmp_path / "b", "--device", "cpu:0")
    assert numpy_run.exit_code == 0 and torch_run.exit_code == 0, torch_run.output
    assert "(torch, cpu:0)" in torch_run.output and "(torch" not in numpy_run.output
    a, b = check_output_set(tmp_path / "a"), check_output_set(tmp_path / "b")
    assert b["settings"]["estimator"]["solver"] == "torch" and b["settings"]["estimator"]["device"] == "cpu:0"
    assert a["settings"]["estimator"]["solver"] == "lbfgs"
    assert {k: v for k, v in a["chosen"].items() if k != "lam"} == {k: v for k, v in b["chosen"].items() if k != "lam"}
    assert b["chosen"]["lam"] == pytest.approx(a["chosen"]["lam"], rel=1e-3)  # float32 margins
    assert a["n_outliers"] == b["n_outliers"]
    assert abs(a["train_error"] - b["train_error"]) <= 0.01


def test_ids_counted_from_one_get_a_hint_and_read_with_index_base_one(tmp_path):
    rows = [tuple(o + 1 for o in r) for r in all_triplets(range(7))]  # a MATLAB export: objects 1..7
    path = write_triplets(tmp_path / "one_based.csv", rows)
    result = run(path, "--out", tmp_path / "o", "--method", "soe", "--quiet")
    assert result.exit_code == 0 and "1 of 8 objects appear in no comparison (e.g. 0)" in result.stderr
    assert "--index-base 1" in result.stderr
    result = run(path, "--out", tmp_path / "o1", "--method", "soe", "--quiet", "--index-base", "1")
    assert result.exit_code == 0 and "no comparison" not in result.stderr
    # an object merely missing in the middle is no sign of 1-based numbers
    rows = [r for r in all_triplets(range(8)) if 6 not in r]
    result = run(write_triplets(tmp_path / "ids.csv", rows), "--out", tmp_path / "o2", "--method", "soe", "--quiet")
    assert "index-base" not in result.stderr


def test_warnings_are_printed_once_each_in_the_cli_s_words_and_deprecation_notices_not_at_all():
    """A library's deprecation notice (pandas 2.0.0-2.0.2 raised one under numpy 1.25+ from every table read)
    speaks to programmers, and Python hides it outside ``__main__``: the CLI does too, and keeps the rest."""
    import warnings

    from roembed.cli._report import collected_warnings, warning_lines

    with collected_warnings() as caught:
        warnings.warn("np.find_common_type is deprecated", DeprecationWarning)
        warnings.warn("soon", PendingDeprecationWarning)
        for _ in range(2):
            warnings.warn("max_iter reached", UserWarning)
        warnings.warn("this will change", FutureWarning)
    assert warning_lines(caught, "f.csv") == ["warning: f.csv: --max-iter reached", "warning: f.csv: this will change"]
