"""Fashion-MNIST without a framework: where its files are looked for, and
each epoch's seeded order.

Both loaders, MXNet's (:func:`d2lpar.load_fashion_mnist`) and PyTorch's
(:func:`d2lpar.torch.load_fashion_mnist`), look for the four IDX files
(:mod:`d2lpar.idx` reads them) in the same folders, name every folder
they searched when none has them, and shuffle the training set in the
same seeded order, so both frameworks train on the same minibatches.
Imports neither framework.
"""

import os
import platform
import warnings

import numpy as onp

from .idx import FILES

DEBIAN_DIR = '/usr/share/datasets/fashion-mnist'


def mxnet_cache_dir():
    """MXNet's own download folder for Fashion-MNIST: ``datasets/
    fashion-mnist`` under ``$MXNET_HOME``, else ``~/.mxnet`` (on Windows
    ``%APPDATA%/mxnet``), as ``mxnet.base.data_dir()`` says, found
    without importing MXNet."""
    home = os.environ.get('MXNET_HOME')
    if home is None and platform.system() == 'Windows':
        home = os.path.join(os.environ.get('APPDATA', ''), 'mxnet')
    if home is None:
        home = os.path.join(os.path.expanduser('~'), '.mxnet')
    return os.path.join(home, 'datasets', 'fashion-mnist')


def search_dirs(root=None, cache=None, debian=None):
    """The folders searched for Fashion-MNIST, in order, with a label.

    Parameters
    ----------
    root : str, optional
        A folder given by the caller; searched first.
    cache, debian : str, optional
        MXNet's cache (default :func:`mxnet_cache_dir`) and Debian's
        folder (default :data:`DEBIAN_DIR`).

    Returns
    -------
    list of (str, str)
        ``(where it comes from, folder)``: ``root``, ``$D2LPAR_DATA``,
        MXNet's cache, then Debian's folder.
    """
    dirs = []
    if root is not None:
        dirs.append(('root argument', os.fspath(root)))
    if os.environ.get('D2LPAR_DATA'):
        dirs.append(('$D2LPAR_DATA', os.environ['D2LPAR_DATA']))
    dirs.append(('MXNet cache', cache or mxnet_cache_dir()))
    dirs.append(('Debian package dataset-fashion-mnist', debian or DEBIAN_DIR))
    return dirs


def missing_files(directory):
    """Which of the four files ``directory`` lacks (all, if it is not
    there)."""
    names = FILES['train'] + FILES['test']
    return [n for n in names if not os.path.isfile(os.path.join(directory, n))]


def warn_if_passed_over(report, directory, stacklevel=4):
    """Warn when a folder the caller named (``root``,
    ``$D2LPAR_DATA``) is in ``report``, the folders that lacked the
    files, and ``directory`` is read instead: most likely a typo, and
    training on another copy must not go unnoticed."""
    chosen = [
        line
        for line in report
        if '(root argument)' in line or '($D2LPAR_DATA)' in line
    ]
    if chosen:
        warnings.warn(
            'load_fashion_mnist: the folder you chose lacks '
            'Fashion-MNIST:\n'
            + '\n'.join(chosen)
            + f'\nreading {directory} instead; fix the path to '
            'use your own copy',
            stacklevel=stacklevel,
        )


def look_for(dirs):
    """The first of ``dirs`` (from :func:`search_dirs`) holding all four
    files, and the report of those before it: ``(folder, report)``, or
    ``(None, report)`` naming what each folder lacked.

    Warns
    -----
    UserWarning
        When ``root`` or ``$D2LPAR_DATA`` lacks the files and a later
        folder is used instead (:func:`warn_if_passed_over`; the warning
        points at the caller of ``load_fashion_mnist``).
    """
    report = []
    for label, directory in dirs:
        missing = missing_files(directory)
        if not missing:
            warn_if_passed_over(report, directory, stacklevel=5)
            return directory, report
        report.append(f'  {directory} ({label}): missing {", ".join(missing)}')
    return None, report


def not_found(report, download=None):
    """The error when no folder has the files: every folder searched
    (``report``), what ``download`` says of a download tried, if any,
    and the two ways to get the data."""
    tried = f'\n{download}' if download else ''
    return FileNotFoundError(
        'load_fashion_mnist: Fashion-MNIST was not found. Looked in:\n'
        + '\n'.join(report)
        + tried
        + '\nTo get the data, either\n'
        "  1. install Debian's package: "
        'sudo apt-get install -y dataset-fashion-mnist, or\n'
        '  2. put the four .gz IDX files in a folder and pass root=FOLDER '
        'or set D2LPAR_DATA=FOLDER.'
    )


class SeededShuffle:
    """Indices ``0..n-1`` in a new random order each epoch, reproducibly.

    Epoch ``e``'s order depends only on ``(seed, e)``: a seed fixes every
    epoch's order in either framework (each loader's ``ShuffleSampler``
    is this class on its framework's sampler), and a resumed run can
    start at any epoch.

    Parameters
    ----------
    n : int
        Number of examples.
    seed : int
        Seed of the orders.
    epoch : int, optional
        The epoch whose order the next pass uses.
    """

    def __init__(self, n, seed, epoch=0):
        self._n, self._seed, self.epoch = n, seed, epoch

    def __iter__(self):
        rng = onp.random.default_rng((self._seed, self.epoch))
        self.epoch += 1
        return iter(rng.permutation(self._n).tolist())

    def __len__(self):
        return self._n
