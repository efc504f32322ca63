"""The one command line: ``python -m d2lpar COMMAND ...``.

=========  ==========================================================
train      train LeNet on k devices in this process
worker     one worker of a multi-process job (under ``launch`` or
           ``horovodrun``; ``--engine torch``: PyTorch's)
launch     start a parameter-server job: scheduler, servers, workers;
           ``--engine torch``: N workers under PyTorch's launcher
bench      measurements beside their own limits: ``allreduce``,
           ``step``, ``train``, ``memory``, ``engines``
check      grade homework: run the check of every function a solution
           file defines, each file in its own process (``--timeout``,
           ``--json``/``--csv`` for gradebooks)
=========  ==========================================================

Flags that ``train`` and ``worker`` share are defined once
(:func:`add_training_flags`); each command's work lives in its module,
and this file only parses and dispatches.
"""

import argparse
import json
import os
import sys

# Benchmarks write here unless told otherwise: measured output belongs to
# the build folder, never to the repository.
BENCH_DIR = os.path.join('_build', 'bench')


def add_training_flags(p, batch_help, batch_default, lr_default):
    """The flags every training command takes, defined once."""
    p.add_argument(
        '--batch-size', type=int, default=batch_default, help=batch_help
    )
    p.add_argument('--lr', type=float, default=lr_default)
    p.add_argument('--seed', type=int, default=0)
    p.add_argument(
        '--data',
        default=None,
        help='folder with the four Fashion-MNIST .gz files',
    )
    p.add_argument(
        '--num-train',
        type=int,
        default=None,
        help='use only the first N training examples',
    )
    p.add_argument(
        '--num-test',
        type=int,
        default=None,
        help='use only the first N test examples',
    )


def add_network_flags(p):
    """The emulated network's flags (``launch`` and ``bench engines``)."""
    p.add_argument(
        '--rate',
        default=None,
        help='emulate a network of this rate, e.g. 100mbit '
        '(bench engines: several, comma-separated, e.g. '
        '10gbit,1gbit,100mbit); runs in a private network '
        'namespace: needs root or user namespaces, and tc',
    )
    p.add_argument(
        '--hosts',
        type=int,
        default=1,
        choices=[1, 2],
        help='2: put the processes on two emulated hosts '
        'joined by one link (needs root)',
    )


def _train_parser(commands):
    p = commands.add_parser('train', help='train LeNet on k devices')
    p.add_argument(
        '--devices',
        type=int,
        default=1,
        help='number of devices (GPUs, else CPU contexts)',
    )
    p.add_argument('--epochs', type=int, default=10)
    add_training_flags(p, 'minibatch size summed over all devices', 256, 0.2)
    # dp.train's own default: from d2l's 0.01 LeNet stays at chance for
    # about its whole first epoch, and one epoch should visibly learn.
    # _train reads it (d2lpar.training.INIT_SCALE): importing it here would
    # import MXNet for every command, and the torch engine's worker runs
    # where MXNet is not installed.
    p.add_argument(
        '--init-scale',
        type=float,
        default=None,
        help="std of the initial weights (default: train()'s, "
        'dp.training.INIT_SCALE; d2l uses 0.01, which stays at '
        'chance for about one epoch)',
    )


# Written here, not imported: the parser must build where PyTorch is not
# installed (d2lpar.torch imports it).
TORCH_ENGINE = (
    'torch.distributed: the allreduce over dist.all_reduce, or '
    'DistributedDataParallel with --ddp (start it with launch --engine '
    'torch, or torchrun)'
)


def _torch_cli():
    """d2lpar.torch's command-line half, or a RuntimeError naming the
    install where PyTorch is missing."""
    try:
        from .torch import cli
    except ImportError as e:
        if e.name != 'torch':
            raise
        raise RuntimeError(
            'the torch engine needs PyTorch, which is not installed here: '
            'pip install "d2lpar[torch]" (on Linux, for the CPU build: '
            '--extra-index-url https://download.pytorch.org/whl/cpu)'
        ) from e
    return cli


