"""The grader's cases and judgements, framework-neutral.

What a check tries (the cases, the values in them) and how it names a
mistake from what came back are the same whatever framework the student
wrote in: they live here, on host NumPy values, and import neither
MXNet nor PyTorch. A framework's check (:mod:`d2lpar.grading.allreduce`
for MXNet, :mod:`d2lpar.torch.grading` for PyTorch) makes the arrays,
calls the student, reads the results back to the host and asks these
functions what went wrong, passing in the few judgements that need its
own types (is this array on the right device?).
"""

import numpy as onp

from ..comm.schedules import Transfer, traffic
from ..splitting import micro_batches, shard_sizes
from .report import StudentError, call, show

# Tolerances per dtype: float64 results must keep float64's precision,
# which is how a sum computed in float32 is caught.
RTOL = {'float32': 1e-5, 'float64': 1e-12}

AVERAGE_SHAPES = [(3, 2), (4,), (1,)]  # 1 element: fewer than most k

# The assignments (homework/NN-*.md), by the check that grades them.
ASSIGNMENTS = {
    'check_allreduce': 'homework 1 (01-allreduce: tree and sharded allreduce)',
    'check_tree_allreduce': 'homework 1 (01-allreduce: tree_allreduce)',
    'check_sharded_allreduce': 'homework 1 (01-allreduce: sharded_allreduce)',
    'check_ring_schedule': 'homework 2 (02-ring-schedule)',
    'check_split_batch': 'homework 3 (03-split-batch: split_batch)',
    'check_evaluate': 'homework 3 (03-split-batch: evaluate_accuracy_sharded)',
    'check_grad_accumulation': 'homework 4 (04-grad-accumulation)',
    'check_train_batch': 'the train_batch of the book (no homework)',
    'check_average_params': 'homework 5 (05-averaging)',
    'check_train_epoch': 'homework 6 (06-overlap)',
}


def close(got, want, dtype):
    """Same shape and equal to ``dtype``'s tolerance (:data:`RTOL`)."""
    return got.shape == want.shape and onp.allclose(
        got, want, rtol=RTOL[dtype], atol=0
    )


def allreduce_cases():
    """k = 1..5 devices; sizes below, not divisible by, and a multiple of
    k; float32 and float64; one 2-D shape."""
    cases = []
    for k in range(1, 6):
        for shape in [(max(k - 1, 1),), (2 * k + 1,), (3, 2 * k)]:
            for dtype in ('float32', 'float64'):
                size = int(onp.prod(shape))
                cases.append(
                    {
                        'k': k,
                        'shape': shape,
                        'dtype': dtype,
                        'what': f'k={k} devices, shape {shape} '
                        f'({size} element'
                        f'{"s" if size > 1 else ""}), '
                        f'{dtype}',
                    }
                )
    return cases


def allreduce_values(case, seed=0):
    """The values of a case's arrays, one per device: small whole
    numbers, plus (float64) offsets that float32 cannot hold."""
    rng = onp.random.default_rng(seed + case['k'])
    values = [rng.integers(1, 9, case['shape']) for _ in range(case['k'])]
    if case['dtype'] == 'float64':
        # 1e-9 is below float32's resolution at these magnitudes.
        values = [v + 1e-9 * (i + 1) for i, v in enumerate(values)]
    return [onp.asarray(v, dtype=case['dtype']) for v in values]


