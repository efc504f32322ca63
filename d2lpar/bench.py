"""Benchmarks that print their figures: ``python -m d2lpar.bench ...``.

Timings on shared machines are noisy, so every comparison is measured
side by side in one run and reported as ratios.

``python -m d2lpar.bench allreduce`` times every allreduce against the
memory-copy limit (see :mod:`d2lpar.bench_allreduce`).

``python -m d2lpar.bench step`` times one ``train_batch`` step of LeNet
on 1 and 2 devices, with MXNet's default scratch-buffer pool and with
d2lpar's, each in a fresh process (MXNet reads the setting once).

``python -m d2lpar.bench engines`` runs the multi-process worker on the
parameter server and on Horovod (if installed) and prints each engine's
time and loopback bytes per step (see :mod:`d2lpar.bench_engines`).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

MXNET_DEFAULT_TEMP_COPY = '4'


def time_steps(num_devices, batch_size=256, repeats=20, warmup=3):
    """Median seconds of one data-parallel LeNet step, in this process.

    Parameters
    ----------
    num_devices : int
        Devices from :func:`d2lpar.devices`.
    batch_size : int, optional
        Examples per step, summed over devices.
    repeats, warmup : int, optional
        Timed and untimed steps.

    Returns
    -------
    float
        Median seconds per step, each ended by ``npx.waitall()``.
    """
    import d2lpar as dp
    import numpy as onp
    from mxnet import np, npx
    rng = onp.random.default_rng(0)
    X = np.array(rng.uniform(size=(batch_size, 1, 28, 28)), dtype='float32')
    y = np.array(rng.integers(0, 10, batch_size), dtype='int32')
    devices = dp.devices(num_devices)
    params = dp.init_lenet_params(0, 0.1)
    device_params = [dp.get_params(params, d) for d in devices]
    times = []
    for i in range(warmup + repeats):
        start = time.perf_counter()
        dp.train_batch(X, y, device_params, devices, 0.1)
        npx.waitall()
        if i >= warmup:
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def compare_steps(device_counts=(1, 2), temp_copies=None, batch_size=256,
                  repeats=20, timeout=600, rounds=2):
    """Time steps for each device count and scratch-pool size.

    Each measurement runs in a fresh Python process with
    ``MXNET_CPU_TEMP_COPY`` set, one after the other in this call. All
    settings are measured once per round, interleaved, and the fastest
    round is kept: another program briefly taking a core then slows one
    round of one setting, not the comparison.

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
        ``{'devices', 'temp_copy', 'sec_per_step'}`` per measurement.
    """
    from . import CPU_TEMP_COPY
    temp_copies = temp_copies or (MXNET_DEFAULT_TEMP_COPY, CPU_TEMP_COPY)
    best = {}
    for _ in range(rounds):
        for temp_copy in temp_copies:
            for k in device_counts:
                env = dict(os.environ, MXNET_CPU_TEMP_COPY=str(temp_copy))
                out = subprocess.run(
                    [sys.executable, '-m', 'd2lpar.bench', 'step-once',
                     '--devices', str(k), '--batch-size', str(batch_size),
                     '--repeats', str(repeats)],
                    env=env, capture_output=True, text=True,
                    timeout=timeout, check=True)
                seconds = float(out.stdout.split()[-1])
                key = (str(temp_copy), k)
                best[key] = min(seconds, best.get(key, seconds))
    return [dict(devices=k, temp_copy=t, sec_per_step=s)
            for (t, k), s in best.items()]


def format_steps(rows):
    """A table of :func:`compare_steps` rows with speed-ups vs 1 device."""
    lines = [f'{"MXNET_CPU_TEMP_COPY":>20} {"devices":>8} '
             f'{"ms/step":>9} {"speed-up":>9}']
    base = {r['temp_copy']: r['sec_per_step'] for r in rows
            if r['devices'] == 1}
    for r in rows:
        speedup = base.get(r['temp_copy'], float('nan')) / r['sec_per_step']
        lines.append(f'{r["temp_copy"]:>20} {r["devices"]:>8} '
                     f'{1000 * r["sec_per_step"]:>9.1f} {speedup:>8.2f}x')
    return '\n'.join(lines)


def main(argv=None):
    """Run a benchmark from the command line; return the exit status."""
    parser = argparse.ArgumentParser(prog='python -m d2lpar.bench')
    commands = parser.add_subparsers(dest='command', required=True)
    ar = commands.add_parser('allreduce', help='every allreduce vs copy')
    ar.add_argument('--devices', type=int, nargs='+', default=[2, 4])
    ar.add_argument('--sizes-mb', type=float, nargs='+',
                    help='bytes per array in MB (default 4 KB to 64 MB)')
    ar.add_argument('--repeats', type=int, default=10)
    ar.add_argument('--out', default='allreduce-bench.json',
                    help='write the rows here (.json or .csv)')
    step = commands.add_parser('step', help='1 vs 2 devices, both pools')
    step.add_argument('--json', help='also write the rows to this file')
    once = commands.add_parser('step-once', help=argparse.SUPPRESS)
    once.add_argument('--devices', type=int, required=True)
    for p in (step, once):
        p.add_argument('--batch-size', type=int, default=256)
        p.add_argument('--repeats', type=int, default=20)
    en = commands.add_parser('engines', help='parameter server vs Horovod')
    en.add_argument('--workers', type=int, default=2)
    en.add_argument('--batch-size', type=int, default=128,
                    help='examples per worker per step')
    en.add_argument('--json', help='also write the rows to this file')
    args = parser.parse_args(argv)
    if args.command == 'engines':
        return _engines(args)
    if args.command == 'allreduce':
        from . import bench_allreduce as ab
        sizes = ([int(mb * 2**20) // 4 * 4 for mb in args.sizes_mb]
                 if args.sizes_mb else ab.SIZES)
        print(f'{"k":>3} {"size":>12} {"algorithm":>15} {"median":>13} '
              f'{"bandwidth":>13} {"ratio":>11}')
        rows = ab.run(args.devices, sizes, args.repeats)
        ab.save(rows, args.out)
        print('\n'.join(['targets (sizes of 16 MB and more):']
                        + (ab.targets(rows) or ['none measured'])))
        print(f'wrote {args.out}')
        return 0
    if args.command == 'step-once':
        print(time_steps(args.devices, args.batch_size, args.repeats))
        return 0
    rows = compare_steps(batch_size=args.batch_size, repeats=args.repeats)
    print(format_steps(rows))
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(rows, f, indent=1)
    return 0


def _engines(args):
    from . import bench_engines as be
    engines = be.available_engines()
    if 'horovod' not in engines:
        print('Horovod is not installed (`make horovod` adds it); '
              'measuring the parameter server only', flush=True)
    rows = [be.measure_engine(e, args.workers, args.batch_size)
            for e in engines]
    print(be.format_engines(rows))
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == '__main__':
    sys.exit(main())
