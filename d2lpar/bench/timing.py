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
        raise ValueError(f'median_seconds: repeats={repeats!r}; time at '
                         f'least one run')
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
