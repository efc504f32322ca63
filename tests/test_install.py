"""Installing d2lpar: every subpackage ships, and import errors say which
command fixes them (the pins are checked in test_pins.py)."""

import fnmatch
import os
import subprocess
import sys
import tomllib

from conftest import ROOT


def pyproject():
    with open(ROOT / 'pyproject.toml', 'rb') as f:
        return tomllib.load(f)


def test_every_subpackage_is_installed():
    """The package list of pyproject.toml covers bench/, multiprocess/ and any
    other subpackage, so a non-editable install imports them."""
    patterns = pyproject()['tool']['setuptools']['packages']['find']['include']
    packages = [
        '.'.join(p.parent.relative_to(ROOT).parts)
        for p in (ROOT / 'd2lpar').rglob('__init__.py')
    ]
    assert 'd2lpar.multiprocess' in packages and 'd2lpar.bench' in packages
    for package in packages:
        assert any(fnmatch.fnmatch(package, pat) for pat in patterns), package


def run_python(code):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, '-c', code],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


BLOCK_MXNET = """
import importlib.abc, sys
class NoMXNet(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == 'mxnet' or name.startswith('mxnet.'):
            raise ModuleNotFoundError("No module named 'mxnet'", name=name)
sys.meta_path.insert(0, NoMXNet())
"""


def test_import_without_mxnet_names_the_install_command():
    """Without MXNet, ``import d2lpar`` works (the PyTorch twin needs no
    MXNet) and the first use of MXNet's part fails with an ImportError
    that gives the command installing it, not a bare
    ModuleNotFoundError."""
    done = run_python(BLOCK_MXNET + 'import d2lpar\nd2lpar.devices')
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith('ImportError: d2lpar needs MXNet 1.9.1'), last
    assert 'pip install "d2lpar[cpu]"' in last
    assert 'mxnet-cu112==1.9.1' in last


def test_unsupported_python_gets_a_sentence():
    """On a Python other than 3.11 and 3.12 the import warns, saying
    which Python works and why (numpy below 2 has no wheels there)."""
    done = run_python(
        'import sys, warnings\n'
        'sys.version_info = (3, 13, 0, "final", 0)\n'
        'warnings.simplefilter("error", UserWarning)\n'
        'import d2lpar'
    )
    assert done.returncode == 1
    assert (
        'd2lpar is tested on Python 3.11 and 3.12' in done.stderr
        and 'numpy < 2' in done.stderr
    ), done.stderr


def test_help_starts_with_an_overview_by_chapter():
    """help(d2lpar) opens with one screen (under 45 lines) listing the
    main functions by chapter, each of them a real public name."""
    import d2lpar

    doc = d2lpar.__doc__
    overview = doc[doc.index('Main functions') : doc.index('Install:')]
    assert len(doc[: doc.index('Install:')].splitlines()) < 45
    for name in (
        'train',
        'train_batch',
        'allreduce',
        'split_batch',
        'check_allreduce',
        'train_concise',
        'devices',
    ):
        assert f' {name}' in overview and hasattr(d2lpar, name), name
