"""`python -m d2lpar check` on PyTorch solutions: graded against the
PyTorch checks of the framework the file imports, mistakes named in
PyTorch's terms, a file mixing the frameworks refused with the rule,
homework 6 graded in PyTorch too."""

import csv
import inspect
import io
import json

import pytest
from conftest import tree_allreduce

pytest.importorskip('torch')

from test_torch_grading import average_params, split_batch  # noqa: E402

from d2lpar.cli import main  # noqa: E402
from d2lpar.grading.grade import grade, to_csv  # noqa: E402

# The tests' correct split_batch and average_params, as a file.
TORCH_GOOD = (
    'import torch\n\nfrom d2lpar import torch as tdp\n\n\n'
    + inspect.getsource(split_batch)
    + '\n\n'
    + inspect.getsource(average_params)
)

# The sum stays on device 0: a PyTorch student's not-broadcast.
TORCH_BAD = """
import torch


def allreduce(data):
    for a in data[1:]:
        data[0] += a.to(data[0].device)
"""

MIXED = """
import torch
import d2lpar as dp


def allreduce(data):
    dp.allreduce(data)
"""

# Homework 6 left as a stub that trains nothing.
TORCH_EPOCH_STUB = """
from d2lpar import torch as dp


def train_epoch(train_iter, device_params, devices, lr):
    return 0.0, 0.0
"""

# Homework 1's tree in PyTorch: its check passes it, noting that the
# transfers were not counted.
TORCH_TREE = """
import torch


def tree_allreduce(data):
    k, step = len(data), 1
    while step < k:
        for i in range(0, k - step, 2 * step):
            data[i] += data[i + step].to(data[i].device)
        step *= 2
    while step > 1:
        step //= 2
        for i in range(0, k - step, 2 * step):
            data[i + step].copy_(data[i])
"""

MXNET_GOOD = 'import d2lpar as dp\n\n\n' + inspect.getsource(tree_allreduce)


def _notebook(source):
    cell = {'cell_type': 'code', 'metadata': {}, 'outputs': []}
    return json.dumps(
        {
            'cells': [
                {'cell_type': 'markdown', 'metadata': {}, 'source': '# HW'},
                {
                    **cell,
                    'execution_count': None,
                    'source': '%matplotlib inline',
                },
                {**cell, 'execution_count': None, 'source': source},
            ],
            'metadata': {},
            'nbformat': 4,
            'nbformat_minor': 5,
        }
    )


@pytest.fixture(scope='module')
def graded(tmp_path_factory):
    """One class folder, graded as a teacher grades it (each file in its
    own process): name -> that file's result."""
    folder = tmp_path_factory.mktemp('class')
    files = {
        'good.py': TORCH_GOOD,
        'bad.py': TORCH_BAD,
        'mixed.py': MIXED,
        'epoch.py': TORCH_EPOCH_STUB,
        'mxgood.py': MXNET_GOOD,
        'torchtree.py': TORCH_TREE,
        'notebook.ipynb': _notebook(TORCH_GOOD),
    }
    for name, text in files.items():
        (folder / name).write_text(text)
    summary, text = grade([folder], timeout=120, jobs=2)
    results = {r['file'].split('/')[-1]: r for r in summary['files']}
    return results, text


def test_a_correct_pytorch_solution_passes(graded):
    results, _ = graded
    good = results['good.py']
    assert good['verdict'] == 'passed', good
    assert good['framework'] == 'torch'
    assert {r['check'] for r in good['reports']} == {
        'check_split_batch',
        'check_average_params',
    }
    assert all(r['framework'] == 'torch' for r in good['reports'])


def test_a_notebook_is_graded_from_its_code_cells(graded):
    results, _ = graded
    nb = results['notebook.ipynb']
    assert nb['verdict'] == 'passed', nb
    assert nb['framework'] == 'torch'


