"""Ranges in pyproject.toml, pins in requirements.txt: they agree, d2l is
an extra, and the venv running the suite is the pinned stack."""

import importlib.metadata
import tomllib

import pins
import pytest
from conftest import ROOT
from packaging.requirements import Requirement
from packaging.version import Version


def meta():
    with open(ROOT / 'pyproject.toml', 'rb') as f:
        return tomllib.load(f)['project']


def test_every_pin_is_exact_in_its_range_and_every_range_pinned():
    assert pins.problems() == []


def test_the_check_names_each_kind_of_disagreement():
    ranges = {
        'numpy': Requirement('numpy>=1.23.5,<2'),
        'mxnet': Requirement('mxnet==1.9.1'),
    }
    pinned = [
        Requirement(text)
        for text in ('numpy==2.0.0', 'numpy==1.26.4', 'six>=1', 'd2l==1.0.3')
    ]
    assert pins.problems(pinned, ranges) == [
        "numpy==2.0.0: outside pyproject.toml's numpy<2,>=1.23.5",
        'numpy: pinned twice',
        'six>=1: not an exact == pin',
        f'd2l==1.0.3: not a requirement of d2lpar{list(pins.EXTRAS)}',
        'mxnet==1.9.1: in pyproject.toml but not pinned',
    ]


def test_core_numpy_range_admits_1_26_and_the_pin():
    (numpy,) = [
        Requirement(r)
        for r in meta()['dependencies']
        if Requirement(r).name == 'numpy'
    ]
    # 1.26.4: the oldest numpy with wheels for Python 3.12.
    for version in ('1.23.5', '1.26.4'):
        assert numpy.specifier.contains(version), version
    assert not numpy.specifier.contains('2.0.0')  # MXNet 1.9.1 predates 2


def test_python_3_12_is_admitted():
    from packaging.specifiers import SpecifierSet

    spec = SpecifierSet(meta()['requires-python'])
    assert spec.contains('3.11.7') and spec.contains('3.12.1')


def test_d2l_is_an_extra_not_a_dependency():
    names = [Requirement(r).name for r in meta()['dependencies']]
    assert 'd2l' not in names
    extras = meta()['optional-dependencies']
    assert [Requirement(r).name for r in extras['d2l']] == ['d2l']
    # The book's stack (book extra) brings it, and the pins hold it.
    assert 'd2l' in pins.requirements(('book',))
    assert 'd2l' not in pins.requirements(('cpu', 'notebook', 'teacher'))


def test_the_extras_students_and_teachers_name():
    found = pins.requirements
    assert str(found(('cpu',))['mxnet'].specifier) == '==1.9.1'
    notebook = found(('notebook',))
    assert {'jupyterlab', 'jupytext', 'myst-nb', 'ipython'} <= set(notebook)
    # matplotlib 3.7.2 cannot plot in Jupyter with IPython 9.
    assert not notebook['ipython'].specifier.contains('9.0.0')
    assert 'nbgrader' in found(('teacher',))
    assert 'mxnet' not in found(())


@pytest.mark.pinned
def test_tests_run_on_the_pinned_stack():
    """The venv running the suite has every pinned version (so what is
    tested is what the pins install)."""
    wrong = {}
    for pin in pins.pins():
        (spec,) = pin.specifier
        try:
            installed = importlib.metadata.version(pin.name)
        except importlib.metadata.PackageNotFoundError:
            installed = None
        # A local label is the same release built another way (PyTorch's
        # CPU wheel is 2.13.0+cpu); pip installs it for the pin ==2.13.0.
        if installed is None or Version(installed).public != spec.version:
            wrong[pin.name] = (spec.version, installed)
    assert not wrong, f'pinned vs installed: {wrong}; run make setup'


def test_setuptools_comes_with_python_3_12_only():
    # MXNet 1.9.1 imports distutils, which Python 3.12 removed; the
    # setuptools shim brings it back. The 3.11 stack needs no pin of it.
    (req,) = [
        Requirement(r)
        for r in meta()['dependencies']
        if Requirement(r).name == 'setuptools'
    ]
    assert req.marker.evaluate({'python_version': '3.12'})
    assert not req.marker.evaluate({'python_version': '3.11'})
    assert 'setuptools' not in pins.requirements()
