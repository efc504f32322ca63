"""Fashion-MNIST without a framework: where its files are looked for, and
each epoch's seeded order.

Both loaders, MXNet's (:func:`d2lpar.load_fashion_mnist`) and PyTorch's
(:func:`d2lpar.torch.load_fashion_mnist`), look for the four IDX files
(:mod:`d2lpar.idx` reads them) in the same folders, name every folder
they searched when none has them, and shuffle the training set in the
same seeded order, so both frameworks train on the same minibatches.
:func:`download` fetches the files into MXNet's cache from the mirror
MXNet's Gluon uses, with the standard library only (PyTorch's loader
calls it; a student without MXNet, d2l or torchvision still gets the
data). Imports neither framework.
"""

import hashlib
import os
import platform
import tempfile
import urllib.error
import urllib.request
import warnings

import numpy as onp

from .idx import FILES

DEBIAN_DIR = '/usr/share/datasets/fashion-mnist'

#: Gluon's mirror (``mxnet.gluon.utils._get_repo_url``); the
#: environment variable ``$MXNET_GLUON_REPO`` replaces it, as in MXNet.
GLUON_REPO = 'https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/'
#: Where the files lie under the mirror (Gluon's ``FashionMNIST``).
NAMESPACE = 'gluon/dataset/fashion-mnist/'
#: SHA-1 of each ``.gz`` file on the mirror, as Gluon's ``FashionMNIST``
#: checks them (mxnet/gluon/data/vision/datasets.py, MXNet 1.9.1).
SHA1 = {
    'train-images-idx3-ubyte.gz': '0cf37b0d40ed5169c6b3aba31069a9770ac9043d',
    'train-labels-idx1-ubyte.gz': '236021d52f1e40852b06a4c3008d8de8aef1e40b',
    't10k-images-idx3-ubyte.gz': '626ed6a7c06dd17c0eec72fa3be1740f146a2863',
    't10k-labels-idx1-ubyte.gz': '17f9ab60e7257a1620f4ad76bbbaf857c3920701',
}


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
    cache : str, optional
        MXNet's cache folder (default :func:`mxnet_cache_dir`).
    debian : str, optional
        The folder of Debian's package ``dataset-fashion-mnist``
        (default ``/usr/share/datasets/fashion-mnist``).

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


class DownloadError(OSError):
    """A Fashion-MNIST file could not be fetched or failed its SHA-1
    check; the message names the URL, why, and how to place the files
    by hand."""


def mirror_url(url=None):
    """The folder URL the four files are fetched from: ``url`` if given,
    else ``$MXNET_GLUON_REPO`` (else Gluon's default mirror,
    ``d2lpar.fashion.GLUON_REPO``) followed by
    ``gluon/dataset/fashion-mnist/``, as MXNet's Gluon builds it."""
    if url is None:
        repo = os.environ.get('MXNET_GLUON_REPO') or GLUON_REPO
        url = repo.rstrip('/') + '/' + NAMESPACE
    return url.rstrip('/') + '/'


def _fetch(url, path, sha1, timeout):
    """Stream ``url`` into a temporary file beside ``path``, check its
    SHA-1, then rename it to ``path``; return its size in bytes. Nothing
    is left at ``path`` (or beside it) if any step fails."""
    directory, name = os.path.split(path)
    fd, part = tempfile.mkstemp(
        prefix=f'.{name}.', suffix='.part', dir=directory
    )
    try:
        digest, size = hashlib.sha1(), 0
        with os.fdopen(fd, 'wb') as out:
            with urllib.request.urlopen(url, timeout=timeout) as response:
                while chunk := response.read(1 << 20):
                    digest.update(chunk)
                    out.write(chunk)
                    size += len(chunk)
        if digest.hexdigest() != sha1:
            raise DownloadError(
                f'{name} from {url} has SHA-1 {digest.hexdigest()}, expected '
                f'{sha1}: a corrupt or wrong file ({size} bytes); it was '
                f'not kept'
            )
        os.replace(part, path)
        return size
    finally:
        if os.path.exists(part):
            os.remove(part)


def _why(error, timeout):
    """A short reason for a failed request."""
    reason = getattr(error, 'reason', error)
    if isinstance(error, urllib.error.HTTPError):
        return f'HTTP {error.code} {error.reason}'
    if isinstance(reason, TimeoutError):
        return f'no answer within the timeout of {timeout} s'
    return f'{type(reason).__name__}: {reason}'


def download(directory=None, *, url=None, sha1=None, timeout=30, log=None):
    """Fetch the Fashion-MNIST files ``directory`` lacks.

    Standard library only: each of the four ``.gz`` IDX files missing
    from ``directory`` is fetched from the mirror, its SHA-1 checked,
    and only then renamed into place (a failed or corrupt download
    leaves nothing behind). Files already there cause no request.

    Parameters
    ----------
    directory : str, optional
        Where the files go; default MXNet's cache
        (:func:`mxnet_cache_dir`), which both loaders search.
    url : str, optional
        The folder holding the four files; default
        :func:`mirror_url` (Gluon's mirror, or ``$MXNET_GLUON_REPO``).
    sha1 : dict, optional
        File name to expected SHA-1; default ``d2lpar.fashion.SHA1``,
        the sums Gluon's ``FashionMNIST`` checks in MXNet 1.9.1.
    timeout : float, optional
        Seconds each request may wait for the server (to connect, or for
        the next data) before it fails.
    log : callable, optional
        Called with each progress line: one before, then one per file
        fetched (name, size); default ``print``.

    Returns
    -------
    list of str
        The names fetched (empty when all four were there).

    Raises
    ------
    DownloadError
        Naming the file, its URL, why it failed (no answer within the
        timeout, HTTP error, SHA-1 mismatch, ...), and where to put the
        files by hand.
    """
    directory = os.fspath(directory or mxnet_cache_dir())
    missing = missing_files(directory)
    if not missing:
        return []
    base, sha1 = mirror_url(url), sha1 or SHA1
    log = log or (lambda line: print(line, flush=True))
    os.makedirs(directory, exist_ok=True)
    files = 'the file' if len(missing) == 1 else f'{len(missing)} files'
    log(f'Fashion-MNIST: downloading {files} from {base} into {directory}')
    for name in missing:
        source = base + name
        try:
            size = _fetch(
                source, os.path.join(directory, name), sha1[name], timeout
            )
        except DownloadError as e:
            raise DownloadError(f'{e}.\n{by_hand(base, directory)}') from e
        except (OSError, ValueError) as e:  # URLError, timeouts, disk
            raise DownloadError(
                f'could not download {name} from {source}: '
                f'{_why(e, timeout)}.\n{by_hand(base, directory)}'
            ) from e
        log(f'  {name}: {size / 1e6:.1f} MB, SHA-1 checked')
    return missing


def by_hand(base, directory):
    """How to place the four files without this download."""
    names = ', '.join(FILES['train'] + FILES['test'])
    return (
        f'To place them by hand, fetch {names} from {base} (or any '
        f'Fashion-MNIST copy) into {directory}'
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
