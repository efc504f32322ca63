"""The linter sees every file of the package (ruff skips any folder named
``dist`` or ``build`` unless pyproject.toml replaces its excludes)."""

import pathlib
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT


def test_ruff_lists_every_package_file():
    """`ruff check --show-files` names every .py file under d2lpar/,
    d2lpar/multiprocess/ included."""
    ruff = shutil.which('ruff', path=str(pathlib.Path(sys.executable).parent))
    if ruff is None:
        pytest.skip('ruff is not installed (the dev extra brings it)')
    shown = subprocess.run(
        [ruff, 'check', '--show-files', '.'],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    files = {pathlib.Path(line.strip()) for line in shown.splitlines()}
    package = sorted((ROOT / 'd2lpar').rglob('*.py'))
    assert any('multiprocess' in p.parts for p in package)
    missing = [str(p.relative_to(ROOT)) for p in package if p not in files]
    assert missing == []
