"""The book's one answer to "how much faster are two devices than one?".

Several pages state the speed-up of two devices over one. It is measured
once per build of the book, by :func:`two_devices`: the training
benchmark of :mod:`d2lpar.bench.train` (d2l's way and the library's, on
1, 2 and 4 devices, interleaved rounds in fresh processes, beside the
machine's limit), whose result is kept in :data:`FILE` under the book's
``_build`` folder (``jupyter-book clean`` empties it, so every build
measures anew). Whichever page needs it first measures it; every later
page reads the same numbers. A chapter run outside the book (a
downloaded notebook) measures it for itself.

Every round runs one device and then two in the same fresh process, so
each round gives one speed-up, ``ms on one device / ms on two``, and the
range over rounds is the answer: it carries the machine's noise.
"""

import json
import os
import statistics

from ..pages.book import book_settings
from .timing import ratio_text
from .train import compare_training

FILE = os.path.join('measurements', 'two-devices.json')
# A quick run's (scripts/run_page.py --quick) is kept apart, so that a
# quick run of one page does not replace a full build's measurement.
QUICK_FILE = os.path.join('measurements', 'two-devices-quick.json')
# The way the file's numbers were measured: a file written another way (an
# older version of this module) is measured anew, never reused. 2: the
# limit's rate is the best of runs before and during the rounds, and a
# disturbed round was measured again. 3: rounds still disturbed after
# the re-runs are listed in ``left_out`` and not part of the answer. 4: one
# device trains again at the end of every round (``after``). 5: ``after``
# names the device it ran on.
FORMAT = 5


def _build_dir():
    """The book's ``_build`` folder, if the working directory is in the
    book (the folder of ``_config.yml`` or one below it), else None."""
    here = os.path.abspath(os.getcwd())
    while True:
        if os.path.exists(os.path.join(here, '_config.yml')) and (
            os.path.exists(os.path.join(here, '_toc.yml'))
        ):
            return os.path.join(here, '_build')
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def design(quick):
    """Steps per measurement and rounds: a full build, or a quick one.

    Returns
    -------
    dict
        :func:`d2lpar.bench.compare_training`'s ``steps`` and
        ``rounds``.
    """
    # Five full rounds: once the library's one device used every core
    # for ReLU too, two devices' gain here shrank to about the spread of
    # three rounds (0.99-1.19 in one build), and the book's answer is
    # the range of its rounds; two more cost about ten seconds.
    return dict(steps=4, rounds=2) if quick else dict(steps=6, rounds=5)


def two_devices(path=None, progress=None):
    """The training benchmark every page reads, measured once per build.

    Parameters
    ----------
    path : str, optional
        The JSON file to read or write; default :data:`FILE` (a quick
        build's: :data:`QUICK_FILE`) under the book's ``_build`` folder
        (none outside the book: measured each call).
    progress : callable, optional
        Passed to :func:`d2lpar.bench.compare_training`.

    Returns
    -------
    dict
        :func:`d2lpar.bench.compare_training`'s result for
        ``(1, 2, 4)`` devices and both paths with ``after=True`` (its
        ``after`` row: one device trained once more, last, in every
        round), with ``rerun`` (how many disturbed rounds were measured
        again), ``left_out`` (the rounds still disturbed after that,
        which :func:`speedups` leaves out), ``quick`` (the build's mode)
        and ``reused`` (True when read from the file).
    """
    quick = book_settings().quick
    if path is None:
        build = _build_dir()
        name = QUICK_FILE if quick else FILE
        path = os.path.join(build, name) if build else None
    if path and os.path.exists(path):
        with open(path) as f:
            result = json.load(f)
        # A quick build's is not a full's, nor one of another design or
        # measured another way.
        same = (
            result.get('quick') == quick
            and result.get('format') == FORMAT
            and (result.get('steps'), len(result['rows'][0]['rounds']))
            == tuple(design(quick).values())
        )
        if same:
            return dict(result, reused=True)
    result = compare_training(
        (1, 2, 4), progress=progress, after=True, **design(quick)
    )
    result['rerun'] = _rerun_disturbed(result, quick, progress)
    # Still disturbed after the re-runs: kept in the file and the page's
    # table, left out of the answer (speedups), and counted on the page.
    result['left_out'] = disturbed_rounds(result)
    result['quick'] = quick
    result['format'] = FORMAT
    if path:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as f:
            json.dump(result, f, indent=1)
    return dict(result, reused=False)


def slow_rounds(times, factor=2.0):
    """Indices of the rounds in ``times`` that took over ``factor`` times
    the fastest: the first rule of :func:`disturbed_rounds`, for one
    setting's rounds (the measuring page applies it to allreduce rows).

    Examples
    --------
    >>> slow_rounds([1.0, 1.1, 2.5, 0.9])
    [2]
    """
    fastest = min(times)
    return [i for i, t in enumerate(times) if t > factor * fastest]


