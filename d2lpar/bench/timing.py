"""The one timing loop of the benchmarks.

MXNet is imported by :func:`seconds_each` only, so that
:func:`compare_times` serves the PyTorch twin's benchmarks
(:mod:`d2lpar.torch.bench`) where no MXNet is installed.
"""

import decimal
import math
import statistics
from time import perf_counter

from ..seeds import compare_seeds


def seconds_each(fn, repeats, warmup):
    """Wall-clock seconds of each of ``repeats`` timed runs of ``fn()``.

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
    list of float
        One time per timed run, in order: their spread says how far a
        comparison can be trusted.

    Raises
    ------
    ValueError
        If ``repeats`` is below 1.
    """
    from mxnet import npx

    if repeats < 1:
        raise ValueError(
            f'seconds_each: repeats={repeats!r}; time at least one run'
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
    return times


def median_seconds(fn, repeats, warmup):
    """Median of :func:`seconds_each` (same arguments, same errors).

    Returns
    -------
    float
    """
    return statistics.median(seconds_each(fn, repeats, warmup))


def compare_times(a, b):
    """A verdict on two sets of timings that every single timing supports.

    Parameters
    ----------
    a : sequence of float
        The timings of the setting judged (seconds, or any unit where
        smaller is faster), e.g. one per round or per step.
    b : sequence of float
        The timings of the setting ``a`` is compared with, in the same
        unit. They are not paired with ``a``'s: only the two ranges
        count, so ``b`` may hold a different number of timings.

    Returns
    -------
    str
        ``'faster than'`` if every time of ``a`` is below every time of
        ``b``, ``'slower than'`` if every one is above, else ``'not
        clearly different from'`` (they overlap: the noise of the
        measurement is as large as the difference).

    Raises
    ------
    ValueError
        If either is empty.
    """
    # The same test as for seeds' accuracies: ranges that do not overlap.
    # Deliberately not a paired (per-round) rule, even for interleaved
    # rounds: ranges that do not overlap put every pairing of a round of
    # ``a`` with a round of ``b`` on the same side, so this verdict is never
    # stronger than the paired one. The pages show the paired view beside
    # it, as the range of per-round ratios.
    by_range = compare_seeds(a, b)
    return {'lower': 'faster than', 'higher': 'slower than'}.get(
        by_range, 'not clearly different from'
    )


def ratio_text(ratio):
    """A ratio as the pages print it: two decimals, or as many more as it
    takes not to print a ratio off 1 as ``1.00`` (which says "the same").

    Parameters
    ----------
    ratio : float
        A speed-up or another ratio of two times.

    Returns
    -------
    str
        For instance ``'1.13'``; ``'0.997'`` and ``'1.0004'`` (two
        decimals would read ``1.00``); ``'1.00'`` only for exactly 1 (or
        a ratio within a millionth of it).

    A ratio that a page printed with three decimals rounds as a reader
    rounds it, half up from the digits shown: ``1.075`` gives ``'1.08'``
    (Python's own formatting gives ``'1.07'``, the binary value of
    1.075 being a hair below it).

    Examples
    --------
    >>> ratio_text(1.133), ratio_text(0.997), ratio_text(1.0004)
    ('1.13', '0.997', '1.0004')
    >>> ratio_text(1.075)
    '1.08'
    """
    # Deliberately decimal rounding of the shortest repr (str), not the
    # binary value: the digits a page printed are what a reader rounds.
    if not math.isfinite(ratio):
        return f'{ratio:.2f}'
    exact = decimal.Decimal(str(ratio))
    for digits in range(2, 7):
        text = str(
            exact.quantize(
                decimal.Decimal(1).scaleb(-digits),
                rounding=decimal.ROUND_HALF_UP,
            )
        )
        if float(text) != 1 or ratio == 1:
            return text
    return f'{ratio:.2f}'


def span_text(values, digits=0, sep='-'):
    """The range of ``values`` as the pages print it: ``'12-15'``, or one
    number where both ends round to the same text (``'12'``, not
    ``'12-12'``).

    Parameters
    ----------
    values : sequence of float
        Every round's value, in any order.
    digits : int, optional
        Decimals of both ends.
    sep : str, optional
        Between the ends: ``'-'``, or ``' to '`` where a sign or a
        decimal point would make a hyphen hard to read.

    Returns
    -------
    str

    Raises
    ------
    ValueError
        If ``values`` is empty.

    Examples
    --------
    >>> span_text([14.2, 12.6, 15.1]), span_text([12.4, 12.2])
    ('13-15', '12')
    >>> span_text([0.5, 1.25], 2, ' to ')
    '0.50 to 1.25'
    """
    values = list(values)
    if not values:
        raise ValueError("span_text: no values; pass every round's value")
    low, high = f'{min(values):.{digits}f}', f'{max(values):.{digits}f}'
    return low if low == high else f'{low}{sep}{high}'


def where_in(value, values):
    """Where ``value`` lies against the range of ``values``: ``'below'``
    its lowest, ``'above'`` its highest, else ``'within'`` (an end counts
    as within).

    Examples
    --------
    >>> where_in(3.0, [4.0, 5.0]), where_in(5.0, [4.0, 5.0])
    ('below', 'within')
    """
    if value < min(values):
        return 'below'
    if value > max(values):
        return 'above'
    return 'within'


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
