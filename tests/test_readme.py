"""The README's Python example runs as written (an API renamed or moved breaks it here, not for a reader)."""
import re
import runpy
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readme_python_example_runs(tmp_path, monkeypatch, capsys):
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## In Python"):]
    block = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    script = tmp_path / "example.py"
    script.write_text(block, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    runpy.run_path(str(script), run_name="__main__")
    error = float(re.search(r"held-out triplet error ([0-9.]+)", capsys.readouterr().out).group(1))
    assert 0.0 < error < 0.1  # the spammers are found: the robust default's error is 0.046 here
    assert (tmp_path / "report.html").stat().st_size > 10_000


def test_the_uncertainty_docs_local_example_runs(tmp_path):
    """docs/uncertainty.md's local-approximation example as written: it fitted a 2-d map to data drawn in 10
    dimensions, so its ``coverage(data.X_true)`` raised "points have 10 coordinates and the map 2"."""
    text = (README.parent / "docs" / "uncertainty.md").read_text(encoding="utf-8")
    section = text[text.index("## Without refitting"):]
    block = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    script = tmp_path / "local.py"
    script.write_text("import roembed\nfrom roembed.experiments import make_synthetic\n" + block, encoding="utf-8")
    done = runpy.run_path(str(script), run_name="__main__")
    loc, data = done["loc"], done["data"]
    assert len(loc.objects()) == 100 and loc.objects()[["x1", "x2"]].notna().all().all()
    assert 0.6 <= loc.coverage(data.X_true) <= 1.0  # 0.80 there: regions too small, as the docs' table says
