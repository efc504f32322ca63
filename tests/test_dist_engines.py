"""The worker's engines: clear errors where an engine cannot start, and
the commands and sizes the engine benchmark relies on."""

import sys

import pytest

import d2lpar as dp
from d2lpar.bench import engines as be
from d2lpar.cli import main
from d2lpar.dist.engines import EngineError, make_engine


def test_unknown_engine_is_refused():
    with pytest.raises(ValueError, match="unknown engine 'mpi'"):
        make_engine('mpi')
    with pytest.raises(ValueError, match="unknown engine 'mpi'"):
        be.engine_command('mpi', 2, [])


def test_kvstore_engine_outside_a_job_says_how_to_start_one(monkeypatch):
    """Without ps-lite's variables mx.kv.create('dist_sync') would hang or
    abort; the engine refuses at once and names the launcher."""
    monkeypatch.delenv('DMLC_ROLE', raising=False)
    with pytest.raises(EngineError, match='python -m d2lpar launch'):
        make_engine('kvstore')


def test_horovod_engine_without_horovod_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, 'horovod', None)  # import fails
    monkeypatch.setitem(sys.modules, 'horovod.mxnet', None)
    with pytest.raises(EngineError, match='make horovod'):
        make_engine('horovod')


def test_worker_command_line_error_is_exit_2(monkeypatch, capsys):
    monkeypatch.delenv('DMLC_ROLE', raising=False)
    assert main(['worker', '--epochs', '1']) == 2
    assert 'python -m d2lpar launch' in capsys.readouterr().err


def test_gradient_bytes_is_the_size_of_lenet():
    params = dp.init_lenet_params()
    assert be.gradient_bytes() == sum(4 * p.size for p in params)


def test_engine_commands_start_the_same_worker():
    """Both engines run `python -m d2lpar worker` with the given
    arguments, 2 workers, on this machine only."""
    kv = be.engine_command(
        'kvstore', 2, ['--epochs', '1'], timeout=60, servers=2
    )
    assert kv[1:10] == [
        '-m',
        'd2lpar',
        'launch',
        '--workers',
        '2',
        '--servers',
        '2',
        '--timeout',
        '60',
    ]
    hv = be.engine_command('horovod', 2, ['--epochs', '1'])
    assert hv[1:6] == ['-np', '2', '-H', 'localhost:2', '--gloo']
    for command, engine in ((kv, 'kvstore'), (hv, 'horovod')):
        worker = command[command.index('worker') - 3 :]
        assert worker == [
            sys.executable,
            '-m',
            'd2lpar',
            'worker',
            '--engine',
            engine,
            '--epochs',
            '1',
        ]