def _worker_parser(commands):
    from .workers import ENGINES, KVSTORES

    ENGINES = {**ENGINES, 'torch': TORCH_ENGINE}  # PyTorch's beside MXNet's

    w = commands.add_parser(
        'worker',
        help='one worker of a multi-process job (start it with '
        'launch, or with horovodrun for --engine horovod)',
    )
    w.add_argument(
        '--engine',
        default='kvstore',
        choices=list(ENGINES),
        help='; '.join(f'{k}: {v}' for k, v in ENGINES.items()),
    )
    w.add_argument(
        '--kvstore',
        default=None,
        choices=list(KVSTORES),
        help="the parameter server's mode (default: the one launch "
        'was given, else dist_sync); '
        + '; '.join(f'{k}: {v}' for k, v in KVSTORES.items()),
    )
    w.add_argument('--epochs', type=int, default=1)
    add_training_flags(w, 'examples per worker per step', 64, 0.1)
    w.add_argument(
        '--save-to',
        default=None,
        help='rank 0 saves a checkpoint here every epoch',
    )
    w.add_argument(
        '--resume',
        action='store_true',
        help='continue from the checkpoint in --save-to',
    )
    w.add_argument(
        '--stats-to',
        default=None,
        help='rank 0 writes per-epoch steps, seconds and '
        'accuracy here as JSON',
    )
    w.add_argument(
        '--ddp',
        action='store_true',
        help='--engine torch: sum the gradients with '
        'DistributedDataParallel instead of dist.all_reduce by hand',
    )


def _launch_parser(commands):
    from .workers import KVSTORES

    la = commands.add_parser(
        'launch', help="run workers on ps-lite, or on PyTorch's launcher"
    )
    la.add_argument(
        '--engine',
        default='kvstore',
        choices=['kvstore', 'torch'],
        help="kvstore: MXNet's parameter server (scheduler, servers, "
        "workers); torch: PyTorch's elastic agent (torchrun's), Gloo on "
        'CPUs',
    )
    la.add_argument('--workers', type=int, default=2)
    la.add_argument('--servers', type=int, default=1)
    la.add_argument(
        '--kvstore',
        default='dist_sync',
        choices=list(KVSTORES),
        help='; '.join(f'{k}: {v}' for k, v in KVSTORES.items()),
    )
    la.add_argument('--timeout', type=float, default=600)
    la.add_argument('--port', type=int, default=None)
    add_network_flags(la)
    la.add_argument(
        'worker_command',
        nargs=argparse.REMAINDER,
        help='after --: the worker command',
    )


def _bench_parser(commands):
    b = commands.add_parser('bench', help='benchmarks beside their limits')
    kinds = b.add_subparsers(dest='bench', required=True)
    ar = kinds.add_parser('allreduce', help='every allreduce vs copy')
    ar.add_argument('--devices', type=int, nargs='+', default=[2, 4])
    ar.add_argument(
        '--sizes-mb',
        type=float,
        nargs='+',
        help='bytes per array in MB, 10^6 bytes (default 4 kB to 64 MB)',
    )
    ar.add_argument('--repeats', type=int, default=10)
    ar.add_argument(
        '--out',
        default=os.path.join(BENCH_DIR, 'allreduce.json'),
        help='write the rows here (.json or .csv)',
    )
    step = kinds.add_parser('step', help='1 vs 2 devices, both pools')
    step.add_argument('--batch-size', type=int, default=256)
    step.add_argument('--repeats', type=int, default=20)
    step.add_argument('--json', help='also write the rows to this file')
    tr = kinds.add_parser(
        'train', help="d2l's way vs the library's, beside the FLOP limit"
    )
    tr.add_argument('--devices', type=int, nargs='+', default=[1, 2, 4])
    tr.add_argument('--batch-size', type=int, default=256)
    tr.add_argument('--steps', type=int, default=20, help='timed steps')
    tr.add_argument('--rounds', type=int, default=3)
    tr.add_argument(
        '--profile',
        action='store_true',
        help='also break the library step into phases and operators',
    )
    tr.add_argument(
        '--json',
        default=os.path.join(BENCH_DIR, 'train.json'),
        help='write the results here',
    )
    me = kinds.add_parser(
        'memory', help="one device's step, glibc's malloc defaults vs kept"
    )
    me.add_argument('--rounds', type=int, default=5)
    me.add_argument('--steps', type=int, default=20, help='timed steps')
    me.add_argument(
        '--frameworks',
        nargs='+',
        choices=('mxnet', 'pytorch'),
        help='default: those installed',
    )
    en = kinds.add_parser('engines', help='parameter server vs Horovod')
    en.add_argument('--workers', type=int, default=2)
    en.add_argument(
        '--batch-size',
        type=int,
        default=128,
        help='examples per worker per step',
    )
    en.add_argument(
        '--servers',
        type=int,
        nargs='+',
        default=[1],
        help='parameter servers (with --rate: one job each)',
    )
    add_network_flags(en)
    en.add_argument('--json', help='also write the rows to this file')