def diagnose_sum(
    got, inputs, case, elsewhere=(), misplaced=None, host=None, mean=False
):
    """Name what is wrong with an allreduce's effect, or None if right.

    Parameters
    ----------
    got : list of numpy.ndarray
        The caller's arrays' values after the call (read to the host).
    inputs : list of numpy.ndarray
        Their values before the call.
    case : dict
        Needs ``'dtype'``.
    elsewhere : list of (int, array)
        Arrays of the framework that hold a result somewhere else than
        the caller's array ``i``: a rebound ``data[i]``, what was returned.
    misplaced : callable, optional
        ``misplaced(i, a)``: a ``changed-device``/``changed-dtype``
        finding when ``a`` cannot stand for the caller's array ``i``,
        else None (the framework's own test of devices and dtypes).
    host : callable, optional
        ``host(a)``: an array of the framework as a NumPy array.
    mean : bool, optional
        The mean is wanted (parameter averaging), not the sum.

    Returns
    -------
    tuple of (str, str) or None
        The mistake code and what was expected and got.
    """
    dtype, k = case['dtype'], len(inputs)
    total = onp.sum(onp.stack(inputs).astype('float64'), axis=0)
    want, other = (total / k, total) if mean else (total, total / k)
    if all(close(g, want, dtype) for g in got):
        return None
    expect = f'expected every array = {show(want)}'
    for i, a in elsewhere:
        found = misplaced(i, a)
        if found:
            return found
    for i, a in elsewhere:
        if close(host(a), want, dtype):
            return (
                'not-in-place',
                f'{expect}; the result is in a new array '
                f"(data[{i}] rebound or returned), but the caller's "
                f'data[{i}] still holds {show(got[i])}',
            )
    if k > 1 and all(close(g, v, dtype) for g, v in zip(got, inputs)):
        return (
            'did-nothing',
            f'{expect}; got the inputs back unchanged, '
            f'e.g. data[1] = {show(got[1])}',
        )
    if k > 1 and all(close(g, other, dtype) for g in got):
        return (
            'summed' if mean else 'averaged',
            f'{expect}; got {show(got[0])}',
        )
    if dtype == 'float64' and all(close(g, want, 'float32') for g in got):
        err = max(float(onp.abs(g - want).max()) for g in got)
        return (
            'changed-dtype',
            f'{expect}; got it only to float32 '
            f'precision (off by up to {err:.2g})',
        )
    right = [i for i, g in enumerate(got) if close(g, want, dtype)]
    wrong = [i for i in range(k) if i not in right]
    if right and all(close(got[i], inputs[i], dtype) for i in wrong):
        return (
            'not-broadcast',
            f'{expect}; devices {right} hold it but '
            f'data[{wrong[0]}] still holds its input '
            f'{show(got[wrong[0]])}',
        )
    return (
        'wrong-mean' if mean else 'wrong-sum',
        f'{expect}; got data[0] = {show(got[0])}',
    )


def results_elsewhere(originals, list_after, returned, is_array):
    """``(i, a)`` for every array that holds a result outside the
    caller's arrays: a slot of the list rebound, or what came back."""
    k = len(originals)
    found = []
    if list_after is not None:
        found += [
            (i, a) for i, a in enumerate(list_after) if a is not originals[i]
        ]
    if isinstance(returned, (list, tuple)):
        found += list(enumerate(returned))[:k]
    elif is_array(returned):  # the sum returned, not written
        found.append((0, returned))
    return [(i, a) for i, a in found if is_array(a)]


def misplaced(originals, place, same, home=None, noun='array'):
    """The ``misplaced(i, a)`` that :func:`diagnose_sum` takes:
    ``place(a)`` is where array ``a`` lives, ``same(p, q)`` whether two
    places share memory, ``home(i)`` where the caller's array ``i``
    lives (default ``place(originals[i])``); ``noun`` names the
    framework's arrays in the message."""
    home = home or (lambda i: place(originals[i]))

    def finding(i, a):
        if not same(place(a), home(i)):
            return (
                'changed-device',
                f'data[{i}] was replaced by {noun} on {place(a)}, but '
                f'the input lived on {home(i)}',
            )
        if a.dtype != originals[i].dtype:
            return (
                'changed-dtype',
                f'data[{i}] was replaced by a {a.dtype} {noun.split()[-1]}'
                f'; the input was {originals[i].dtype}',
            )
        return None

    return finding


def allreduce_shape(shape):
    """Refuse a ``shape=`` the allreduce checks do not know."""
    if shape not in (None, 'tree', 'sharded'):
        raise ValueError(
            f"check_allreduce: shape is {shape!r}; pass 'tree', "
            f"'sharded' or None"
        )


def shaped_checks(check_allreduce):
    """``check_tree_allreduce`` and ``check_sharded_allreduce``: a
    framework's ``check_allreduce`` with ``shape='tree'`` and
    ``shape='sharded'`` (the grader's checks of ``tree_allreduce`` and
    ``sharded_allreduce``)."""

    def made(shape):
        def check(fn):
            return check_allreduce(fn, shape=shape)

        check.__name__ = check.__qualname__ = f'check_{shape}_allreduce'
        check.__module__ = check_allreduce.__module__
        check.__doc__ = (
            f':func:`check_allreduce` with ``shape={shape!r}`` (the '
            f"grader's check of ``{shape}_allreduce``)."
        )
        return check

    return made('tree'), made('sharded')


