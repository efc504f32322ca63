"""python -m d2lpar: progress per epoch, the summary line, clear errors."""

import re
import subprocess
import sys

import pytest
from conftest import needs_real_data, write_fashion_dir

from d2lpar.cli import main


def test_train_prints_progress_and_summary(isolated_data, capsys):
    """Two epochs on tiny written data print the devices, one line per
    epoch, then the summary line naming both CPU contexts."""
    root = isolated_data / 'tiny'
    write_fashion_dir(root, n_train=16, n_test=8)
    status = main(
        [
            'train',
            '--devices',
            '2',
            '--epochs',
            '2',
            '--batch-size',
            '8',
            '--data',
            str(root),
        ]
    )
    out = capsys.readouterr().out.splitlines()
    assert status == 0
    assert out[0] == 'training on [cpu(0), cpu(1)]'
    assert out[1].startswith('initial weights: std 0.1 ')
    assert out[2].startswith('epoch 1/2: test acc ')
    assert out[3].startswith('epoch 2/2: test acc ')
    assert out[4].startswith('test acc: ')
    assert out[4].endswith('sec/epoch on [cpu(0), cpu(1)]')


def test_init_scale_reaches_the_weights(isolated_data, capsys, monkeypatch):
    """The weights train() starts from have the std --init-scale names
    (0.1 without it, not the book's 0.01, whose first epoch stays at
    chance), and the first lines say which."""
    import d2lpar.training as training

    real, stds = training.init_lenet_params, []

    def spy(*args, **kwargs):
        params = real(*args, **kwargs)
        stds.append(float(params[0].asnumpy().std()))  # W1, 6*1*5*5
        return params

    monkeypatch.setattr(training, 'init_lenet_params', spy)
    root = isolated_data / 'tiny'
    write_fashion_dir(root, n_train=16, n_test=8)
    for extra in ([], ['--init-scale', '0.01']):
        assert (
            main(
                [
                    'train',
                    '--epochs',
                    '1',
                    '--batch-size',
                    '8',
                    '--data',
                    str(root),
                ]
                + extra
            )
            == 0
        )
    # 150 draws: the sample std lies within 25% of the true one.
    assert stds[0] == pytest.approx(0.1, rel=0.25)
    assert stds[1] == pytest.approx(0.01, rel=0.25)
    out = capsys.readouterr().out
    assert 'initial weights: std 0.1 ' in out
    assert 'initial weights: std 0.01 ' in out


@pytest.mark.slow
@needs_real_data
def test_one_epoch_on_two_devices_beats_chance():
    """`python -m d2lpar train --devices 2 --epochs 1`, as the README
    types it, on the real Fashion-MNIST ends far above the 10% of
    chance."""
    run = subprocess.run(
        [
            sys.executable,
            '-m',
            'd2lpar',
            'train',
            '--devices',
            '2',
            '--epochs',
            '1',
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    last = run.stdout.strip().splitlines()[-1]
    match = re.fullmatch(
        r'test acc: (0\.\d\d), \d+\.\d sec/epoch on '
        r'\[cpu\(0\), cpu\(1\)\]',
        last,
    )
    assert match, run.stdout
    assert float(match.group(1)) > 0.5


def test_bad_input_exits_2_with_message(isolated_data, capsys):
    """Zero devices or a missing dataset is exit status 2 and one clear
    message on stderr, not a traceback."""
    assert main(['train', '--devices', '0']) == 2
    assert 'n must be positive' in capsys.readouterr().err
    status = main(['train', '--data', str(isolated_data / 'none')])
    assert status == 2
    assert 'Fashion-MNIST was not found' in capsys.readouterr().err


def test_module_entry_point():
    """`python -m d2lpar --help` runs and lists the train command."""
    run = subprocess.run(
        [sys.executable, '-m', 'd2lpar', '--help'],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0 and 'train' in run.stdout


@pytest.mark.slow
def test_bench_memory_prints_each_setting_and_round(capsys):
    """``bench memory`` runs the comparison (fresh processes) and prints
    one row per framework and setting, each with every round."""
    assert main(['bench', 'memory', '--rounds', '2', '--steps', '3',
                 '--frameworks', 'mxnet']) == 0  # fmt: skip
    rows = capsys.readouterr().out.splitlines()[1:]
    assert [r.split()[:2] for r in rows] == [
        ['mxnet', 'defaults'],
        ['mxnet', 'kept'],
    ]
    for row in rows:
        ms, faults = row.split(None, 2)[2].split(';')
        assert len(ms.split()) == len(faults.split()) == 2, row