def disturbed_rounds(result, factor=2.0, path='d2lpar'):
    """Rounds in which a setting of ``path`` took over ``factor`` times its
    fastest round, or in which ``k`` devices ran more than ``k`` times as
    fast as one: another program held the cores (on this 2-core machine
    one such round made a step 11 times slower than the other, and a
    build beside a test suite slowed one device in every round, so the
    first rule alone saw two devices 4 to 12 times as fast as one).

    Returns
    -------
    list of int
        Round indices, ascending.
    """
    bad = set()
    one = None
    for row in result['rows']:
        if row['path'] == path:
            bad |= set(slow_rounds(row['rounds'], factor))
            if row['devices'] == 1:
                one = row['rounds']
    for row in result['rows']:
        if row['path'] == path and one is not None and row['devices'] > 1:
            # k devices add at most k times the arithmetic of one.
            bad |= {
                i for i, (a, b) in enumerate(zip(one, row['rounds']))
                if a / b > row['devices']
            }  # fmt: skip
    return sorted(bad)


def _rerun_disturbed(result, quick, progress, limit=2):
    """Measure each disturbed round again, at most ``limit`` times in all,
    replacing that round of every setting; return how many were re-run.

    The range of the rounds is the book's answer, so one round slowed by
    another program would set it. A re-run round is a whole new round
    (both paths, every device count, in its own processes), so the pairs
    stay paired; the page prints how many rounds were re-run.
    """
    reruns = 0
    while reruns < limit:
        bad = disturbed_rounds(result)
        if not bad:
            break
        fresh = compare_training(
            (1, 2, 4),
            progress=progress,
            after='after' in result,
            **dict(design(quick), rounds=1),
        )
        new = {
            (r['path'], r['devices']): r['rounds'][0] for r in fresh['rows']
        }
        # The new round's rate runs join the others: the limit is the
        # best rate seen while the benchmark ran.
        result['gflops_runs'] = result.get('gflops_runs', []) + fresh.get(
            'gflops_runs', []
        )
        if result['gflops_runs']:
            result['gflops'] = max(result['gflops_runs'])
        rows = [(row, (row['path'], row['devices'])) for row in result['rows']]
        if 'after' in result:  # the one device measured last, too
            new['after'] = fresh['after']['rounds'][0]
            rows.append((result['after'], 'after'))
        for row, key in rows:
            row['rounds'][bad[0]] = new[key]
            row['ms_per_step'] = statistics.median(row['rounds'])
            if result.get('gflops'):
                row['limit_ms'] = (
                    1000 * result['flops_per_step'] / (result['gflops'] * 1e9)
                )
            row['ratio'] = row['ms_per_step'] / row['limit_ms']
        reruns += 1
    return reruns


def speedups(result, k=2, path='d2lpar'):
    """Each round's speed-up of ``k`` devices over one.

    Parameters
    ----------
    result : dict
        From :func:`two_devices` (or
        :func:`d2lpar.bench.compare_training`).
    k : int, optional
        The device count compared with one; a count the benchmark
        measured (2 or 4 for :func:`two_devices`).
    path : str, optional
        Which training step: ``'d2lpar'`` (the library's) or ``'d2l'``
        (d2l's, :func:`d2lpar.bench.d2l_train_batch`).

    Returns
    -------
    list of float
        ``ms per step on one device / ms per step on k``, per round (both
        measured in the same process), leaving out the rounds in
        ``result['left_out']`` (still disturbed after the re-runs), unless
        that would leave none.
    """
    one, many = kept_rounds(result, 1, path), kept_rounds(result, k, path)
    return [a / b for a, b in zip(one, many)]


def kept_rounds(result, devices=1, path='d2lpar'):
    """The ms per step of one setting, in the rounds the answer keeps.

    The rounds of :func:`speedups`: those not in ``result['left_out']``
    (still disturbed after the re-runs), unless that would leave none.
    Every page that sets a number of its own beside the benchmark's reads
    the benchmark's rounds through this, so that all of them leave out
    the same rounds.

    Parameters
    ----------
    result : dict
        From :func:`two_devices` (or
        :func:`d2lpar.bench.compare_training`).
    devices : int or 'after', optional
        The device count of the row, or ``'after'``: the one device
        measured once more at the end of each round (``result['after']``).
    path : str, optional
        ``'d2lpar'`` or ``'d2l'``; ignored for ``'after'``.

    Returns
    -------
    list of float
        In the order of the rounds.

    Raises
    ------
    ValueError
        If ``result`` has no such row.
    """
    if devices == 'after':
        if 'after' not in result:
            raise ValueError(
                'kept_rounds: this result has no one-device-again row; '
                'measure it with after=True (two_devices does)'
            )
        rounds = result['after']['rounds']
    else:
        found = [
            r['rounds']
            for r in result['rows']
            if (r['path'], r['devices']) == (path, devices)
        ]
        if not found:
            measured = sorted(
                (r['path'], r['devices']) for r in result['rows']
            )
            raise ValueError(
                f'kept_rounds: no row for path {path!r} with devices={devices!r}; '
                f'this result measured (path, devices) {measured}'
            )
        rounds = found[0]
    left_out = set(result.get('left_out', ()))
    return [t for i, t in enumerate(rounds) if i not in left_out] or list(
        rounds
    )


def speedup_range(result, k=2, path='d2lpar'):
    """The lowest and highest of :func:`speedups`, each formatted by
    :func:`ratio_text` (two decimals, more where two would read 1.00).

    Parameters
    ----------
    result, k, path
        As for :func:`speedups`.

    Returns
    -------
    tuple of str
        ``(lowest, highest)``, for instance ``('0.95', '1.10')`` or
        ``('0.997', '1.13')``; the pages glue them where they state a
        speed-up.
    """
    values = speedups(result, k, path)
    return ratio_text(min(values)), ratio_text(max(values))
