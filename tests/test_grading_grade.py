"""`python -m d2lpar check`: exit status and JSON shape for graders."""

import csv
import inspect
import io
import json
import os
import subprocess
import sys
import time

import pytest
from conftest import pythonpath_without_torch, tree_allreduce

from d2lpar.cli import main
from d2lpar.grading.grade import grade, to_csv

GOOD = """
def split_batch(X, y, devices):
    n, k = X.shape[0], len(devices)
    if n < k or y.shape[0] != n:
        raise ValueError('need at least one example per device')
    X_shards, y_shards, start = [], [], 0
    for i, d in enumerate(devices):
        size = n // k + (1 if i < n % k else 0)
        X_shards.append(X[start:start + size].as_in_ctx(d))
        y_shards.append(y[start:start + size].as_in_ctx(d))
        start += size
    return X_shards, y_shards
"""

BAD = """
from d2lpar import split_batch   # imported, not written: not graded


def allreduce(data):
    for i in range(1, len(data)):
        data[0][:] += data[i].copyto(data[0].ctx)
"""


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_passing_file_exits_0_with_json(tmp_path, capsys):
    """A correct split_batch: exit 0, and the JSON says which check ran
    on which function, with no failures."""
    path = _write(tmp_path, 'good.py', GOOD)
    assert main(['check', str(path), '--json']) == 0
    out = json.loads(capsys.readouterr().out)
    assert out['passed'] is True
    [entry] = out['files']
    assert entry['file'] == str(path) and entry['error'] is None
    [report] = entry['reports']
    assert report['check'] == 'check_split_batch'
    assert report['function'] == 'split_batch'
    assert report['passed'] is True and report['failures'] == []


def test_failing_file_exits_1_naming_the_mistake(tmp_path, capsys):
    """An allreduce that never broadcasts: exit 1, every failure has
    mistake, case, message and hint; the imported library function is
    not graded."""
    path = _write(tmp_path, 'bad.py', BAD)
    assert main(['check', str(path), '--json']) == 1
    out = json.loads(capsys.readouterr().out)
    assert out['passed'] is False
    [report] = out['files'][0]['reports']
    assert report['function'] == 'allreduce'
    assert report['mistakes'] == ['not-broadcast']
    assert set(report['failures'][0]) == {
        'mistake',
        'case',
        'message',
        'hint',
        'traceback',
    }


