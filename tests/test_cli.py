"""python -m d2lpar: progress per epoch, the summary line, clear errors."""
import subprocess
import sys

from conftest import write_fashion_dir
from d2lpar.cli import main


def test_train_prints_progress_and_summary(isolated_data, capsys):
    """Two epochs on tiny written data print the devices, one line per
    epoch, then the summary line naming both CPU contexts."""
    root = isolated_data / 'tiny'
    write_fashion_dir(root, n_train=16, n_test=8)
    status = main(['train', '--devices', '2', '--epochs', '2',
                   '--batch-size', '8', '--data', str(root)])
    out = capsys.readouterr().out.splitlines()
    assert status == 0
    assert out[0] == 'training on [cpu(0), cpu(1)]'
    assert out[1].startswith('epoch 1/2: test acc ')
    assert out[2].startswith('epoch 2/2: test acc ')
    assert out[3].startswith('test acc: ')
    assert out[3].endswith('sec/epoch on [cpu(0), cpu(1)]')


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
    run = subprocess.run([sys.executable, '-m', 'd2lpar', '--help'],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and 'train' in run.stdout