def calls_library(calls, algorithm):
    """A ``calls-library`` finding if the student's code called one of
    the library's collectives (``calls``, their names), else None."""
    if not calls:
        return None
    name = calls[0]
    return (
        'calls-library',
        f"{algorithm} calls d2lpar's {name} (dp.{name}) instead of "
        f'moving and adding the arrays itself',
    )


# ---------------------------------------------------------------- averaging


def average_cases():
    """k = 1..5, three parameters (one smaller than k), both dtypes."""
    return [
        {
            'k': k,
            'dtype': dtype,
            'what': f'k={k} replicas of '
            f'{len(AVERAGE_SHAPES)} {dtype} parameters, shapes '
            f'{AVERAGE_SHAPES}',
        }
        for k in range(1, 6)
        for dtype in ('float32', 'float64')
    ]


def average_values(case):
    """``values[i][j]``: parameter ``j`` of replica ``i`` before the call."""
    rng = onp.random.default_rng(case['k'])
    values = [
        [rng.integers(1, 9, s).astype(case['dtype']) for s in AVERAGE_SHAPES]
        for _ in range(case['k'])
    ]
    if case['dtype'] == 'float64':
        values = [
            [v + 1e-9 * (i + 1) for v in vs] for i, vs in enumerate(values)
        ]
    return values


def average_case(fn, case, make, diagnose):
    """Run ``fn(device_params)`` on a case; name the first parameter whose
    replicas do not hold the mean.

    ``make(values, case)`` builds ``device_params`` (the framework's
    arrays, replica ``i`` on device ``i``); ``diagnose(originals, inputs,
    case, list_after)`` is the framework's :func:`diagnose_sum` with
    ``mean=True``.
    """
    values = average_values(case)
    device_params = make(values, case)
    objects = [list(p) for p in device_params]
    call(fn, device_params)
    for j in range(len(AVERAGE_SHAPES)):
        found = diagnose(
            [o[j] for o in objects],
            [v[j] for v in values],
            case,
            [p[j] for p in device_params],
        )
        if found:
            code, text = found
            return code, f'parameter {j}: {text}'
    return None


# ---------------------------------------------------------------- split_batch


def split_cases():
    """k = 1..5; n = k, 2k+1 and 11 examples (k=5: 11 = 2*5+1 and one
    more); 2-D and 4-D features; float32 and float64; then the bad
    inputs: n < k, and one label fewer than examples (``'labels'``)."""
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
    cases.append(
        {
            'k': 2,
            'n': 5,
            'labels': 4,
            'dtype': 'float32',
            'feature': (3,),
            'what': 'k=2 devices, 5 examples but 4 labels (must raise '
            'ValueError)',
        }
    )
    return cases


def batch_values(n, feature):
    """Example i has i in its first feature and label 100 + i (NumPy
    float64 features, int labels)."""
    X = onp.random.default_rng(n).random((n,) + feature)
    X.reshape(n, -1)[:, 0] = onp.arange(n)
    return X, 100 + onp.arange(n)


def example_ids(features):
    """The example numbers in a shard's features (host values)."""
    features = onp.asarray(features)
    return [int(round(v)) for v in features.reshape(len(features), -1)[:, 0]]


def split_case(fn, case, X, y, devs, shard_problem, host):
    """Run ``fn(X, y, devs)`` on a case; name the first mistake.

    ``shard_problem(i, xs, ys)`` is the framework's test of shard ``i``
    (its device, dtype and feature shape): a finding or None; ``host(a)``
    reads an array of the framework into NumPy.
    """
    k, n = case['k'], case['n']
    labels = case.get('labels', n)
    if labels != n:
        y = y[:labels]
    if n < k or labels != n:
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
            f'expected ValueError for {n} examples and {labels} labels '
            f'on {k} devices; got shards instead',
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
        found = shard_problem(i, xs, ys)
        if found:
            return found
    ids = [example_ids(host(xs)) for xs in X_shards]
    labels = [[int(v) - 100 for v in host(ys)] for ys in y_shards]
    return diagnose_shards(ids, labels, n, k)


def shard_problem(X, devs, place, same):
    """The ``shard_problem(i, xs, ys)`` that :func:`split_case` takes: a
    ``wrong-device`` or ``changed-dtype`` finding for shard ``i``, else
    None (``place(a)``: where ``a`` lives; ``same(p, q)``: whether two
    places share memory)."""

    def problem(i, xs, ys):
        if not (same(place(xs), devs[i]) and same(place(ys), devs[i])):
            return (
                'wrong-device',
                f'shard {i} should live on {devs[i]}; '
                f'X on {place(xs)}, y on {place(ys)}',
            )
        if xs.dtype != X.dtype or tuple(xs.shape[1:]) != tuple(X.shape[1:]):
            return (
                'changed-dtype',
                f'shard {i}: expected {X.dtype} examples of shape '
                f'{tuple(X.shape[1:])}, got {xs.dtype} '
                f'{tuple(xs.shape[1:])}',
            )
        return None

    return problem


