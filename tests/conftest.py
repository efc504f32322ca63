"""Shared helpers: small IDX files written by the tests, isolated paths,
fresh interpreters, random batches, the pieces the homework checks'
tests share (a per-device backward, a stub, a correct tree allreduce),
and running a notebook in another venv."""

import gzip
import os
import pathlib
import subprocess
import sys
import textwrap
import time

import matplotlib
import numpy as onp
import pytest
from mxnet import autograd, np

matplotlib.use('Agg')  # tests draw figures without a screen

import d2lpar as dp  # noqa: E402
from d2lpar.data import DEBIAN_DIR as REAL_DIR  # noqa: E402
from d2lpar.idx import FILES, IMAGE_MAGIC, LABEL_MAGIC, encode_idx  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
BOOK = str(ROOT / 'book')  # a str: tests join to it and monkeypatch it
# The chapters: the book's pages that are notebooks (file names, .md).
CHAPTERS = sorted(
    f
    for f in os.listdir(BOOK)
    if f.endswith('.md')
    and '\nkernelspec:' in open(os.path.join(BOOK, f)).read()
)
# The repository's scripts (pins, build_dist, chapter_notebook) are
# imported by the tests that check them.
sys.path.insert(0, str(ROOT / 'scripts'))

# The file names and the encoding are the library's, never retyped here.
NAMES = FILES
idx_bytes = encode_idx


