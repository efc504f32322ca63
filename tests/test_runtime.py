"""What ``import d2lpar`` does: every side effect in d2lpar/_runtime.py,
no MXNet until MXNet's part is used, and nothing optional loaded until it
is used."""

import ast
import json
import os
import pathlib
import subprocess
import sys

import numpy
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / 'd2lpar'

# Loaded on first use only (d2lpar.__getattr__).
OPTIONAL = (
    'matplotlib',
    'd2lpar.bench',
    'd2lpar.multiprocess',
    'd2lpar.grading',
    'd2lpar.pages.figures',
)


def run_script(script, *args, without=(), setting=None):
    """Run ``script`` in a fresh interpreter at the repository root, the
    variables ``without`` unset and those of ``setting`` set; return its
    stdout (it must succeed)."""
    env = {k: v for k, v in os.environ.items() if k not in without}
    env.update(setting or {})
    done = subprocess.run(
        [sys.executable, '-c', script, *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def last_json(stdout):
    """The value a script printed as JSON on its last line."""
    return json.loads(stdout.strip().splitlines()[-1])


def loaded_after(code):
    """The OPTIONAL modules in sys.modules after ``code`` runs fresh."""
    script = (
        'import json, sys\n'
        f'{code}\n'
        f'print(json.dumps([m for m in {OPTIONAL!r} if m in sys.modules]))'
    )
    return last_json(run_script(script))


def test_import_loads_no_optional_part():
    """A fresh ``import d2lpar`` loads neither matplotlib nor the
    benchmarks, several processes, the grader or the figures."""
    assert loaded_after('import d2lpar') == []


@pytest.mark.parametrize(
    'use, loads',
    [
        ('dp.plot_split', ['matplotlib', 'd2lpar.pages.figures']),
        ('dp.check_allreduce', ['d2lpar.grading']),
        ('dp.multiprocess.launch', ['d2lpar.multiprocess']),
    ],
)
def test_first_use_loads_the_part(use, loads):
    """The lazy names work: using one loads its module (so the test
    above would see these modules, were they imported up front)."""
    loaded = loaded_after(f'import d2lpar as dp\n{use}')
    assert set(loads) <= set(loaded), loaded


def test_an_unknown_name_is_an_attribute_error():
    import d2lpar

    with pytest.raises(AttributeError, match='no_such_name'):
        d2lpar.no_such_name  # noqa: B018
    assert 'bench' in dir(d2lpar) and 'check_allreduce' in dir(d2lpar)
    # A module of the package is an attribute (dp.training.sgd), not a
    # private one.
    assert d2lpar.training.sgd.__module__ == 'd2lpar.training'
    with pytest.raises(AttributeError, match='_no_such_module'):
        d2lpar._no_such_module  # noqa: B018


# Calls that change the process (an environment variable, MXNet's array
# type, a fork hook, a worker's threads), allowed at module level only in
# _runtime.py.
SIDE_EFFECTS = {
    'setdefault',
    'set_np',
    'register_at_fork',
    'claim_every_core',
    'restore_numpy_aliases',
    'keep_freed_memory',
    'mallopt',
    'prepare',
    'start',
}


def module_level_calls(path):
    """Names of the functions called by the statements of a module's
    body (not inside a def or class), as ``f`` for ``a.b.f(...)``."""
    tree = ast.parse(path.read_text())
    names = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            continue
        for call in ast.walk(node):
            if isinstance(call, ast.Call):
                func = call.func
                if isinstance(func, ast.Attribute):
                    names.append(func.attr)
                elif isinstance(func, ast.Name):
                    names.append(func.id)
    return names


def test_no_module_changes_the_process_at_import_but_runtime():
    """Only ``_runtime.prepare()`` (called by __init__: the scratch pool,
    numpy's aliases, the import hook that runs ``start()``: npx.set_np(),
    the fork hook, cpu(0)'s threads) changes the process at import."""
    found = {}
    for path in sorted(PACKAGE.rglob('*.py')):
        calls = SIDE_EFFECTS & set(module_level_calls(path))
        if calls:
            found[str(path.relative_to(ROOT))] = sorted(calls)
    assert found == {'d2lpar/__init__.py': ['prepare']}


def test_module_level_calls_finds_a_side_effect(tmp_path):
    """The scan above can fail: a module-level set_np() is seen, one
    inside a function is not."""
    module = tmp_path / 'm.py'
    module.write_text(
        'from mxnet import npx\nnpx.set_np()\ndef f():\n    npx.reset_np()\n'
    )
    assert module_level_calls(module) == ['set_np']


def test_runtime_documents_every_side_effect():
    """_runtime's docstring names each thing start() does; __init__'s
    points to it."""
    import d2lpar
    from d2lpar import _runtime

    doc = _runtime.__doc__
    for what in (
        'MXNET_CPU_TEMP_COPY',
        f'({_runtime.CPU_TEMP_COPY})',
        'npx.set_np()',
        'register_at_fork',
        'claim_every_core',
        'restore',
        'mallopt',
    ):
        assert what in doc, what
    assert 'd2lpar._runtime' in d2lpar.__doc__
    assert d2lpar.CPU_TEMP_COPY == _runtime.CPU_TEMP_COPY == '64'


def test_import_sets_what_runtime_says():
    """In a fresh process: the scratch pool is set and arrays are
    MXNet's NumPy arrays (the fork hook and cpu(0)'s threads are checked
    in test_threads.py)."""
    script = (
        'import os, d2lpar\n'
        'from mxnet import np, util\n'
        'print(os.environ["MXNET_CPU_TEMP_COPY"], util.is_np_array(),'
        ' type(np.ones(1)).__module__)'
    )
    stdout = run_script(script, without=('MXNET_CPU_TEMP_COPY',))
    assert stdout.split()[-3:] == ['64', 'True', 'mxnet.numpy']


# The parts another framework shares (d2lpar.torch): importing them,
# and the package itself, must not need MXNet. The script below blocks
# every import of mxnet.
NEUTRAL = (
    'd2lpar',
    'd2lpar.epochs',
    'd2lpar.splitting',
    'd2lpar.idx',
    'd2lpar.seeds',
    'd2lpar.comm',
    'd2lpar.comm.schedules',
    'd2lpar.comm.costmodel',
    'd2lpar.pages',
    'd2lpar.pages.book',
    'd2lpar.pages.figures',
    'd2lpar.grading',
    'd2lpar.grading.report',
    'd2lpar.grading.mistakes',
)
WITHOUT_MXNET = """
import importlib, importlib.abc, sys
class NoMXNet(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == 'mxnet' or name.startswith('mxnet.'):
            raise ModuleNotFoundError('mxnet is blocked', name=name)
sys.meta_path.insert(0, NoMXNet())
for name in sys.argv[2:]:
    try:
        importlib.import_module(name)
        print(name, 'ok')
    except ImportError as err:
        print(name, 'needs', err.name)
"""


def import_without_mxnet(names):
    stdout = run_script(WITHOUT_MXNET, str(PACKAGE), *names)
    return stdout.splitlines()


def test_framework_neutral_parts_import_without_mxnet():
    """Schedules, cost model, the book's helpers and the grader's
    reports import with MXNet blocked; MXNet's own part of comm does
    not (so the check can fail)."""
    names = [*NEUTRAL, 'd2lpar.comm.algorithms']
    assert import_without_mxnet(names) == [
        *(f'{name} ok' for name in NEUTRAL),
        'd2lpar.comm.algorithms needs mxnet',
    ]


def test_a_module_imported_directly_gets_mxnet_set_up():
    """In a fresh process, importing one MXNet module of the package
    directly (not through ``dp.``) sets the scratch pool and MXNet's
    NumPy arrays, as ``dp.train`` would (the import hook)."""
    script = (
        'import os\n'
        'from d2lpar.comm.algorithms import ring_allreduce\n'
        'from mxnet import np, util\n'
        'print(os.environ["MXNET_CPU_TEMP_COPY"], util.is_np_array())'
    )
    stdout = run_script(script, without=('MXNET_CPU_TEMP_COPY',))
    assert stdout.split()[-2:] == ['64', 'True']


def test_import_d2lpar_loads_no_mxnet_until_used():
    """``import d2lpar`` leaves MXNet unloaded; the first ``dp.`` name of
    MXNet's part loads it."""
    script = (
        'import sys\n'
        'import d2lpar as dp\n'
        'before = "mxnet" in sys.modules\n'
        'dp.devices\n'
        'print(before, "mxnet" in sys.modules)'
    )
    stdout = run_script(script)
    assert stdout.split() == ['False', 'True']


def test_probing_for_mxnet_leaves_the_hook_armed():
    """``importlib.util.find_spec('mxnet')`` only looks: the import that
    follows still gets MXNet set up (NumPy arrays on)."""
    script = (
        'import importlib.util\n'
        'import d2lpar\n'
        'assert importlib.util.find_spec("mxnet") is not None\n'
        'from mxnet import util\n'
        'print(util.is_np_array())'
    )
    assert run_script(script).split()[-1] == 'True'


def test_mxnet_after_the_pytorch_twin_leaves_pytorch_every_core():
    """Importing MXNet after ``d2lpar.torch`` would leave PyTorch on one
    thread; the hook gives it the process's cores back."""
    pytest.importorskip('torch')
    script = (
        'import os\n'
        'from d2lpar import torch as tdp\n'
        'import torch\n'
        'before = torch.get_num_threads()\n'
        'import mxnet\n'
        'print(before, torch.get_num_threads(), len(os.sched_getaffinity(0)))'
    )
    before, after, cores = run_script(
        script, without=('OMP_NUM_THREADS',)
    ).split()[-3:]
    assert before == after == cores


# MXNet 1.9.1 imports on its own only beside numpy < 1.24 (later numpy
# lacks the aliases it reads, which d2lpar restores first).
@pytest.mark.skipif(
    tuple(int(x) for x in numpy.__version__.split('.')[:2]) >= (1, 24),
    reason='MXNet cannot be imported before d2lpar beside numpy >= 1.24',
)
def test_mxnet_imported_before_d2lpar_is_set_up_at_once():
    """``import mxnet`` then ``import d2lpar``: the hook cannot fire, so
    ``prepare()`` runs ``start()`` itself."""
    script = (
        'import mxnet\n'
        'from mxnet import util\n'
        'before = util.is_np_array()\n'
        'import d2lpar\n'
        'print(before, util.is_np_array())'
    )
    stdout = run_script(script)
    assert stdout.split() == ['False', 'True']


def test_a_public_name_keeps_its_value_after_its_module_loads():
    """``dp.devices`` is the function even after something imported
    d2lpar/devices.py (Python then sets the module as the package's
    attribute), and so is every other public name."""
    script = (
        'import importlib, types\n'
        'import d2lpar as dp\n'
        'import d2lpar.training, d2lpar.devices\n'
        'wrong = []\n'
        'for name, (module, attribute) in dp._NAMES.items():\n'
        '    if attribute is None:\n'
        '        continue\n'
        '    want = getattr(importlib.import_module("d2lpar" + module),'
        ' attribute)\n'
        '    if getattr(dp, name) is not want:\n'
        '        wrong.append(name)\n'
        'print(callable(dp.devices), wrong)'
    )
    stdout = run_script(script)
    assert stdout.split('\n')[-2] == 'True []'


# Item 9: run in a fresh process with D2LPAR_MXNET_CODE_CACHE set; says
# how many wrappers went through the cache, how many of them are the
# very code the builtin compiles from MXNet's source, how many were
# compiled here, and whether MXNet works and keeps no trace of the hook.
COMPILED_OPS = """
import builtins, json
from d2lpar import _runtime
seen, compiled = [], []
cached_compile = _runtime._CompiledOps.compile
def spy(self, source):
    code = cached_compile(self, source)
    seen.append((source, code))
    return code
def counting(*args, **kwargs):
    compiled.append(args[0])
    return builtins.compile(*args, **kwargs)
_runtime._CompiledOps.compile = spy
_runtime.compile = counting  # the module's compile, not the builtin
import mxnet as mx
from mxnet import np
same = sum(builtins.compile(s, '<string>', 'exec') == c for s, c in seen)
works = (float((np.arange(4) * 2).sum()),
         mx.nd.relu(mx.nd.array([-1, 2])).asnumpy().tolist(),
         mx.sym.relu(mx.sym.var('x')).list_arguments())
print(json.dumps([len(seen), same, len(compiled), works,
                  'exec' in vars(mx.ndarray.register),
                  'exec' in vars(mx.symbol.register)]))
"""


def test_mxnet_code_cache_gives_the_same_code_compiled_once(tmp_path):
    """With D2LPAR_MXNET_CODE_CACHE set, every operator wrapper MXNet
    generates while importing goes through the cache, and is equal
    (bytecode, constants with this process's handle, line and column
    table) to what compiling its source gives; the first process
    compiles them and writes the file, the next compiles none; MXNet
    works, and its register modules keep no exec of ours."""
    cache = {'D2LPAR_MXNET_CODE_CACHE': str(tmp_path / 'c')}
    runs = [
        last_json(run_script(COMPILED_OPS, setting=cache)) for _ in range(2)
    ]
    (first, second), works = runs, [12.0, [0.0, 2.0], ['x']]
    assert first[0] > 2000 and first[1] == first[0] and first[2] > 1000
    assert second[:3] == [first[0], first[0], 0]
    assert first[3:] == second[3:] == [works, False, False]
    assert len(list((tmp_path / 'c').glob('mxnet-ops-*.marshal'))) == 1


def test_mxnet_code_cache_is_off_unless_asked(tmp_path):
    """Without the variable nothing goes through the cache (and a file
    that cannot be read counts as empty: MXNet imports, and the cache
    is written anew)."""
    off = run_script(COMPILED_OPS, without=('D2LPAR_MXNET_CODE_CACHE',))
    assert last_json(off)[:3] == [0, 0, 0]
    from d2lpar import _runtime

    ops = _runtime._CompiledOps(str(tmp_path))
    pathlib.Path(ops.path).write_bytes(b'not marshal')
    stdout = run_script(
        COMPILED_OPS, setting={'D2LPAR_MXNET_CODE_CACHE': str(tmp_path)}
    )
    seen, same, compiled = last_json(stdout)[:3]
    assert seen == same > 2000 and compiled > 1000
    assert pathlib.Path(ops.path).read_bytes() != b'not marshal'