def test_a_pytorch_mistake_is_named_in_pytorch_terms(graded):
    results, text = graded
    bad = results['bad.py']
    assert bad['verdict'] == 'failed' and bad['framework'] == 'torch'
    [report] = bad['reports']
    assert report['mistakes'] == ['not-broadcast']
    hint = report['failures'][0]['hint']
    assert 'copyto' not in hint
    assert 'graded in PyTorch: line 2: import torch' in text


def test_a_file_importing_both_is_refused_with_the_rule(graded):
    results, text = graded
    mixed = results['mixed.py']
    assert mixed['verdict'] == 'failed' and mixed['reports'] == []
    assert 'PyTorch (line 2: import torch)' in mixed['error']
    assert 'MXNet (line 3: import d2lpar)' in mixed['error']
    assert '# d2lpar: framework=torch' in mixed['error']


def test_homework_6_in_pytorch_is_graded(graded):
    """No assignment is left ungraded in PyTorch: a train_epoch that
    trains nothing fails with its mistake named."""
    results, text = graded
    epoch = results['epoch.py']
    assert epoch['verdict'] == 'failed' and epoch['framework'] == 'torch'
    [report] = epoch['reports']
    assert report['check'] == 'check_train_epoch'
    assert report['mistakes'] == ['did-nothing'], report


def test_an_mxnet_solution_is_still_graded_in_mxnet(graded):
    results, _ = graded
    mx = results['mxgood.py']
    assert mx['verdict'] == 'passed', mx
    assert mx['framework'] == 'mxnet'
    assert mx['reports'][0]['function'] == 'tree_allreduce'
    assert mx['reports'][0]['framework'] == 'mxnet'


def test_the_command_exits_1_for_a_mixed_file(tmp_path, capsys):
    path = tmp_path / 'mixed.py'
    path.write_text(MIXED)
    assert main(['check', str(path), '--json']) == 1
    entry = json.loads(capsys.readouterr().out)['files'][0]
    assert entry['error'].startswith('not graded: it imports both')


def test_the_class_table_and_gradebook_say_framework_and_notes(graded):
    """What a PyTorch check could not judge (the transfers of a tree)
    reaches the class table and the CSV gradebook, not only the file's
    own report: each row names the framework it was graded in, the CSV
    has the notes, and the table lists each note under it with the
    students it concerns."""
    results, text = graded
    tree = results['torchtree.py']
    assert tree['verdict'] == 'passed', tree
    book = {
        row['student']: row
        for row in csv.DictReader(io.StringIO(to_csv(results.values())))
    }
    assert book['torchtree']['framework'] == 'PyTorch'
    assert (
        "tree_allreduce: shape='tree': the elements each device "
        in book['torchtree']['notes']
    )
    assert 'not counted in PyTorch' in book['torchtree']['notes']
    assert book['mxgood']['framework'] == 'MXNet'
    assert book['mxgood']['notes'] == ''
    assert book['mixed']['framework'] == ''  # refused: neither
    row = next(l for l in text.splitlines() if l.startswith('torchtree '))
    fields = row.split()  # student, verdict, checks, seconds, framework
    assert fields[1:3] == ['PASSED', '1/1'] and fields[4] == 'PyTorch'
    assert (
        "note (torchtree): tree_allreduce: shape='tree': the elements "
        'each device moves are not counted in PyTorch'
    ) in text


def test_a_sharded_allreduce_that_calls_the_twins_own_fails():
    """The twin's own sharded_allreduce is a library collective too: a
    student's sharded_allreduce that only calls it fails as
    calls-library, naming it, as in MXNet (its sum alone is right)."""
    from d2lpar.torch import check_allreduce, collectives

    library = getattr(collectives, 'sharded_allreduce', None)
    if library is None:
        pytest.skip('this d2lpar.torch has no sharded_allreduce yet')

    def sharded_allreduce(data):
        library(data)

    report = check_allreduce(sharded_allreduce, shape='sharded')
    assert not report
    assert report.mistakes == ['calls-library'], str(report)
    assert 'sharded_allreduce' in report.failures[0].message