def _check_parser(commands):
    c = commands.add_parser('check', help='grade homework solution files')
    c.add_argument(
        'paths', nargs='+', help='solution .py files, or folders of them'
    )
    c.add_argument(
        '--json',
        action='store_true',
        help='print one JSON object (verdicts, reports and each '
        "submission's captured output) instead of the table",
    )
    c.add_argument(
        '--csv',
        action='store_true',
        help='print a gradebook, one CSV row per submission',
    )
    c.add_argument(
        '--timeout',
        type=float,
        default=60,
        metavar='SECONDS',
        help='kill a submission this long after its file starts to '
        'run (default 60; importing the library does not count); each '
        'runs in its own process',
    )
    c.add_argument(
        '--jobs',
        type=int,
        default=None,
        help='submissions graded at once (default: one per CPU core)',
    )


def build_parser():
    """Return the ``python -m d2lpar`` argument parser."""
    parser = argparse.ArgumentParser(
        prog='python -m d2lpar',
        description='Data-parallel training of LeNet on Fashion-MNIST.',
    )
    commands = parser.add_subparsers(dest='command', required=True)
    for add in (
        _train_parser,
        _worker_parser,
        _launch_parser,
        _bench_parser,
        _check_parser,
    ):
        add(commands)
    return parser


def main(argv=None):
    """Run the command line; return the exit status.

    Parameters
    ----------
    argv : list of str, optional
        Arguments without the program name (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0 on success, 2 on bad input (the message says what to fix);
        ``check`` returns 1 when a solution fails.
    """
    args = build_parser().parse_args(argv)
    run = {
        'train': _train,
        'worker': _worker,
        'launch': _launch,
        'bench': _bench,
        'check': _check,
    }[args.command]
    try:
        return run(args)
    except (ValueError, TypeError, FileNotFoundError, RuntimeError) as e:
        print(f'error: {e}', file=sys.stderr)
        return 2


def _train(args):
    from .data import load_fashion_mnist
    from .devices import devices
    from .training import INIT_SCALE, train

    if args.init_scale is None:
        args.init_scale = INIT_SCALE
    devs = devices(args.devices)
    print(f'training on {devs}', flush=True)
    print(f'initial weights: std {args.init_scale} (--init-scale)', flush=True)
    data = load_fashion_mnist(
        args.batch_size,
        args.data,
        num_train=args.num_train,
        num_test=args.num_test,
    )
    train(
        batch_size=args.batch_size,
        lr=args.lr,
        num_epochs=args.epochs,
        devices=devs,
        data=data,
        plot=False,
        verbose=True,
        seed=args.seed,
        init_scale=args.init_scale,
    )
    return 0


def _worker(args):
    if args.engine == 'torch':  # the PyTorch twin's engine
        return _torch_cli().worker(args)
    from .multiprocess.engines import EngineError
    from .multiprocess.worker import run_worker

    try:
        run_worker(
            args.epochs,
            args.batch_size,
            args.lr,
            args.seed,
            data_dir=args.data,
            num_train=args.num_train,
            num_test=args.num_test,
            save_to=args.save_to,
            resume=args.resume,
            engine=args.engine,
            stats_to=args.stats_to,
            kvstore=args.kvstore,
        )
    except EngineError as e:
        print(f'error: {e}', file=sys.stderr)
        return 2
    return 0


def _launch(args):
    command = args.worker_command
    if command[:1] == ['--']:  # only the separator, not the command's own
        command = command[1:]
    if args.engine == 'torch':  # the PyTorch twin's engine (no MXNet)
        return _torch_cli().launch(args, command)
    from .multiprocess.launcher import launch

    if args.hosts == 2:
        from .multiprocess.netem import EmulatedHosts

        with EmulatedHosts(args.rate) as net:
            status = launch(
                command,
                args.workers,
                args.servers,
                args.kvstore,
                args.timeout,
                hosts=net.hosts,
            )
            print(
                f'launch: {net.sent()} bytes crossed the link between '
                f'the hosts',
                flush=True,
            )
        return status
    if args.rate:
        # Run this same launch again inside a namespace whose loopback
        # is limited to the rate.
        from .multiprocess.loopback import run_counting_bytes

        inner = [
            sys.executable,
            '-m',
            'd2lpar',
            'launch',
            '--workers',
            str(args.workers),
            '--servers',
            str(args.servers),
            '--kvstore',
            args.kvstore,
            '--timeout',
            str(args.timeout),
            '--',
            *command,
        ]
        status, sent = run_counting_bytes(inner, args.timeout + 30, args.rate)
        print(
            f'launch: {sent} bytes sent over the {args.rate} loopback',
            flush=True,
        )
        return status
    return launch(
        command,
        args.workers,
        args.servers,
        args.kvstore,
        args.timeout,
        args.port,
    )


