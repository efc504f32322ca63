"""The numpy-alias compatibility step and d2l's helpers written out."""

import pathlib
import re
import subprocess
import sys
import types
import warnings

import pytest
from mxnet import autograd, np

from d2lpar import _compat, _d2l

NAMES = list(_compat.ALIASES)


def fake_numpy(*names):
    """A module object holding ``names`` (each set to a marker)."""
    module = types.ModuleType('fake_numpy')
    for name in names:
        setattr(module, name, ('numpy own', name))
    return module


def test_sets_exactly_the_missing_aliases():
    module = fake_numpy('bool', 'object', 'long')
    assert _compat.restore_numpy_aliases(module) == [
        'int',
        'float',
        'complex',
        'str',
        'unicode',
    ]
    assert module.int is int and module.float is float
    assert module.complex is complex and module.str is str
    assert module.unicode is str


def test_leaves_the_names_numpy_has():
    module = fake_numpy('bool', 'object', 'long')
    _compat.restore_numpy_aliases(module)
    # numpy 2 has np.bool and np.long again, as its own types: kept.
    assert module.bool == ('numpy own', 'bool')
    assert module.object == ('numpy own', 'object')
    assert module.long == ('numpy own', 'long')


def test_sets_every_alias_on_a_numpy_without_them():
    module = fake_numpy()
    assert _compat.restore_numpy_aliases(module) == list(_compat.ALIASES)
    assert module.long is int and module.bool is bool


def test_a_second_call_sets_nothing():
    module = fake_numpy()
    _compat.restore_numpy_aliases(module)
    assert _compat.restore_numpy_aliases(module) == []


def test_aliases_answered_with_a_warning_count_as_present():
    # numpy 1.20-1.23 answers np.bool from a module __getattr__ that
    # warns: the alias exists and must not be replaced.
    module = types.ModuleType('warning_numpy')

    def getattr_(name):
        if name in _compat.ALIASES:
            warnings.warn(f'np.{name} is deprecated', DeprecationWarning, 2)
            return ('numpy own', name)
        raise AttributeError(name)

    module.__getattr__ = getattr_
    with warnings.catch_warnings():
        warnings.simplefilter('error')  # and the warnings stay inside
        assert _compat.restore_numpy_aliases(module) == []
    assert 'bool' not in vars(module)


def test_aliases_that_warn_then_raise_count_as_missing():
    # numpy 1.25-1.26 warns (FutureWarning) for np.bool, then raises
    # AttributeError: the alias is missing and is set, silently.
    module = types.ModuleType('numpy_1_26')

    def getattr_(name):
        if name in ('bool', 'object'):
            warnings.warn(f'np.{name} will come back', FutureWarning, 2)
        raise AttributeError(name)

    module.__getattr__ = getattr_
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        assert _compat.restore_numpy_aliases(module) == NAMES
    assert module.bool is bool and module.object is object


COMPAT = pathlib.Path(_compat.__file__)


