"""Comparing settings run over several seeds (or timed rounds).

One run of a small training says little: another seed moves the final
accuracy by as much as many settings do. A setting is therefore run
with several seeds, and two settings are compared by every seed, never
by one. Two ways, depending on how the runs were made:

* :func:`compare_seeds`: independent runs (or timings, through
  :func:`d2lpar.bench.compare_times`): a verdict only when the ranges
  do not overlap.
* :func:`compare_paired`: runs that share each seed (the same initial
  parameters and order of examples in both settings), compared seed by
  seed, with :func:`paired_differences`, :func:`difference_range`.

:func:`seed_range` and :func:`seed_table` write the values for a page.
Plain Python on lists of floats: no MXNet, no framework.
"""

import statistics


def compare_seeds(a, b):
    """Compare two sets of per-seed results by their ranges.

    Parameters
    ----------
    a : sequence of float
        The setting judged: one value per seed (e.g. its final
        accuracies).
    b : sequence of float
        The setting ``a`` is compared with, one value per seed. The runs
        are independent, not paired: ``b`` need not use the same seeds
        as ``a``, nor as many.

    Returns
    -------
    str
        ``'higher'`` if every value of ``a`` exceeds every value of
        ``b``, ``'lower'`` if every one is below, otherwise
        ``'within the seed-to-seed spread'``: the ranges overlap, and
        these seeds cannot tell the two apart.

    Raises
    ------
    ValueError
        If either is empty.
    """
    if not len(a) or not len(b):
        raise ValueError(
            f'got {len(a)} and {len(b)} values; each setting needs at '
            f'least one (one per seed, or per timed run)'
        )
    if min(a) > max(b):
        return 'higher'
    if max(a) < min(b):
        return 'lower'
    return 'within the seed-to-seed spread'


def seed_range(values):
    """Per-seed values as ``'mean (lowest-highest)'``, three decimals.

    Taught in :doc:`/book/scaling`.

    Parameters
    ----------
    values : sequence of float
        One value per seed (e.g. final accuracies).

    Returns
    -------
    str

    Raises
    ------
    ValueError
        If ``values`` is empty.

    Examples
    --------
    >>> seed_range([0.7, 0.74, 0.72])
    '0.720 (0.700-0.740)'
    """
    if not len(values):
        raise ValueError('seed_range: no values; pass one per seed')
    mean = statistics.fmean(values)
    return f'{mean:.3f} ({min(values):.3f}-{max(values):.3f})'


def paired_differences(a, b):
    """``a[i] - b[i]`` for every seed ``i`` of two paired settings.

    Taught in :doc:`/book/scaling`.

    Parameters
    ----------
    a : sequence of float
        One setting's values, one per seed.
    b : sequence of float
        The other setting's values, for the same seeds in the same
        order: ``b[i]`` is subtracted from ``a[i]``.

    Returns
    -------
    list of float

    Raises
    ------
    ValueError
        If ``a`` and ``b`` are empty or of different lengths.
    """
    if not len(a) or len(a) != len(b):
        raise ValueError(
            f'paired_differences: got {len(a)} and {len(b)} values; pass '
            f'one per seed for the same seeds in the same order'
        )
    return [float(x) - float(y) for x, y in zip(a, b)]


def difference_range(a, b):
    """The smallest and largest per-seed difference ``a[i] - b[i]``,
    signed, three decimals: ``'-0.058 to -0.036'``.

    Taught in :doc:`/book/scaling`; the errors of
    :func:`paired_differences`.

    Examples
    --------
    >>> difference_range([0.70, 0.66, 0.68], [0.72, 0.60, 0.67])
    '-0.020 to +0.060'
    """
    diffs = paired_differences(a, b)
    return f'{min(diffs):+.3f} to {max(diffs):+.3f}'


def compare_paired(a, b):
    """Compare two settings run with the same seeds, seed by seed.

    Taught in :doc:`/book/scaling`. Seed ``i`` gives both settings the
    same initial parameters and order of examples, so ``a[i] - b[i]``
    is the effect of the setting alone on that seed, and the verdict
    asks every seed to agree. With ``n`` seeds, two equal settings
    would still all agree by chance ``2 / 2**n`` of the time (each sign
    a coin toss): the verdict says which way every seed went, not that
    the difference is significant.

    Parameters
    ----------
    a : sequence of float
        The setting judged: one value per seed (e.g. its final
        accuracies).
    b : sequence of float
        The setting ``a`` is compared with, for the same seeds in the
        same order: ``b[i]`` was run with ``a[i]``'s seed.

    Returns
    -------
    str
        ``'higher'`` if ``a[i] > b[i]`` for every seed, ``'lower'`` if
        ``a[i] < b[i]`` for every seed, otherwise ``'indistinguishable'``
        (the seeds disagree, or one is tied).

    Raises
    ------
    ValueError
        If ``a`` and ``b`` are empty or of different lengths
        (:func:`paired_differences`).

    Examples
    --------
    >>> compare_paired([0.71, 0.66], [0.70, 0.60])
    'higher'
    >>> compare_paired([0.71, 0.60], [0.70, 0.66])
    'indistinguishable'
    """
    diffs = paired_differences(a, b)
    if all(d > 0 for d in diffs):
        return 'higher'
    if all(d < 0 for d in diffs):
        return 'lower'
    return 'indistinguishable'


def seed_table(rows, seeds):
    """Per-seed values as a table: one row per setting, one column per
    seed, then the mean.

    Taught in :doc:`/book/scaling`: settings run with the same seeds
    are paired, and a column holds one seed's runs, to compare down it.

    Parameters
    ----------
    rows : dict of str to sequence of float
        Setting to its values, one per seed, in the order of ``seeds``.
    seeds : sequence of int

    Returns
    -------
    str
        Lines joined by newlines, three decimals.

    Raises
    ------
    ValueError
        If a row does not hold one value per seed.

    Examples
    --------
    >>> print(seed_table({'k=1': [0.7, 0.8], 'k=2': [0.6, 0.7]}, (0, 1)))
         seed 0  seed 1    mean
    k=1   0.700   0.800   0.750
    k=2   0.600   0.700   0.650
    """
    for label, values in rows.items():
        if len(values) != len(seeds):
            raise ValueError(
                f'seed_table: {label!r} has {len(values)} values for '
                f'{len(seeds)} seeds; pass one per seed'
            )
    width = max(len(label) for label in rows)
    lines = [' ' * width + ''.join(f'  seed {s}' for s in seeds) + '    mean']
    for label, values in rows.items():
        cells = [*values, statistics.fmean(values)]
        lines.append(f'{label:>{width}}' + ''.join(f'{v:8.3f}' for v in cells))
    return '\n'.join(lines)
