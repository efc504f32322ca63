"""One step with glibc's malloc defaults and with d2lpar's settings.

``import d2lpar`` keeps freed memory for the next step
(:mod:`d2lpar.memory`); ``D2LPAR_KEEP_FREED_MEMORY=0`` keeps glibc's
defaults. :func:`compare_allocator` times one device's LeNet step both
ways, in each framework, each in a fresh process (the settings act from
the moment the process imports d2lpar), and counts the page faults.
"""

import statistics
from time import perf_counter

from ..memory import SWITCH
from .step import in_fresh_process_each

SETTINGS = ('defaults', 'kept')


def _step(framework, batch_size):
    """One device's step of ``framework``, every core, as a function."""
    if framework == 'mxnet':
        import numpy as onp
        from mxnet import np, npx

        import d2lpar as dp

        rng = onp.random.default_rng(0)
        X = np.array(
            rng.uniform(size=(batch_size, 1, 28, 28)), dtype='float32'
        )
        y = np.array(rng.integers(0, 10, batch_size), dtype='int32')
        devices = dp.devices(1)
        dp.thread_budget(devices)
        params = [dp.get_params(dp.init_lenet_params(0, 0.1), devices[0])]

        def step():
            dp.train_batch(X, y, params, devices, 0.1)
            npx.waitall()

        return step
    import torch

    from ..torch import bench as tbench
    from ..torch.training import train_batch, wait_for

    X, y, devices, params = tbench._setup(1, batch_size)
    torch.set_num_threads(tbench.every_core())
    wait = wait_for(devices)

    def step():
        train_batch(X, y, params, devices, 0.1)
        wait()

    return step


def _faults_and_ms(framework, steps, warmup, batch_size):
    """Median ms of ``steps`` steps and the minor page faults per step,
    in this process."""
    import resource  # POSIX only: imported here, not where the twin is

    step = _step(framework, batch_size)
    for _ in range(warmup):
        step()
    before = resource.getrusage(resource.RUSAGE_SELF)
    seconds = []
    for _ in range(steps):
        start = perf_counter()
        step()
        seconds.append(perf_counter() - start)
    after = resource.getrusage(resource.RUSAGE_SELF)
    return {
        'ms': 1e3 * statistics.median(seconds),
        'mean_ms': 1e3 * statistics.mean(seconds),
        'faults': (after.ru_minflt - before.ru_minflt) / steps,
        'kernel_ms': 1e3 * (after.ru_stime - before.ru_stime) / steps,
    }


def installed_frameworks():
    """The frameworks of ``('mxnet', 'pytorch')`` installed here."""
    import importlib.util

    found = []
    for framework, module in (('mxnet', 'mxnet'), ('pytorch', 'torch')):
        try:  # d2lpar's import hook raises, naming the fix, for no MXNet
            if importlib.util.find_spec(module) is not None:
                found.append(framework)
        except ImportError:
            pass
    return tuple(found)


def compare_allocator(frameworks=None, rounds=3, steps=20, warmup=5,
                      batch_size=256, timeout=300):  # fmt: skip
    """One device's step under glibc's defaults and with freed memory
    kept, in interleaved rounds.

    Each round runs, for each framework, one fresh process per setting
    (the order of the two settings alternates from round to round):
    ``warmup`` untimed steps, then ``steps`` timed ones.

    The two settings differ only on Linux with glibc (elsewhere
    ``import d2lpar`` sets nothing, :func:`d2lpar.keep_freed_memory`).

    Parameters
    ----------
    frameworks : sequence of str, optional
        Of ``'mxnet'`` and ``'pytorch'``; by default those installed
        (:func:`installed_frameworks`).
    rounds : int, optional
        Rounds; each runs every framework under both settings.
    steps : int, optional
        Timed steps per process.
    warmup : int, optional
        Untimed steps before them.
    batch_size : int, optional
        Examples per step.
    timeout : float, optional
        Seconds a fresh process may take before it is stopped.

    Returns
    -------
    dict
        ``{framework: {setting: list of per-round dicts}}``, setting
        ``'defaults'`` (``D2LPAR_KEEP_FREED_MEMORY=0``) or ``'kept'``;
        each dict holds ``ms`` (the median step), ``mean_ms`` (the
        mean), ``faults`` (minor page faults per step, the mean) and
        ``kernel_ms`` (the kernel's CPU time per step, every thread of
        the process).
    """
    if frameworks is None:
        frameworks = installed_frameworks()
    result = {f: {s: [] for s in SETTINGS} for f in frameworks}
    for r in range(rounds):
        for framework in frameworks:
            for setting in SETTINGS[:: -1 if r % 2 else 1]:
                env = {SWITCH: '0' if setting == 'defaults' else '1'}
                (run,) = in_fresh_process_each(
                    env, _faults_and_ms,
                    [(framework, steps, warmup, batch_size)], timeout,
                )  # fmt: skip
                result[framework][setting].append(run)
    return result


def format_allocator(result):
    """One line per framework and setting: each round's ms per step and
    page faults per step."""
    lines = [
        f'{"":<8} {"malloc":<9} ms per step (each round); page faults per step'
    ]
    for framework, settings in result.items():
        for setting, runs in settings.items():
            ms = ' '.join(f'{run["ms"]:.1f}' for run in runs)
            faults = ' '.join(f'{run["faults"]:,.0f}' for run in runs)
            lines.append(f'{framework:<8} {setting:<9} {ms};  {faults}')
    return '\n'.join(lines)
