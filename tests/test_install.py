"""Installing d2lpar: one home for the pins, and import errors that say
which command fixes them."""

import fnmatch
import importlib.metadata
import os
import pathlib
import subprocess
import sys
import tomllib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'scripts'))
import pins  # noqa: E402


def pyproject():
    with open(ROOT / 'pyproject.toml', 'rb') as f:
        return tomllib.load(f)


def all_pins():
    meta = pyproject()['project']
    return meta['dependencies'] + [
        p for e in pins.EXTRAS for p in meta['optional-dependencies'][e]
    ]


def test_requirements_txt_is_generated_from_pyproject():
    """requirements.txt is exactly what scripts/pins.py makes of
    pyproject.toml: the pins have one home."""
    text = (ROOT / 'requirements.txt').read_text()
    assert text == pins.render(), (
        'requirements.txt is out of date; run: '
        'python scripts/pins.py > requirements.txt'
    )


def test_every_pin_is_exact_and_named_once():
    """Every requirement of the stack is an exact '==' pin, and no package
    is pinned twice (two pins could disagree)."""
    names = []
    for pin in all_pins():
        name, sep, version = pin.partition('==')
        assert sep and version and '<' not in pin and '>' not in pin, pin
        names.append(name.lower())
    assert len(names) == len(set(names)), names


def test_the_extras_are_the_issue_s():
    """d2lpar[cpu] brings mxnet 1.9.1; d2lpar[notebook] brings Jupyter,
    jupytext, myst-nb and an IPython below 9 (matplotlib 3.7.2 needs it)."""
    extras = pyproject()['project']['optional-dependencies']
    assert 'mxnet==1.9.1' in extras['cpu']
    names = {p.split('==')[0]: p.split('==')[1] for p in extras['notebook']}
    assert {'jupyterlab', 'jupytext', 'myst-nb', 'ipython'} <= set(names)
    assert int(names['ipython'].split('.')[0]) < 9
    assert 'mxnet' not in str(pyproject()['project']['dependencies'])


def test_tests_run_on_the_pinned_stack():
    """The environment running these tests has every pinned version (so
    what is tested is what the pins install)."""
    wrong = {}
    for pin in all_pins():
        name, version = pin.split('==')
        try:
            installed = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            installed = None
        if installed != version:
            wrong[name] = (version, installed)
    assert not wrong, f'pinned vs installed: {wrong}; run make setup'


def test_every_subpackage_is_installed():
    """The package list of pyproject.toml covers bench/, dist/ and any
    other subpackage, so a non-editable install imports them."""
    patterns = pyproject()['tool']['setuptools']['packages']['find']['include']
    packages = [
        '.'.join(p.parent.relative_to(ROOT).parts)
        for p in (ROOT / 'd2lpar').rglob('__init__.py')
    ]
    assert 'd2lpar.dist' in packages and 'd2lpar.bench' in packages
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
    """Without MXNet, import d2lpar fails with an ImportError that gives
    the command installing it, not a bare ModuleNotFoundError."""
    done = run_python(BLOCK_MXNET + 'import d2lpar')
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith('ImportError: d2lpar needs MXNet 1.9.1'), last
    assert 'pip install "d2lpar[cpu]"' in last
    assert 'mxnet-cu112==1.9.1' in last


def test_unsupported_python_gets_a_sentence():
    """On a Python other than 3.11 the import warns, saying which Python
    works and why."""
    done = run_python(
        'import sys, warnings\n'
        'sys.version_info = (3, 12, 0, "final", 0)\n'
        'warnings.simplefilter("error", UserWarning)\n'
        'import d2lpar'
    )
    assert done.returncode == 1
    assert (
        'd2lpar is tested on Python 3.11 only' in done.stderr
        and 'no wheels for Python 3.12+' in done.stderr
    ), done.stderr


@pytest.mark.parametrize(
    'variable, value',
    [
        ('MXNET_CPU_TEMP_COPY', '64'),
    ],
)
def test_import_side_effects_are_documented(variable, value):
    """The module docstring (help(d2lpar)) names what importing changes:
    the MXNet variable set, its value, and npx.set_np()."""
    import d2lpar

    doc = d2lpar.__doc__
    assert variable in doc and f'({value})' in doc and 'npx.set_np()' in doc
    assert d2lpar.CPU_TEMP_COPY == value


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