def run_fresh(code, env=None, timeout=120):
    """Run ``code`` in a fresh interpreter; return its last stdout line."""
    full_env = dict(os.environ, **(env or {}))
    out = subprocess.run(
        [sys.executable, '-c', textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        check=True,
    )
    return out.stdout.strip().splitlines()[-1]


def write_gz(path, raw):
    with gzip.open(path, 'wb') as f:
        f.write(raw)


def write_idx_dir(directory, arrays):
    """Write ``{'train': (images, labels), 'test': ...}`` as gzipped IDX
    files under the library's names; return ``arrays``."""
    os.makedirs(directory, exist_ok=True)
    for split, (images, labels) in arrays.items():
        write_gz(
            os.path.join(directory, NAMES[split][0]),
            idx_bytes(IMAGE_MAGIC, images),
        )
        write_gz(
            os.path.join(directory, NAMES[split][1]),
            idx_bytes(LABEL_MAGIC, labels),
        )
    return arrays


def write_fashion_dir(directory, n_train=24, n_test=12, seed=0):
    """Write four small valid IDX files; return the arrays written."""
    rng = onp.random.default_rng(seed)
    written = {}
    for split, n in (('train', n_train), ('test', n_test)):
        images = rng.integers(0, 256, (n, 28, 28), dtype=onp.uint8)
        labels = rng.integers(0, 10, n, dtype=onp.uint8)
        written[split] = images, labels
    return write_idx_dir(directory, written)


@pytest.fixture
def isolated_data(tmp_path, monkeypatch):
    """Point every place d2lpar searches at empty folders under tmp_path."""
    import d2lpar.data

    monkeypatch.delenv('D2LPAR_DATA', raising=False)
    monkeypatch.setenv('MXNET_HOME', str(tmp_path / 'mxnet-home'))
    monkeypatch.setattr(d2lpar.data, 'DEBIAN_DIR', str(tmp_path / 'debian'))
    # Tests never download: a call would fail loudly here.
    monkeypatch.setattr(
        d2lpar.data, '_download', lambda directory: 'no network in tests'
    )
    return tmp_path


needs_real_data = pytest.mark.skipif(
    not all(
        os.path.exists(os.path.join(REAL_DIR, n))
        for names in NAMES.values()
        for n in names
    ),
    reason=f'real Fashion-MNIST not in {REAL_DIR}; install it with '
    f'apt-get install -y dataset-fashion-mnist',
)


# ------------------------------------------------------------ batches

LR = 0.5
BATCH_SIZES = (12, 11, 7, 12)  # 11 and 7 do not divide by 2 or 3


def make_batches(sizes=BATCH_SIZES, seed=0):
    """Random Fashion-MNIST-shaped batches ``[(X, y), ...]``, one per size:
    X float32 (n, 1, 28, 28) in [0, 1), y int32 labels in 0..9."""
    rng = onp.random.default_rng(seed)
    return [
        (
            np.array(rng.uniform(size=(n, 1, 28, 28)), dtype='float32'),
            np.array(rng.integers(0, 10, n), dtype='int32'),
        )
        for n in sizes
    ]


# ------------------------------------------------- the homework checks


def shard_grads(X, y, device_params, devices):
    """Split the batch and run LeNet's backward on every device, leaving
    each replica's gradient of its shard's summed loss in ``.grad``; no
    allreduce, no update. Returns the X shards."""
    X_shards, y_shards = dp.split_batch(X, y, devices)
    with autograd.record():
        ls = [
            dp.cross_entropy(dp.lenet(Xs, p), ys).sum()
            for Xs, ys, p in zip(X_shards, y_shards, device_params)
        ]
    for l in ls:
        l.backward()
    return X_shards


def stub_none(*args, **kwargs):
    """A student's unfinished function: does nothing, returns None."""
    return None


def tree_allreduce(data):
    """Homework 1's tree, a correct submission: pairs up, ceil(log2 k)
    rounds, then back down."""
    k, step = len(data), 1
    while step < k:
        for i in range(0, k - step, 2 * step):
            data[i][:] += data[i + step].copyto(data[i].ctx)
        step *= 2
    while step > 1:
        step //= 2
        for i in range(0, k - step, 2 * step):
            data[i].copyto(data[i + step])


def assert_names_only(check, bug, code):
    """``check(bug)`` fails, and every failing case names ``code``."""
    report = check(bug)
    assert not report
    assert report.mistakes == [code], str(report)


def assert_passes(check, fn):
    """``check(fn)`` passes every case."""
    report = check(fn)
    assert report.passed and bool(report), str(report)
    assert report.failures == []


def bug_ids(bugs):
    """Test ids for ``(check, bug, code)`` rows: ``check-code``."""
    return [f'{check.__name__}-{code}' for check, _, code in bugs]


# --------------------------------------------------------- loopback

# A job that sends itself argv[1] bytes over a loopback socket; it exits
# with status argv[3] (default 0) if the transfer took at least argv[2]
# seconds, else 9. Run it as [sys.executable, '-c', SEND_TO_SELF, ...].
SEND_TO_SELF = """
import socket, sys, threading, time
n, seconds = int(sys.argv[1]), float(sys.argv[2])
server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen()
client = socket.create_connection(server.getsockname())
peer, _ = server.accept()
threading.Thread(target=client.sendall, args=(b"x" * n,)).start()
start, got = time.monotonic(), 0
while got < n:
    got += len(peer.recv(1 << 16))
took = time.monotonic() - start
sys.exit(int((sys.argv[3:] or [0])[0]) if took >= seconds else 9)
"""


# ------------------------------------------------ notebooks in a venv

# Executes a notebook in place: python -c RUN_NOTEBOOK NOTEBOOK WORKDIR.
RUN_NOTEBOOK = """
import sys, nbformat
from nbclient import NotebookClient
nb = nbformat.read(sys.argv[1], as_version=4)
NotebookClient(nb, timeout=900, kernel_name='python3',
               resources={'metadata': {'path': sys.argv[2]}}).execute()
nbformat.write(nb, sys.argv[1])
"""


def plain_venv():
    """The student's venv, or a skip saying how to make it."""
    given = os.environ.get('D2LPAR_PLAIN_VENV')
    venv = pathlib.Path(given or ROOT / '.venv-plain').resolve()
    if not (venv / 'bin' / 'python').exists():
        if given:  # asked for explicitly (make test-notebooks): a failure
            pytest.fail(
                f'D2LPAR_PLAIN_VENV={given} has no bin/python; '
                f'run scripts/setup-venv.sh --plain {given}'
            )
        pytest.skip(
            f'no plain venv at {venv}; make test-notebooks '
            f'creates it (pip install ".[cpu,notebook]")'
        )
    return venv


def venv_env(venv, **extra):
    """The environment for a command run in ``venv``: its ``bin`` first
    on PATH, D2LPAR_QUICK=1, none of this process's PYTHONPATH,
    MPLBACKEND, VIRTUAL_ENV or PIP_* settings, then ``extra``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ('PYTHONPATH', 'MPLBACKEND', 'VIRTUAL_ENV')
        and not k.startswith('PIP_')
    }
    env.update(
        D2LPAR_QUICK='1',
        PATH=f'{venv / "bin"}{os.pathsep}{env.get("PATH", "")}',
        **extra,
    )
    return env


def run_notebook(venv, notebook, env, timeout=1200):
    """Execute ``notebook`` in place with ``venv``'s Python, in its own
    folder; print its seconds, and fail showing its stderr if it fails."""
    notebook = pathlib.Path(notebook)
    start = time.monotonic()
    done = subprocess.run(
        [str(venv / 'bin' / 'python'), '-c', RUN_NOTEBOOK, str(notebook)]
        + [str(notebook.parent)],
        cwd=notebook.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    print(f'{notebook.stem}: {time.monotonic() - start:.0f} s')
    assert done.returncode == 0, done.stderr[-4000:]


# Put on PYTHONPATH as sitecustomize.py: every Python started with it
# (a command, the kernels or submissions it starts) finds no PyTorch, as
# where PyTorch is not installed.
HIDE_TORCH = """
import importlib.abc
import sys


class NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] == 'torch':
            raise ModuleNotFoundError(f'No module named {name!r}', name=name)


sys.meta_path.insert(0, NoTorch())
"""


def pythonpath_without_torch(tmp_path):
    """A PYTHONPATH (the current one after it) whose sitecustomize hides
    PyTorch from every Python started with it."""
    hide = tmp_path / 'hide'
    hide.mkdir()
    (hide / 'sitecustomize.py').write_text(HIDE_TORCH)
    return os.pathsep.join(
        p for p in (str(hide), os.environ.get('PYTHONPATH')) if p
    )