def _bench_train(args):
    from .bench import profile as bp
    from .bench import train as bt

    result = bt.compare_training(
        args.devices,
        batch_size=args.batch_size,
        steps=args.steps,
        rounds=args.rounds,
        progress=lambda line: print(line, flush=True),
        torch=True,  # PyTorch's rows beside MXNet's (issue 29)
        after=True,  # one device again, last: what the fixed order does
    )
    print(bt.format_training(result))
    if args.profile:
        result['profile'] = bp.profile_training(batch_size=args.batch_size)
        print(bp.format_profile(result['profile']))
    print(f'wrote {bt.save_json(result, args.json)}')
    return 0


def _bench(args):
    if args.bench == 'allreduce':
        from .bench import allreduce as ab

        sizes = (
            [int(mb * 1e6) // 4 * 4 for mb in args.sizes_mb]
            if args.sizes_mb
            else ab.ALLREDUCE_SIZES
        )
        print(
            f'{"k":>3} {"size":>12} {"algorithm":>15} {"median":>13} '
            f'{"bandwidth":>13} {"ratio":>11}'
        )
        rows = ab.measure_allreduce(args.devices, sizes, args.repeats)
        _write(rows, args.out, ab.save_allreduce_rows)
        print(
            '\n'.join(
                ['targets (sizes of 16 MB and more):']
                + (ab.allreduce_targets(rows) or ['none measured'])
            )
        )
        return 0
    if args.bench == 'train':
        return _bench_train(args)
    if args.bench == 'memory':
        from .bench import memory

        result = memory.compare_allocator(
            args.frameworks, rounds=args.rounds, steps=args.steps
        )
        print(memory.format_allocator(result))
        return 0
    if args.bench == 'step':
        from .bench import step

        rows = step.compare_steps(
            batch_size=args.batch_size, repeats=args.repeats
        )
        print(step.format_steps(rows))
    elif args.rate or args.hosts == 2:
        from .bench import engines as be
        from .bench import network as bn

        if not args.rate:
            raise ValueError(
                'bench engines: --hosts 2 needs --rate, e.g. --rate 100mbit'
            )
        rows = bn.measure_network(
            args.rate.split(','),
            args.servers,
            args.hosts,
            args.workers,
            args.batch_size,
            engines=be.available_engines(),
        )
        print(bn.format_network(rows))
    else:
        from .bench import engines as be

        engines = be.available_engines()
        if 'horovod' not in engines:
            print(
                'Horovod is not installed (`make horovod` adds it); '
                'measuring the parameter server only',
                flush=True,
            )
        rows = [
            be.measure_engine(e, args.workers, args.batch_size, servers=s)
            for e in engines
            for s in (args.servers if e == 'kvstore' else [1])
        ]
        print(be.format_engines(rows))
    if args.json:
        _write(rows, args.json, _save_json)
    return 0


def _check(args):
    from .grading.grade import grade, to_csv
    from .validation import check_positive  # no MXNet: PyTorch solutions too

    if args.timeout <= 0:
        raise ValueError(
            f'check: --timeout is {args.timeout:g}; pass a positive '
            f'number of seconds'
        )
    if args.jobs is not None:
        check_positive('--jobs', args.jobs, 'check', integer=True)
    summary, text = grade(args.paths, timeout=args.timeout, jobs=args.jobs)
    if args.json:
        text = json.dumps(summary, indent=1)
    elif args.csv:
        text = to_csv(summary['files']).rstrip()
    print(text)
    return 0 if summary['passed'] else 1


def _save_json(rows, path):
    with open(path, 'w') as f:
        json.dump(rows, f, indent=1)


def _write(rows, path, save):
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    save(rows, path)
    print(f'wrote {path}')
