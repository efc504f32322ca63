"""The one timing loop of the benchmarks."""

import statistics
from time import perf_counter

from mxnet import npx


def median_seconds(fn, repeats, warmup):
    """Median wall-clock seconds of ``fn()`` over ``repeats`` runs.

    MXNet runs operators asynchronously, so every run starts and ends
    with ``npx.waitall()``: the time is the work ``fn`` queued, not the
    time to queue it.

    Parameters
    ----------
    fn : callable
        Called with no arguments, ``warmup + repeats`` times.
    repeats : int
        Timed runs (at least 1).
    warmup : int
        Untimed runs first (memory allocation, operator set-up).

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If ``repeats`` is below 1.
    """
    if repeats < 1:
        raise ValueError(
            f'median_seconds: repeats={repeats!r}; time at least one run'
        )
    times = []
    for i in range(warmup + repeats):
        npx.waitall()
        start = perf_counter()
        fn()
        npx.waitall()
        elapsed = perf_counter() - start
        if i >= warmup:
            times.append(elapsed)
    return statistics.median(times)


def interleaved(fns, rounds=3, repeats=5, warmup=1):
    """Time several functions side by side, robust to a busy machine.

    Each round times every function once (:func:`median_seconds`), one
    after the other; the best round of each is kept. Another program
    taking a core for a while then slows one round of one function, not
    the comparison.

    Parameters
    ----------
    fns : dict of str to callable
    rounds, repeats, warmup : int, optional

    Returns
    -------
    dict of str to float
        Seconds per call of each function, under the same keys.
    """
    best = {}
    for _ in range(rounds):
        for key, fn in fns.items():
            seconds = median_seconds(fn, repeats, warmup)
            best[key] = min(seconds, best.get(key, seconds))
    return best
