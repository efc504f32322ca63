"""Fashion-MNIST's file format: four gzip-compressed IDX files.

The files are read and validated here (magic numbers, shapes, counts,
label range) so that a corrupt or truncated download is an error that
names the file, never a silently wrong dataset. :func:`encode_idx` writes
the same format (the tests make small datasets with it).
"""

import gzip
import hashlib
import os
import struct
import zlib

import numpy as onp

FILES = {
    'train': ('train-images-idx3-ubyte.gz', 'train-labels-idx1-ubyte.gz'),
    'test': ('t10k-images-idx3-ubyte.gz', 't10k-labels-idx1-ubyte.gz'),
}
IMAGE_MAGIC, LABEL_MAGIC = 2051, 2049
NUM_CLASSES = 10


class DatasetError(ValueError):
    """A Fashion-MNIST file exists but is corrupt, truncated or wrong."""


# Where the book build keeps each file's decompressed bytes (set by
# scripts/build-book.sh): every dp.train, worker process and benchmark
# child of a build reads the same files, and decompressing the training
# images took about a third of a second of CPU each time. Unset: none.
CACHE_VAR = 'D2LPAR_IDX_CACHE'


def _cache_path(path):
    """The cache file of ``path``'s bytes (named by its real path, size
    and modification time), or None when no cache is set."""
    folder = os.environ.get(CACHE_VAR, '')
    if not folder:
        return None
    stat = os.stat(path)
    key = f'{os.path.realpath(path)}\0{stat.st_size}\0{stat.st_mtime_ns}'
    digest = hashlib.blake2b(key.encode(), digest_size=16).hexdigest()
    return os.path.join(folder, f'{os.path.basename(path)}.{digest}')


def _read_gzip(path):
    """The decompressed bytes of ``path`` (from the cache, if set and it
    holds them; the header and length checks run on them either way)."""
    try:
        cached = _cache_path(path)
    except OSError:
        cached = None  # gzip.open below says what is wrong with the file
    if cached:
        try:
            with open(cached, 'rb') as f:
                return f.read()
        except OSError:
            pass
    try:
        with gzip.open(path, 'rb') as f:
            raw = f.read()
    except (OSError, EOFError, zlib.error) as e:
        raise DatasetError(
            f'{path}: not a complete gzip file ({e}); '
            f'delete it and fetch it again'
        ) from e
    if cached:
        try:
            os.makedirs(os.path.dirname(cached), exist_ok=True)
            temporary = f'{cached}.{os.getpid()}'
            with open(temporary, 'wb') as f:
                f.write(raw)
            os.replace(temporary, cached)  # never a half-written file
        except OSError:
            pass  # no cache: read as without one
    return raw


def read_idx(path, magic, item_shape):
    """Read one gzip-compressed IDX file and validate its header.

    Parameters
    ----------
    path : str
        The ``.gz`` file.
    magic : int
        Expected magic number (2051 for images, 2049 for labels).
    item_shape : tuple of int
        Expected shape of one item: ``(28, 28)`` or ``()``.

    Returns
    -------
    numpy.ndarray of uint8, shape (n, *item_shape)

    Raises
    ------
    DatasetError
        If the file is not gzip, has the wrong magic number or item shape,
        or holds fewer or more bytes than its header promises.
    """
    raw = _read_gzip(path)
    header_len = 4 * (2 + len(item_shape))
    if len(raw) < header_len:
        raise DatasetError(
            f'{path}: only {len(raw)} bytes, too short for '
            f'an IDX header; the file is truncated'
        )
    found, n, *dims = struct.unpack(
        f'>{2 + len(item_shape)}I', raw[:header_len]
    )
    if found != magic:
        raise DatasetError(
            f'{path}: magic number {found}, expected '
            f'{magic}; is this the right file?'
        )
    if tuple(dims) != tuple(item_shape):
        raise DatasetError(
            f'{path}: items of shape {tuple(dims)}, '
            f'expected {tuple(item_shape)}'
        )
    expected = header_len + n * int(onp.prod(item_shape, dtype=int))
    if len(raw) != expected:
        raise DatasetError(
            f'{path}: header promises {n} items '
            f'({expected} bytes) but the file holds '
            f'{len(raw)} bytes; it is truncated or '
            f'corrupt, fetch it again'
        )
    data = onp.frombuffer(raw, onp.uint8, offset=header_len)
    return data.reshape((n,) + tuple(item_shape))


def read_split(directory, split):
    """Read and cross-check the images and labels of one split.

    Parameters
    ----------
    directory : str
        Folder holding the four IDX files.
    split : {'train', 'test'}

    Returns
    -------
    X : numpy.ndarray of float32, shape (n, 1, 28, 28), values in [0, 1]
    y : numpy.ndarray of int32, shape (n,), values in 0..9

    Raises
    ------
    DatasetError
        If a file is invalid, the counts differ, or a label is not 0-9.
    """
    image_path, label_path = (
        os.path.join(directory, name) for name in FILES[split]
    )
    images = read_idx(image_path, IMAGE_MAGIC, (28, 28))
    labels = read_idx(label_path, LABEL_MAGIC, ())
    if len(images) != len(labels):
        raise DatasetError(
            f'{image_path} holds {len(images)} images but '
            f'{label_path} holds {len(labels)} labels; the '
            f'files come from different sets'
        )
    if len(labels) and labels.max() >= NUM_CLASSES:
        raise DatasetError(
            f'{label_path}: label {labels.max()} is outside '
            f'0..{NUM_CLASSES - 1}; the file is corrupt'
        )
    # One pass into one new array: astype then / 255 made two of 188 MB
    # for the training split (the same float32 values, in twice the CPU).
    X = onp.divide(images[:, None, :, :], onp.float32(255), dtype=onp.float32)
    return X, labels.astype(onp.int32)


def encode_idx(magic, array):
    """The IDX bytes of a uint8 array: magic, dimensions, then the data.

    Parameters
    ----------
    magic : int
        :data:`IMAGE_MAGIC` or :data:`LABEL_MAGIC`.
    array : numpy.ndarray
        Items along the first axis; cast to uint8.

    Returns
    -------
    bytes
        To be gzip-compressed into a file :func:`read_idx` reads.
    """
    header = struct.pack(f'>{1 + array.ndim}I', magic, *array.shape)
    return header + array.astype(onp.uint8).tobytes()
