"""One data-parallel step of LeNet: ``python -m d2lpar bench step``.

Times one ``train_batch`` step on 1 and 2 devices, with MXNet's default
scratch-buffer pool and with d2lpar's, each pool in a fresh process
(MXNet reads the setting once, when its engine starts).
"""

import multiprocessing
import os

from .timing import median_seconds

MXNET_DEFAULT_TEMP_COPY = '4'


def time_steps(num_devices, batch_size=256, repeats=20, warmup=3):
    """Median seconds of one data-parallel LeNet step, in this process.

    Parameters
    ----------
    num_devices : int
        Devices from :func:`d2lpar.devices`.
    batch_size : int, optional
        Examples per step, summed over devices.
    repeats : int, optional
        Timed steps.
    warmup : int, optional
        Untimed steps before them.

    Returns
    -------
    float
        Median seconds per step, each ended by ``npx.waitall()``.
    """
    import numpy as onp
    from mxnet import np

    import d2lpar as dp

    rng = onp.random.default_rng(0)
    X = np.array(rng.uniform(size=(batch_size, 1, 28, 28)), dtype='float32')
    y = np.array(rng.integers(0, 10, batch_size), dtype='int32')
    devices = dp.devices(num_devices)
    # The devices share the cores as in dp.train (one device every core).
    dp.thread_budget(devices)
    params = dp.init_lenet_params(0, 0.1)
    device_params = [dp.get_params(params, d) for d in devices]
    return median_seconds(
        lambda: dp.train_batch(X, y, device_params, devices, 0.1),
        repeats,
        warmup,
    )


def compare_steps(
    device_counts=(1, 2),
    temp_copies=None,
    batch_size=256,
    repeats=20,
    timeout=600,
    rounds=2,
):
    """Time steps for each device count and scratch-pool size.

    Each pool size runs in a fresh Python process with
    ``MXNET_CPU_TEMP_COPY`` set, which times every device count in turn,
    one device always first, the other counts alternating their order
    over rounds (``d2lpar.bench.step.round_order``). All settings are
    measured
    once per round, interleaved, and every round is kept: a verdict
    needs every round of one setting to beat every round of the other
    (:func:`d2lpar.bench.compare_times`).

    Parameters
    ----------
    device_counts : sequence of int, optional
    temp_copies : sequence of str, optional
        Pool sizes; default MXNet's 4 and d2lpar's own.
    batch_size, repeats : int, optional
    timeout : float, optional
        Seconds allowed for each child process.
    rounds : int, optional
        Interleaved repetitions of the whole comparison.

    Returns
    -------
    list of dict
        ``{'devices', 'temp_copy', 'sec_per_step', 'rounds'}`` per
        setting: the median over rounds and every round's median step.
    """
    import statistics

    from .. import CPU_TEMP_COPY

    temp_copies = temp_copies or (MXNET_DEFAULT_TEMP_COPY, CPU_TEMP_COPY)
    times = {}
    for r in range(rounds):
        counts = round_order(device_counts, r)
        # The pool sizes alternate too: neither always runs first.
        for temp_copy in list(temp_copies)[:: -1 if r % 2 else 1]:
            # One process per pool size (read when MXNet's engine
            # starts), not per device count: start-up costs more than the
            # timed steps, and time_steps sets each count's threads.
            seconds = in_fresh_process_each(
                {'MXNET_CPU_TEMP_COPY': str(temp_copy)},
                time_steps,
                [(k, batch_size, repeats) for k in counts],
                timeout,
            )
            for k, sec in zip(counts, seconds):
                times.setdefault((str(temp_copy), k), []).append(sec)
    return [
        dict(devices=k, temp_copy=t, sec_per_step=statistics.median(s),
             rounds=s)
        for (t, k), s in sorted(times.items())
    ]  # fmt: skip


def format_steps(rows):
    """A table of :func:`compare_steps` rows: the median step, every
    round, and (where one device was timed with the same pool) the
    speed-up over it."""
    base = {
        r['temp_copy']: r['sec_per_step'] for r in rows if r['devices'] == 1
    }
    lines = [
        f'{"MXNET_CPU_TEMP_COPY":>20} {"devices":>8} {"ms/step":>9}'
        + (f' {"speed-up":>9}' if base else '')
        + '  each round (ms/step)'
    ]
    for r in rows:
        each = ' '.join(f'{1000 * s:.1f}' for s in r.get('rounds', ()))
        speedup = ''
        if base:
            ratio = base.get(r['temp_copy'], float('nan')) / r['sec_per_step']
            speedup = f' {ratio:>8.2f}x'
        lines.append(
            f'{r["temp_copy"]:>20} {r["devices"]:>8} '
            f'{1000 * r["sec_per_step"]:>9.1f}{speedup}  {each}'
        )
    return '\n'.join(lines)


def round_order(device_counts, r):
    """``device_counts`` in order on even rounds ``r``, reversed on odd
    ones, so that no count is always measured first in its process;
    except 1, always first.

    One device must come first: a device that trained beside others
    keeps its share of the cores for the rest of its process (see
    :mod:`d2lpar.threads`), so one device measured after two would use
    one core, not every core.
    """
    ordered = list(device_counts)[:: -1 if r % 2 else 1]
    return sorted(ordered, key=lambda k: k != 1)  # stable: 1, then rest


def in_fresh_process_each(env, fn, arg_list, timeout):
    """``[fn(*args) for args in arg_list]``, in one fresh process.

    For settings that differ only in what can change after start-up: one
    start of Python and MXNet (several seconds) serves them all.
    """
    return _in_fresh_process(env, _call_each, (fn, arg_list), timeout)


def _call_each(fn, arg_list):
    return [fn(*args) for args in arg_list]


def _in_fresh_process(env, fn, args, timeout):
    """``fn(*args)`` in a new Python process started with ``env`` added.

    A spawned process copies ``os.environ`` as it stands at the start, so
    the variables are set around the start and restored after it. The
    child is an ordinary (not daemonic) process, so ``fn`` may start
    processes of its own (d2l's data loader does).
    """
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    context = multiprocessing.get_context('spawn')
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(send, fn, args))
    try:
        child.start()
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    send.close()
    try:
        if not receive.poll(timeout):
            raise TimeoutError(
                f'{fn.__name__}{args} took longer than {timeout} s in a '
                f'fresh process; it was stopped (pass a larger timeout '
                f'if the machine is just slow)'
            )
        ok, value = receive.recv()
    except EOFError:
        ok, value = (
            False,
            RuntimeError(
                f'{fn.__name__}{args}: the fresh process died without a '
                f'result (exit code {child.exitcode})'
            ),
        )
    finally:
        if child.is_alive():  # timed out: stop it, never leave it running
            child.kill()
        child.join()
    if not ok:
        raise value
    return value


def _child(send, fn, args):
    """Run ``fn(*args)`` and send ``(ok, result or exception)`` back."""
    try:
        send.send((True, fn(*args)))
    except BaseException as err:  # noqa: BLE001  (the parent re-raises it)
        send.send((False, err))
