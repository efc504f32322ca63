"""Shared helpers: small IDX files written by the tests, isolated paths,
fresh interpreters."""

import gzip
import os
import subprocess
import sys
import textwrap

import matplotlib
import numpy as onp
import pytest

matplotlib.use('Agg')  # tests draw figures without a screen

from d2lpar.data import DEBIAN_DIR as REAL_DIR  # noqa: E402
from d2lpar.idx import FILES, IMAGE_MAGIC, LABEL_MAGIC, encode_idx  # noqa: E402

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


def write_fashion_dir(directory, n_train=24, n_test=12, seed=0):
    """Write four small valid IDX files; return the arrays written."""
    rng = onp.random.default_rng(seed)
    os.makedirs(directory, exist_ok=True)
    written = {}
    for split, n in (('train', n_train), ('test', n_test)):
        images = rng.integers(0, 256, (n, 28, 28), dtype=onp.uint8)
        labels = rng.integers(0, 10, n, dtype=onp.uint8)
        write_gz(
            os.path.join(directory, NAMES[split][0]),
            idx_bytes(IMAGE_MAGIC, images),
        )
        write_gz(
            os.path.join(directory, NAMES[split][1]),
            idx_bytes(LABEL_MAGIC, labels),
        )
        written[split] = images, labels
    return written


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
