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
