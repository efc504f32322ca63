"""Check a student's split_batch: every example once, in order, balanced."""

import numpy as onp
from mxnet import np

from ..devices import devices as make_devices
from .report import StudentError, call, run_cases


def split_cases():
    """k = 1..5; n = k, 2k+1 and 11 examples (k=5: 11 = 2*5+1 and one
    more); 2-D and 4-D features; float32 and float64; n < k last."""
    cases = []
    for k in range(1, 6):
        for n in sorted({k, 2 * k + 1, 11}):
            for dtype, feature in (('float32', (3,)), ('float64', (1, 2, 2))):
                cases.append(
                    {
                        'k': k,
                        'n': n,
                        'dtype': dtype,
                        'feature': feature,
                        'what': f'k={k} devices, {n} examples of '
                        f'shape {feature}, {dtype}',
                    }
                )
    for k in (2, 4):
        cases.append(
            {
                'k': k,
                'n': k - 1,
                'dtype': 'float32',
                'feature': (3,),
                'what': f'k={k} devices, only '
                f'{k - 1} examples (must raise ValueError)',
            }
        )
    return cases


def make_batch(n, feature, dtype):
    """Example i has i in its first feature and label 100 + i."""
    X = onp.random.default_rng(n).random((n,) + feature)
    X.reshape(n, -1)[:, 0] = onp.arange(n)
    return (
        np.array(X, dtype=dtype),
        np.array(100 + onp.arange(n), dtype='int32'),
    )


def _ids(shard):
    return [
        int(round(v))
        for v in shard.asnumpy().reshape(shard.shape[0], -1)[:, 0]
    ]


def _split_case(fn, case):
    k, n = case['k'], case['n']
    devs = make_devices(k)
    X, y = make_batch(n, case['feature'], case['dtype'])
    if n < k:
        try:
            out = call(fn, X, y, devs)
        except StudentError as e:
            if isinstance(e.error, ValueError):
                return None
            raise
        if out is None:
            return (
                'bad-return',
                'expected (X_shards, y_shards) or a ValueError; got None',
            )
        return (
            'accepted-bad-input',
            f'expected ValueError for {n} '
            f'examples on {k} devices; got shards instead',
        )
    out = call(fn, X, y, devs)
    if out is None:
        return ('bad-return', 'expected (X_shards, y_shards); got None')
    if not (
        isinstance(out, (tuple, list))
        and len(out) == 2
        and all(isinstance(s, (list, tuple)) and len(s) == k for s in out)
    ):
        return (
            'bad-return',
            f'expected two lists of {k} arrays, got '
            f'{type(out).__name__} {out!r:.200}',
        )
    X_shards, y_shards = out
    for i, (xs, ys) in enumerate(zip(X_shards, y_shards)):
        if xs.ctx != devs[i] or ys.ctx != devs[i]:
            return (
                'wrong-device',
                f'shard {i} should live on {devs[i]}; '
                f'X on {xs.ctx}, y on {ys.ctx}',
            )
        if xs.dtype != X.dtype or xs.shape[1:] != X.shape[1:]:
            return (
                'changed-dtype',
                f'shard {i}: expected {X.dtype} '
                f'examples of shape {X.shape[1:]}, got {xs.dtype} '
                f'{xs.shape[1:]}',
            )
    ids = [_ids(xs) for xs in X_shards]
    for i, (xs, ys) in enumerate(zip(ids, y_shards)):
        labels = [int(v) - 100 for v in ys.asnumpy()]
        if labels != xs:
            return (
                'labels-mismatched',
                f'shard {i} holds examples {xs} but the labels of {labels}',
            )
    flat = [i for shard in ids for i in shard]
    missing = sorted(set(range(n)) - set(flat))
    if missing:
        return (
            'dropped-examples',
            f'expected examples 0..{n - 1}; '
            f'examples {missing} are on no device (shards {ids})',
        )
    if len(flat) > n:
        return (
            'duplicated-examples',
            f'expected {n} examples in all, got {len(flat)}: {ids}',
        )
    if flat != list(range(n)):
        return ('reordered', f'expected 0..{n - 1} in order, got {ids}')
    sizes = [len(s) for s in ids]
    if max(sizes) - min(sizes) > 1:
        return (
            'unbalanced',
            f'shard sizes {sizes} for {n} examples on '
            f'{k} devices; sizes may differ by at most one',
        )
    return None


def check_split_batch(fn):
    """Check a student's split_batch on k = 1..5 devices.

    ``fn(X, y, devices)`` must behave like :func:`d2lpar.split_batch`:
    return ``(X_shards, y_shards)``, one contiguous shard per device on
    that device, every example exactly once and in order, shard sizes
    differing by at most one, and raise ValueError when there are fewer
    examples than devices.

    Parameters
    ----------
    fn : callable
        The student's ``split_batch(X, y, devices)``.

    Returns
    -------
    Report

    Examples
    --------
    >>> import d2lpar as dp
    >>> bool(dp.check_split_batch(dp.split_batch))
    True
    """
    return run_cases('check_split_batch', fn, split_cases(), _split_case)
