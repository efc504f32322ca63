"""`python -m d2lpar check`: exit status and JSON shape for graders."""

import json
import subprocess
import sys

from d2lpar.cli import main

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
    assert f'== {tmp_path / "alice.py"}: PASSED' in run.stdout
    assert f'== {tmp_path / "bob.py"}: FAILED' in run.stdout
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