def diagnose_shards(ids, labels, n, k):
    """Name what is wrong with shards holding examples ``ids[i]`` with
    labels of examples ``labels[i]``, or None if right."""
    for i, (xs, ys) in enumerate(zip(ids, labels)):
        if ys != xs:
            return (
                'labels-mismatched',
                f'shard {i} holds examples {xs} but the labels of {ys}',
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


# ---------------------------------------------------------------- evaluation


def evaluate_cases():
    """k = 1..5; equal batches for k=1, then uneven batches (2k+1 and
    k+2 examples) whose shards differ in size."""
    cases = [
        {
            'k': 1,
            'batches': (6, 6),
            'what': 'k=1 device, batches of 6 and 6 examples',
        }
    ]
    for k in range(2, 6):
        batches = (2 * k + 1, k + 2)
        cases.append(
            {
                'k': k,
                'batches': batches,
                'what': f'k={k} devices, '
                f'batches of {batches[0]} and {batches[1]} '
                f'examples',
            }
        )
    return cases


def evaluate_data(case, predict):
    """Images and labels with a known pattern of correct predictions.

    ``predict(X)`` is the framework's reference LeNet's class for every
    image of the NumPy float32 batch ``X``. Returns the batches as NumPy
    ``(X, y)`` pairs and, per batch, a 0/1 vector of which examples the
    reference classifies correctly: all of the first batch's first
    shard, then every third example.
    """
    rng = onp.random.default_rng(case['k'])
    batches, right = [], []
    for b, n in enumerate(case['batches']):
        X = rng.random((n, 1, 28, 28)).astype('float32')
        pred = onp.asarray(predict(X)).astype('int64')
        ok = (onp.arange(n) % 3 == 0).astype(int)
        if b == 0:
            ok[: shard_sizes(n, case['k'])[0]] = 1
        batches.append((X, onp.where(ok == 1, pred, (pred + 1) % 10)))
        right.append(ok)
    return batches, right


def alternatives(right, k):
    """The accuracy, and what the usual mistakes compute instead."""
    shards = [
        onp.split(r, onp.cumsum(shard_sizes(len(r), k))[:-1]) for r in right
    ]
    every = onp.concatenate(right)
    return {
        None: every.mean(),
        'averaged-shards': onp.mean([s.mean() for b in shards for s in b]),
        'averaged-batches': onp.mean([r.mean() for r in right]),
        'first-shard-only': (
            sum(b[0].sum() for b in shards) / sum(len(b[0]) for b in shards)
        ),
    }


def judge_accuracy(got, right, case):
    """Name what is wrong with the accuracy ``got`` (what the student
    returned) for examples classified right as ``right`` says, or None."""
    if got is None:
        return ('bad-return', 'expected the accuracy as a float; got None')
    try:
        got = float(got)
    except (TypeError, ValueError):
        return (
            'bad-return',
            f'expected the accuracy as a float; got {got!r:.100}',
        )
    options = alternatives(right, case['k'])
    want = options.pop(None)
    if abs(got - want) < 1e-6:
        return None
    text = (
        f'expected accuracy {want:.6f} '
        f'({int(sum(r.sum() for r in right))} correct of '
        f'{sum(case["batches"])}); got {got:.6f}'
    )
    for code, value in options.items():
        if abs(got - value) < 1e-6:
            return code, text
    return 'wrong-accuracy', text


# ---------------------------------------------------------------- schedules


def schedule_cases():
    """k = 1..5; arrays of k*6 elements (traffic checked exactly), and
    of sizes below and not divisible by k (sums checked)."""
    cases = []
    for k in range(1, 6):
        for n in (6 * k, 2 * k + 1, max(k - 1, 1)):
            for dtype in ('float32', 'float64'):
                cases.append(
                    {
                        'k': k,
                        'shape': (n,),
                        'dtype': dtype,
                        'what': f'k={k} devices, {n} {dtype} elements',
                    }
                )
    return cases


def schedule_structure(schedule, k):
    """A message when ``schedule`` is not a list of lists of Transfer."""
    if not isinstance(schedule, (list, tuple)):
        return f'returned {type(schedule).__name__}, not a list of steps'
    for s, step in enumerate(schedule):
        if not isinstance(step, (list, tuple)):
            return f'step {s} is a {type(step).__name__}, not a list'
        for t in step:
            if not isinstance(t, Transfer):
                return f'step {s} holds {t!r}, not a Transfer'
            if not (0 <= t.src < k and 0 <= t.dst < k and t.src != t.dst):
                return f'step {s}: {t} names a device outside range({k})'
            if t.chunk is not None and not 0 <= t.chunk < k:
                return f'step {s}: {t} names a chunk outside range({k})'
    return None


def schedule_case(fn, case, run):
    """Check ``fn(k)``'s schedule on a case: its form, that it is a ring,
    its sum (``run(schedule, case)`` runs it on the framework's arrays
    and returns :func:`diagnose_sum`'s finding), its traffic and steps.
    """
    k, n = case['k'], case['shape'][0]
    schedule = call(fn, k)
    if schedule is None:
        return ('bad-return', 'expected a list of steps; got None')
    problem = schedule_structure(schedule, k)
    if problem:
        return ('not-a-schedule', problem)
    for s, step in enumerate(schedule):
        for t in step:
            if t.dst != (t.src + 1) % k:
                return (
                    'not-a-ring',
                    f'step {s}: {t} sends from '
                    f'{t.src} to {t.dst}, not to {(t.src + 1) % k}',
                )
    found = run(schedule, case)
    if found:
        return found
    if n % k == 0:
        itemsize = onp.dtype(case['dtype']).itemsize
        bound = 2 * (k - 1) * n * itemsize // k
        sent, received = traffic(schedule, k, n, itemsize)
        if max(sent + received) > bound:
            return (
                'too-much-traffic',
                f'expected at most 2 (k-1) N / k = {bound // itemsize} '
                f'of the N = {n} elements ({bound} bytes) per device; '
                f'bytes sent {sent}, received {received}',
            )
    steps = [step for step in schedule if step]  # empty steps cost 0
    if len(steps) > 2 * (k - 1):
        return (
            'too-many-steps',
            f'expected {2 * (k - 1)} steps, got {len(steps)}',
        )
    return None


# ------------------------------------------------------------ training steps
#
# The checks of train_batch (the book's), of gradient accumulation
# (homework 4) and of the epoch with two steps in flight (homework 6):
# every replica must end equal to plain SGD on one device. A framework
# passes in a StepKit, its few operations on its own arrays; the cases,
# the loop over steps and the naming of what went wrong are here.

STEP_LR = 0.5
# float32 sums over devices add in another order than on one device.
STEP_RTOL, STEP_ATOL = 1e-4, 1e-6

# How a replica is updated in place, and what is lost otherwise, in each
# framework's terms (the not-in-place message).
IN_PLACE = {
    'mxnet': (
        'array',
        'update the arrays in place (p[:] = p - lr * p.grad / n), '
        'otherwise their attached gradients are lost',
    ),
    'torch': (
        'tensor',
        'update the tensors in place (p -= lr * p.grad / n, under '
        "torch.no_grad()), otherwise the caller's replicas keep their "
        'old tensors, and the new ones have no .grad',
    ),
}


class StepKit:
    """A framework's operations on its own arrays that the training-step
    checks need (each an attribute, set by the framework's check).

    Attributes
    ----------
    framework : str
        ``'mxnet'`` or ``'torch'``.
    start : callable
        ``start(k, seed) -> (devices, device_params, reference)``: ``k``
        devices, a LeNet replica on each (``init_lenet_params(seed,
        0.1)``) and a copy on one device.
    batches : callable
        ``batches(sizes, seed) -> [(X, y), ...]``: the framework's arrays
        of :func:`step_batch_values`.
    step : callable
        ``step(params, X, y, lr)``: the library's ``train_batch`` on one
        device, in place.
    values : callable
        ``values(params) -> [numpy.ndarray]``: host copies.
    fresh : callable
        ``fresh(values, X) -> params``: parameters holding ``values``,
        ready to train, on the device of ``X``.
    place, same : callable
        ``place(a)``: where array ``a`` lives; ``same(p, q)``: whether
        two places share memory.
    """

    def __init__(self, framework, **operations):
        self.framework = framework
        for name in ('start', 'batches', 'step', 'values', 'fresh'):
            setattr(self, name, operations.pop(name))
        self.place, self.same = operations.pop('place'), operations.pop('same')
        if operations:
            raise TypeError(
                f'StepKit: unknown operations {sorted(operations)}'
            )


def train_cases():
    """k = 1..5; three steps per case on 2k+1, k+1 and 3k examples."""
    return [
        {
            'k': k,
            'sizes': (2 * k + 1, k + 1, 3 * k),
            'what': f'k={k} devices, batches of {2 * k + 1}, {k + 1} '
            f'and {3 * k} examples',
        }
        for k in range(1, 6)
    ]


def accumulation_cases():
    """k = 1..5 with 2 or 3 micro-batches (both for k=1); two steps each
    on batches that split unevenly."""
    cases = []
    for k, m in ((1, 2), (1, 3), (2, 3), (3, 2), (4, 3), (5, 2)):
        sizes = (m * k + 1, m * k + k - 1 or m * k)
        cases.append(
            {
                'k': k,
                'm': m,
                'sizes': sizes,
                'what': f'k={k} devices, accumulate={m}, batches '
                f'of {sizes[0]} and {sizes[1]} examples',
            }
        )
    return cases


def epoch_cases():
    """k = 1..3; four uneven batches per epoch."""
    return [
        {
            'k': k,
            'sizes': (2 * k + 1, k + 1, 3 * k, k + 2),
            'what': f'k={k} devices, an epoch of 4 batches of '
            f'{2 * k + 1}, {k + 1}, {3 * k} and {k + 2} examples',
        }
        for k in range(1, 4)
    ]


def step_batch_values(sizes, seed):
    """Random images (float32) and labels (int64 in 0..9), one batch per
    size, as NumPy arrays."""
    rng = onp.random.default_rng(seed)
    return [
        (
            rng.random((n, 1, 28, 28)).astype('float32'),
            rng.integers(0, 10, n).astype('int64'),
        )
        for n in sizes
    ]


def train_case(fn, case, kit, accumulate=None):
    """Run ``fn(X, y, device_params, devices, lr[, accumulate=m])`` on a
    case's batches, one step each; name the first step that leaves the
    replicas other than one SGD step on one device."""
    devs, device_params, reference = kit.start(case['k'], seed=case['k'])
    kwargs = {} if accumulate is None else {'accumulate': accumulate}
    for step, (X, y) in enumerate(kit.batches(case['sizes'], case['k'])):
        before = kit.values(reference)
        objects = [list(p) for p in device_params]
        call(fn, X, y, device_params, devs, STEP_LR, **kwargs)
        kit.step(reference, X, y, STEP_LR)

        def alts(before=before, X=X, y=y):  # only for a wrong step
            if not accumulate:
                return ()
            return accumulation_mistakes(kit, before, X, y, accumulate)

        found = diagnose_step(
            kit,
            before,
            device_params,
            objects,
            devs,
            kit.values(reference),
            step,
            alts,
        )
        if found:
            return found
    return None


def accumulation_mistakes(kit, before, X, y, accumulate):
    """What the usual accumulation mistakes would leave on one device,
    from the values ``before``: ``(code, values)`` pairs."""
    micro = micro_batches(X, y, accumulate)
    n = X.shape[0]
    last = kit.fresh(before, X)
    Xm, ym = micro[-1]
    kit.step(last, Xm, ym, STEP_LR * Xm.shape[0] / n)
    out = [('not-accumulated', kit.values(last))]
    for scale in (False, True):
        params = kit.fresh(before, X)
        for Xm, ym in micro:
            kit.step(
                params, Xm, ym, STEP_LR * Xm.shape[0] / n if scale else STEP_LR
            )
        out.append(('stepped-per-micro-batch', kit.values(params)))
    return out


def _flat(arrays):
    return onp.concatenate([a.ravel().astype('float64') for a in arrays])


def same_values(a, b, rtol=STEP_RTOL, atol=STEP_ATOL):
    """Two lists of arrays agree to float32 rounding."""
    return all(
        x.shape == y.shape and onp.allclose(x, y, rtol, atol)
        for x, y in zip(a, b)
    )


def _replaced(kit, device_params, objects, devs):
    """A ``changed-device`` or ``not-in-place`` finding when a replica's
    list no longer holds its own arrays on its own device, else None."""
    noun, how = IN_PLACE[kit.framework]
    owner = {
        id(o): (i, j)
        for i, objs in enumerate(objects)
        for j, o in enumerate(objs)
    }
    for i, (params, objs) in enumerate(zip(device_params, objects)):
        for j, (p, o) in enumerate(zip(params, objs)):
            if not kit.same(kit.place(p), devs[i]):
                return (
                    'changed-device',
                    f'device_params[{i}][{j}] now lives on '
                    f'{kit.place(p)}, not on {devs[i]}',
                )
            if p is o:
                continue
            if owner.get(id(p), (i,))[0] != i:
                # PyTorch's k CPU devices are one CPU: a replica handed
                # another's tensor still lives "on the CPU", but it is
                # that device's tensor (on k GPUs it would live there).
                oi, oj = owner[id(p)]
                return (
                    'changed-device',
                    f'device_params[{i}][{j}] is now device_params'
                    f'[{oi}][{oj}], the {noun} of devices[{oi}] '
                    f'({devs[oi]}), not a {noun} of its own on {devs[i]}',
                )
            return (
                'not-in-place',
                f'device_params[{i}][{j}] was replaced by a new {noun}; {how}',
            )
    return None


def diagnose_step(
    kit, before, device_params, objects, devs, want, step, alternatives=tuple
):
    """Name what went wrong in one step, or None when it is right.

    Parameters
    ----------
    kit : StepKit
        The framework's operations.
    before : list of numpy.ndarray
        The replicas' values before the step (all equal).
    device_params : list of list
        The replicas after the step (the framework's arrays).
    objects : list of list
        The array objects the caller passed (identity is checked).
    devs : list
        The framework's devices.
    want : list of numpy.ndarray
        The one-device parameters after the step.
    step : int
        Which step (0 first): a later step that alone is wrong points
        at state leaking between steps.
    alternatives : callable, optional
        Returns ``(code, list of numpy.ndarray)`` pairs: what known
        mistakes would have produced (computed only for a wrong step).
    """
    found = _replaced(kit, device_params, objects, devs)
    if found:
        return found
    got = [kit.values(params) for params in device_params]
    tag = f'after step {step + 1}: '
    ref = _flat(want) - _flat(before)
    ratios = [_ratio(_flat(g) - _flat(before), ref) for g in got]
    for i in range(1, len(got)):
        if not same_values(got[i], got[0], 1e-5, 1e-7):
            j = next(
                j
                for j, (a, b) in enumerate(zip(got[i], got[0]))
                if not onp.allclose(a, b, 1e-5, 1e-7)
            )
            if None not in ratios:
                return (
                    'wrong-scale',
                    f'{tag}the replicas moved in the '
                    f'right direction but by {_fmt(ratios)} times the '
                    f'expected step (shard sizes differ, so dividing '
                    f'by the shard size breaks the replicas apart)',
                )
            return (
                'replicas-diverge',
                f'{tag}parameter {j} on device '
                f'{i} = {show(got[i][j])} but on device 0 = '
                f'{show(got[0][j])}',
            )
    if same_values(got[0], want):
        return None
    delta = _flat(got[0]) - _flat(before)
    j = next(
        j
        for j, (a, b) in enumerate(zip(got[0], want))
        if not onp.allclose(a, b, STEP_RTOL, STEP_ATOL)
    )
    text = (
        f'{tag}expected parameter {j} = {show(want[j])} (one SGD '
        f'step on one device); got {show(got[0][j])}'
    )
    if not onp.any(delta):
        return 'did-nothing', text + ' (unchanged)'
    for code, alt in alternatives():
        if _explains(alt, got[0], before):
            return code, text
    if step > 0:
        return 'stale-gradients', text
    if ratios[0] is not None:
        return (
            'wrong-scale',
            f'{text}; your update is {ratios[0]:.4g} times the expected one',
        )
    return 'not-one-device-step', text


def _explains(alt, got, before):
    """Whether a known mistake's parameters ``alt`` account for the step
    taken (``got`` from ``before``) up to 0.1% of its size: several SGD
    steps in a row (a step per micro-batch) carry float32 rounding from
    k devices into a few elements beyond :func:`same_values`' bound."""
    step = onp.linalg.norm(_flat(alt) - _flat(before))
    return bool(onp.linalg.norm(_flat(got) - _flat(alt)) <= 1e-3 * step)


def _ratio(delta, ref):
    """c when ``delta`` is c times ``ref`` (c not 0 or 1), else None."""
    c = delta @ ref / (ref @ ref)
    off = onp.linalg.norm(delta - c * ref) > 1e-3 * onp.linalg.norm(ref)
    return None if off or abs(c) < 1e-3 else float(c)


def _fmt(ratios):
    return ', '.join(f'{r:.4g}' for r in ratios)


# ---------------------------------------------------------------- overlap


class InFlight:
    """Which steps of an epoch were queued and which were read, as the
    student's loop went (homework 6).

    A step's numbers are *read* when the student's code makes Python
    wait for them (``.item()``, ``float()``, ...). Step ``i`` counts as
    queued once ``train_batch`` has been called for step ``i + 1`` (the
    last step: once it is called). A read of a step not yet queued is
    ``synced-every-batch``; calling step ``i`` while no number of step
    ``i - 2`` has been read is ``too-far-ahead``. Each framework's check
    tells it of the calls and reads it sees (MXNet's behind gates in
    its engine, PyTorch's on the tensors it hands out).

    Attributes
    ----------
    queued, passed : list of bool
        Per step: the next step was queued; a number of it was read.
    early : list of int
        Steps read before the next was queued, in order.
    ahead : int or None
        The first call made with two steps unread behind it.
    """

    def __init__(self, steps):
        self.steps, self.calls = steps, 0
        self.queued = [False] * steps
        self.passed = [False] * steps
        self.early = []
        self.ahead = None

    def call(self):
        """``train_batch`` is called: return the step's index."""
        i = self.calls
        self.calls += 1
        if i >= self.steps:
            raise RuntimeError(
                f'train_batch called {i + 1} times for {self.steps} batches'
            )
        if i >= 2 and not self.passed[i - 2] and self.ahead is None:
            self.ahead = i
        return i

    def returned(self, i):
        """``train_batch`` returned for step ``i``: step ``i - 1`` (and
        the last step, with no next one to wait for) is queued."""
        if i >= 1:
            self.queued[i - 1] = True
        if i == self.steps - 1:
            self.queued[i] = True

    def read(self, step):
        """A number of ``step`` is read now."""
        if not self.queued[step] and step not in self.early:
            self.early.append(step)
        self.passed[step] = True


def epoch_stats(real, examples):
    """``(mean loss, accuracy)`` from every step's per-device summed
    losses and correct counts (``real``: ``(losses, corrects)`` pairs of
    0-d arrays, read with ``.item()``)."""
    loss = sum(float(a.item()) for losses, _ in real for a in losses)
    right = sum(float(a.item()) for _, corrects in real for a in corrects)
    return loss / examples, right / examples


def epoch_case(fn, case, kit, watching):
    """Run ``fn(batches, device_params, devices, lr)`` on a case's epoch
    inside ``watching(order)`` (a context manager that reports the
    calls of ``train_batch`` and the reads of its numbers to ``order``,
    an :class:`InFlight`, and keeps what ``train_batch`` really returned
    in its ``.real``); name the first mistake."""
    devs, device_params, reference = kit.start(case['k'], seed=case['k'])
    batches = kit.batches(case['sizes'], case['k'])
    objects = [list(p) for p in device_params]
    order = InFlight(len(batches))
    with watching(order) as watch:
        returned = call(fn, batches, device_params, devs, STEP_LR)
    before = kit.values(reference)
    for X, y in batches:
        kit.step(reference, X, y, STEP_LR)
    found = diagnose_step(
        kit, before, device_params, objects, devs, kit.values(reference), 0
    )
    if found:
        code, text = found
        return code, text.replace('after step 1', 'after the epoch')
    if order.early:
        i = order.early[0]
        return (
            'synced-every-batch',
            f"batch {i + 1}'s numbers were read before batch {i + 2} "
            f'was queued (the devices idled while Python prepared the '
            f'next batch); read them after the next train_batch call',
        )
    if order.ahead is not None:
        i = order.ahead
        return (
            'too-far-ahead',
            f'train_batch was called for batch {i + 1} while no number '
            f'of batch {i - 1} had been read: more than two steps in '
            f'flight',
        )
    examples = sum(case['sizes'])
    want = epoch_stats(watch.real, examples)
    if not (
        isinstance(returned, tuple)
        and len(returned) == 2
        and all(isinstance(v, float) for v in returned)
    ):
        return (
            'bad-return',
            f'expected (mean loss, accuracy) as two floats, got {returned!r}'[
                :200
            ],
        )
    if not onp.allclose(returned, want, rtol=1e-4, atol=1e-6):
        return (
            'wrong-epoch-stats',
            f'expected (mean loss, accuracy) = ({want[0]:.6g}, '
            f'{want[1]:.6g}) over all {examples} examples; '
            f'got ({returned[0]:.6g}, {returned[1]:.6g})',
        )
    return None