def run_fresh(code):
    """stdout of ``code`` run in a fresh interpreter (this venv)."""
    out = subprocess.run(
        [sys.executable, '-c', code],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return out.stdout.strip()


def test_fresh_interpreter_sets_only_what_numpy_lacks():
    # numpy alone, before d2lpar or MXNet ran (the module is loaded from
    # its file: importing d2lpar._compat would run d2lpar's own step).
    # With numpy 1.23.5 it sets nothing; with 1.24+ all eight, each to
    # the type it named.
    code = (
        'import importlib.util, numpy\n'
        'spec = importlib.util.spec_from_file_location('
        f'"c", {str(COMPAT)!r})\n'
        'c = importlib.util.module_from_spec(spec)\n'
        'spec.loader.exec_module(c)\n'
        'lack = c.missing_aliases(numpy)\n'
        'done = c.restore_numpy_aliases()\n'
        'print(numpy.__version__, lack == done, '
        'c.missing_aliases(numpy) == [], '
        'all(getattr(numpy, n) is c.ALIASES[n] for n in done), done)'
    )
    version, same, complete, right, done = run_fresh(code).split(' ', 4)
    assert (same, complete, right) == ('True', 'True', 'True')
    old = tuple(map(int, version.split('.')[:2])) < (1, 24)
    assert done == repr([] if old else NAMES), version


def test_importing_d2lpar_restores_before_mxnet():
    # MXNet 1.9.1 imports beside numpy 1.26 only through the step; with
    # numpy 1.23.5 the step adds no name to numpy.
    code = (
        'import numpy\n'
        'before = set(vars(numpy))\n'
        'import d2lpar, mxnet\n'
        f'added = sorted(set(vars(numpy)) - before & set({NAMES!r}))\n'
        'print(numpy.__version__, mxnet.__version__, added)'
    )
    version, mx_version, added = run_fresh(code).split(' ', 2)
    assert mx_version == '1.9.1'
    old = tuple(map(int, version.split('.')[:2])) < (1, 24)
    assert added == repr([] if old else sorted(NAMES)), version


# Modules of d2lpar that still import d2l when d2lpar is imported.
D2L_AT_IMPORT = sorted(
    str(path.relative_to(COMPAT.parent.parent))
    for path in COMPAT.parent.rglob('*.py')
    if re.search(r'^(from d2l |import d2l\b)', path.read_text(), re.M)
)


@pytest.mark.xfail(
    bool(D2L_AT_IMPORT),
    reason=f'{D2L_AT_IMPORT} import d2l when d2lpar is imported',
    strict=True,
)
def test_d2lpar_imports_without_d2l():
    # d2l pins numpy 1.23.5, so d2lpar must not need it: hide it.
    code = (
        'import sys\n'
        'sys.modules["d2l"] = None  # any import of d2l now fails\n'
        'import d2lpar\n'
        'print(sorted(m for m in sys.modules if m.startswith("d2l.")))'
    )
    assert run_fresh(code) == '[]'


def test_sgd_updates_in_place():
    w = np.array([1.0, 2.0])
    w.attach_grad()
    with autograd.record():
        loss = (w * np.array([3.0, 4.0])).sum()
    loss.backward()
    _d2l.sgd([w], lr=0.5, batch_size=2)
    assert w.asnumpy().tolist() == [1.0 - 0.5 * 3 / 2, 2.0 - 0.5 * 4 / 2]


def test_accuracy_counts_correct_predictions():
    y_hat = np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]])
    y = np.array([1, 1, 1], dtype='int32')
    assert _d2l.accuracy(y_hat, y) == 2.0
    # Predicted classes themselves (one column) compare directly.
    assert _d2l.accuracy(np.array([1, 0, 1]), y) == 2.0


def test_accumulator_sums_each_slot():
    acc = _d2l.Accumulator(2)
    acc.add(1, 2.5)
    acc.add(np.array(3.0), 0.5)
    assert (acc[0], acc[1]) == (4.0, 3.0)
    acc.reset()
    assert acc[0] == 0.0


def test_timer_records_intervals(monkeypatch):
    clock = iter([10.0, 12.5, 13.0, 16.0])
    monkeypatch.setattr(_d2l.time, 'perf_counter', lambda: next(clock))
    timer = _d2l.Timer()  # starts at 10.0
    assert timer.stop() == 2.5
    timer.start()
    assert timer.stop() == 3.0
    assert timer.sum() == 5.5 and timer.avg() == 2.75
    assert timer.cumsum() == [2.5, 5.5]


@pytest.mark.d2l
def test_matches_d2l_where_installed():
    d2l = pytest.importorskip(
        'd2l.mxnet', reason='compares with d2l (the book extra)'
    )
    y_hat = np.array([[0.1, 0.9, 0.0], [0.8, 0.2, 0.0], [0.0, 0.3, 0.7]])
    y = np.array([1, 1, 2], dtype='int32')
    assert _d2l.accuracy(y_hat, y) == d2l.accuracy(y_hat, y)
    a = np.array([1.0, -2.0])
    b = np.array([1.0, -2.0])
    for w in (a, b):
        w.attach_grad()
        with autograd.record():
            loss = (w * w).sum()
        loss.backward()
    _d2l.sgd([a], 0.1, 4)
    d2l.sgd([b], 0.1, 4)
    assert a.asnumpy().tolist() == b.asnumpy().tolist()


def test_python_3_12_without_distutils_names_the_fix():
    # Python 3.12 has no distutils, which MXNet 1.9.1 imports; without
    # setuptools' shim the error says so, not 'MXNet is not installed'.
    code = (
        'import importlib.abc, sys\n'
        'class NoDistutils(importlib.abc.MetaPathFinder):\n'
        '    def find_spec(self, name, path=None, target=None):\n'
        '        if name.split(".")[0] == "distutils":\n'
        '            raise ModuleNotFoundError(name, name="distutils")\n'
        'sys.meta_path.insert(0, NoDistutils())\n'
        'sys.modules.pop("distutils", None)\n'
        'import d2lpar\n'
        'd2lpar.devices\n'  # the first use of MXNet's part imports it
    )
    done = subprocess.run(
        [sys.executable, '-c', code],
        capture_output=True,
        text=True,
        timeout=300,
    )
    last = done.stderr.strip().splitlines()[-1]
    assert last == (
        'ImportError: MXNet 1.9.1 imports distutils, which Python 3.12 '
        'removed; setuptools brings it back: pip install setuptools'
    ), done.stderr[-2000:]
