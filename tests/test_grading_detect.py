"""d2lpar.grading.detect: a solution is graded in the framework it
imports, read from its source; a file that mixes them is refused unless
it says which."""

import importlib.util
import json

import pytest

from d2lpar.grading.detect import (
    MixedFrameworks,
    default_framework,
    framework_of,
    source_of,
)


@pytest.mark.parametrize(
    'source, framework',
    [
        ('from d2lpar import torch as dp\n', 'torch'),
        ('import torch\n', 'torch'),
        ('import torch.nn.functional as F\n', 'torch'),
        ('from d2lpar.torch import allreduce\n', 'torch'),
        ('import d2lpar.torch as dp\n', 'torch'),
        ('import d2lpar as dp\n', 'mxnet'),
        ('from mxnet import np, npx\n', 'mxnet'),
        ('from d2lpar import shard_sizes\n', 'mxnet'),
        # Neutral modules of the library pick no framework.
        (
            'import torch\nfrom d2lpar.comm.schedules import Transfer\n',
            'torch',
        ),
        # An import inside a function counts too.
        ('def f(data):\n    import torch\n', 'torch'),
    ],
)
def test_the_imports_pick_the_framework(source, framework):
    assert framework_of(source)[0] == framework


def test_a_file_importing_neither_takes_the_default():
    """MXNet where it is installed (the book's first framework), else
    PyTorch: a ring_schedule needs no arrays."""
    source = 'from d2lpar.comm.schedules import Transfer\n'
    assert framework_of(source, default='torch') == (
        'torch',
        'it imports neither framework (PyTorch, the default)',
    )
    installed = importlib.util.find_spec('mxnet') is not None
    assert default_framework() == ('mxnet' if installed else 'torch')
    for text in (source, 'def ring_schedule(k):\n    return []\n'):
        assert framework_of(text)[0] == default_framework()


def test_the_reason_names_the_line():
    kind, why = framework_of('"""doc"""\n\nfrom d2lpar import torch as dp\n')
    assert kind == 'torch' and why.startswith('line 3:')


@pytest.mark.parametrize(
    'source',
    [
        'import torch\nimport d2lpar as dp\n',
        'from mxnet import np\nimport torch\n',
        'from d2lpar import torch, split_batch\n',
    ],
)
def test_a_file_importing_both_is_refused_naming_both_lines(source):
    with pytest.raises(MixedFrameworks) as e:
        framework_of(source)
    text = str(e.value)
    assert 'PyTorch (line' in text and 'MXNet (line' in text
    assert '# d2lpar: framework=torch' in text


@pytest.mark.parametrize('chosen', ['torch', 'mxnet'])
def test_the_marker_line_decides_a_mixed_file(chosen):
    source = (
        f'import torch\nimport d2lpar as dp\n# d2lpar: framework={chosen}\n'
    )
    assert framework_of(source)[0] == chosen


def test_a_marker_naming_no_framework_is_refused():
    with pytest.raises(ValueError, match='jax'):
        framework_of('# d2lpar: framework=jax\n')


def test_a_notebook_is_read_from_its_code_cells(tmp_path):
    """Markdown cells and IPython magics are not Python: they neither
    pick a framework nor break the parse."""
    nb = {
        'cells': [
            {'cell_type': 'markdown', 'source': ['import d2lpar as dp\n']},
            {'cell_type': 'code', 'source': ['%matplotlib inline\n', 'x = 1']},
            {'cell_type': 'code', 'source': 'from d2lpar import torch as dp'},
        ],
        'metadata': {},
        'nbformat': 4,
        'nbformat_minor': 5,
    }
    path = tmp_path / 'solution.ipynb'
    path.write_text(json.dumps(nb))
    source = source_of(path)
    assert '%matplotlib' not in source and 'x = 1' in source
    assert framework_of(source)[0] == 'torch'


def test_the_shared_modules_import_neither_framework():
    """What both frameworks' checks share (the battery, the detection,
    the grader's command, the argument checks) loads where every import
    of MXNet and of PyTorch fails; the package's own __init__ is left
    out (it is the lead's to make lazy: tests/test_torch_import.py)."""
    import os

    from conftest import run_fresh

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = f"""
import sys, types
sys.modules['mxnet'] = None
sys.modules['torch'] = None
package = types.ModuleType('d2lpar')
package.__path__ = [{os.path.join(root, 'd2lpar')!r}]
sys.modules['d2lpar'] = package
import d2lpar.grading.battery, d2lpar.grading.detect, d2lpar.grading.grade
import d2lpar.validation
print('ok')
"""
    assert run_fresh(code) == 'ok'  # raises, with the error, if it fails