def test_folder_is_graded_file_by_file(tmp_path):
    """A folder of submissions, as a teacher passes it, on the real
    command line: text output names each file and its verdict, exit 1
    because one fails."""
    _write(tmp_path, 'alice.py', GOOD)
    _write(tmp_path, 'bob.py', BAD)
    run = subprocess.run(
        [sys.executable, '-m', 'd2lpar', 'check', str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 1, run.stderr
    rows = run.stdout.splitlines()
    assert rows[0].split()[:4] == ['student', 'verdict', 'checks', 'seconds']
    assert rows[1].split()[:3] == ['alice', 'PASSED', '1/1']
    assert rows[2].split()[:3] == ['bob', 'FAILED', '0/1']
    assert rows[2].endswith('not-broadcast')
    assert f'== {tmp_path / "bob.py"}: FAILED' in run.stdout
    assert f'== {tmp_path / "alice.py"}' not in run.stdout
    assert 'mistake: not-broadcast' in run.stdout


def test_file_that_raises_on_import_fails_with_traceback(tmp_path, capsys):
    """A syntax error in the submission fails it (exit 1) and shows the
    error, instead of crashing the grader."""
    path = _write(tmp_path, 'broken.py', 'def split_batch(:\n')
    assert main(['check', str(path), '--json']) == 1
    entry = json.loads(capsys.readouterr().out)['files'][0]
    assert entry['passed'] is False
    assert 'SyntaxError' in entry['error']


def test_missing_path_is_bad_input(tmp_path, capsys):
    """A path that does not exist: exit 2 and a message saying so."""
    assert main(['check', str(tmp_path / 'nope.py')]) == 2
    assert 'does not exist' in capsys.readouterr().err


# A correct tree (the tests' one home for it) that prints: its output
# must stay out of the table.
CORRECT_TREE = "print('my timing loop ran')\n\n\n" + inspect.getsource(
    tree_allreduce
)

HANGING_TREE = """
def tree_allreduce(data):
    k, step = len(data), 1
    while step < k:  # step never grows: endless for k > 2
        for i in range(0, k - step, 2 * step):
            data[i][:] += data[i + step].copyto(data[i].ctx)
"""

WRAPPER = """
import d2lpar as dp
from d2lpar import sharded_allreduce as library_sharded


def tree_allreduce(data):
    dp.allreduce(data)


def sharded_allreduce(data):
    library_sharded(data)
"""


@pytest.mark.slow
def test_class_folder_with_a_hang_and_a_wrapper(tmp_path):
    """The issue's class: a correct, a hanging and a library-wrapping
    submission, graded with --timeout 20 in well under two minutes; every
    student has a verdict, the wrapper fails naming the library function
    (also when imported by name), and the correct one's print is kept
    out of the table and stored in the JSON."""
    _write(tmp_path, 'ada.py', CORRECT_TREE)
    _write(tmp_path, 'ben.py', HANGING_TREE)
    _write(tmp_path, 'cal.py', WRAPPER)
    start = time.perf_counter()
    run = subprocess.run(
        [sys.executable, '-m', 'd2lpar', 'check', str(tmp_path)]
        + ['--timeout', '20', '--json'],
        capture_output=True,
        text=True,
        timeout=300,
    )
    seconds = time.perf_counter() - start
    assert run.returncode == 1, run.stderr
    out = json.loads(run.stdout)
    ada, ben, cal = out['files']
    assert ada['verdict'] == 'passed', ada
    assert ada['output'].strip() == 'my timing loop ran'
    assert ben['verdict'] == 'timeout'
    assert 'did not finish within 20 s' in ben['error']
    assert cal['verdict'] == 'failed'
    tree, sharded = cal['reports']
    assert tree['mistakes'] == sharded['mistakes'] == ['calls-library']
    assert "calls d2lpar's allreduce" in tree['failures'][0]['message']
    assert (
        "calls d2lpar's sharded_allreduce"
        in (sharded['failures'][0]['message'])
    )
    assert seconds < 120, seconds  # the issue: well under two minutes


def test_crash_gets_a_verdict_and_a_gradebook_row(tmp_path):
    """A submission that kills its own process gets a verdict, the other
    student is still graded, the table stays free of the submissions'
    prints (stored with the verdict instead), and the gradebook has one
    CSV row per student."""
    _write(tmp_path, 'b_exits.py', 'import os\nprint("bye")\nos._exit(3)\n')
    _write(tmp_path, 'c_good.py', 'print("hello from c")\n' + GOOD)
    summary, text = grade([tmp_path], timeout=120)
    assert 'hello from c' not in text and 'bye' not in text
    rows = text.splitlines()
    assert rows[1].split()[:2] == ['b_exits', 'CRASHED']
    assert 'exit status 3' in rows[1]
    assert rows[2].split()[:3] == ['c_good', 'PASSED', '1/1']
    exits, good = summary['files']
    assert exits['output'].strip() == 'bye'
    assert good['output'].strip() == 'hello from c'
    book = list(csv.DictReader(io.StringIO(to_csv(summary['files']))))
    assert [
        (r['student'], r['verdict'], r['checks_passed']) for r in book
    ] == [
        ('b_exits', 'crashed', '0'),
        ('c_good', 'passed', '1'),
    ]


def test_timeout_and_jobs_must_be_positive(tmp_path, capsys):
    """--timeout 0 and --jobs 0 are bad input (exit 2), with the fix."""
    path = _write(tmp_path, 'good.py', GOOD)
    assert main(['check', str(path), '--timeout', '0']) == 2
    assert 'pass a positive number of seconds' in capsys.readouterr().err
    assert main(['check', str(path), '--jobs', '0']) == 2
    assert '--jobs must be positive, got 0' in capsys.readouterr().err


TORCH_SPLIT = """
import torch


def split_batch(X, y, devices):
    return [X.to(d) for d in devices], [y.to(d) for d in devices]
"""


def test_a_framework_not_installed_is_named_not_run(tmp_path):
    """Without PyTorch, a class folder with an MXNet and a PyTorch file
    is graded: the MXNet file passes, the PyTorch one is not run (no
    crash) and its row says not-graded, which framework is missing and
    what to install; the command exits 1 (not every file passed)."""
    folder = tmp_path / 'class'
    folder.mkdir()
    _write(folder, 'ada.py', GOOD)
    _write(folder, 'ben.py', TORCH_SPLIT)
    path = pythonpath_without_torch(tmp_path)
    run = subprocess.run(
        [sys.executable, '-m', 'd2lpar', 'check', str(folder), '--csv'],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PYTHONPATH=path),
    )
    assert run.returncode == 1, run.stderr
    book = {r['student']: r for r in csv.DictReader(io.StringIO(run.stdout))}
    assert book['ada']['verdict'] == 'passed', book['ada']
    assert book['ada']['framework'] == 'MXNet'
    ben = book['ben']
    assert ben['verdict'] == 'not-graded', ben
    assert ben['framework'] == 'PyTorch'
    assert ben['why'].startswith(
        'not graded: it is written in PyTorch (line 2: import torch), '
        'and PyTorch is not installed in this Python'
    ), ben['why']
    assert 'install d2lpar with its "torch" extra' in ben['why']
