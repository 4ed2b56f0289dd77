"""Prints the lowest versions pyproject.toml allows, one requirement a line ("numpy==1.26"), for the
dependencies and the test extra: CI's second run of the suite installs them, so a lower bound that no
longer works fails CI instead of a user's install."""
import re
import tomllib
from pathlib import Path

project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]
for requirement in project["dependencies"] + project["optional-dependencies"]["test"]:
    name, lowest = re.fullmatch(r"([A-Za-z0-9_.\-\[\]]+)>=([0-9.]+)(,<[0-9.]+)?", requirement).group(1, 2)
    print(f"{name}=={lowest}")
