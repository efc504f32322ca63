"""The worker's engines: clear errors where an engine cannot start, and
the commands and sizes the engine benchmark relies on."""

import sys

import pytest

import d2lpar as dp
from d2lpar.bench import engines as be
from d2lpar.cli import build_parser, main
from d2lpar.multiprocess.engines import (
    KVSTORES,
    EngineError,
    ParameterServer,
    make_engine,
)


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


def test_dist_async_on_horovod_is_refused():
    """dist_async is a parameter-server mode; Horovod has no servers to
    update the weights, so the combination is an error saying what to
    use, raised before Horovod is even imported."""
    with pytest.raises(ValueError, match='Horovod always sums'):
        make_engine('horovod', 'dist_async')


def test_unknown_kvstore_mode_is_refused(monkeypatch):
    monkeypatch.setenv('DMLC_ROLE', 'worker')  # refused before kv.create
    with pytest.raises(ValueError, match="unknown kvstore 'dist_fast'"):
        make_engine('kvstore', 'dist_fast')


def test_worker_command_line_dist_async_on_horovod_is_exit_2(
    monkeypatch, capsys
):
    monkeypatch.delenv('D2LPAR_KVSTORE', raising=False)
    assert (
        main(['worker', '--engine', 'horovod', '--kvstore', 'dist_async']) == 2
    )
    assert 'Horovod always sums' in capsys.readouterr().err


def test_launch_and_worker_accept_every_kvstore_mode():
    """Both command lines take each mode of the one table, KVSTORES."""
    parser = build_parser()
    for mode in KVSTORES:
        args = parser.parse_args(['launch', '--kvstore', mode, '--', 'true'])
        assert args.kvstore == mode
        args = parser.parse_args(['worker', '--kvstore', mode])
        assert args.kvstore == mode


def test_an_async_server_refuses_to_sum():
    """On dist_async the servers update instead of adding: sum_ says so
    rather than returning updated weights as a 'sum'."""
    engine = ParameterServer.__new__(ParameterServer)  # no job needed
    engine.asynchronous, engine.batch_size = True, None
    with pytest.raises(EngineError, match='dist_async has no sum'):
        engine.sum_([])
    with pytest.raises(EngineError, match='before set_optimizer'):
        engine.update_([], [], 64)
