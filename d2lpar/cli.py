"""The command line: ``python -m d2lpar train ...``."""
import argparse
import sys

from .data import load_fashion_mnist
from .devices import devices
from .training import train


def build_parser():
    """Return the ``python -m d2lpar`` argument parser."""
    parser = argparse.ArgumentParser(
        prog='python -m d2lpar',
        description='Data-parallel training of LeNet on Fashion-MNIST.')
    commands = parser.add_subparsers(dest='command', required=True)
    p = commands.add_parser('train', help='train LeNet on k devices')
    p.add_argument('--devices', type=int, default=1,
                   help='number of devices (GPUs, else CPU contexts)')
    p.add_argument('--epochs', type=int, default=10)
    p.add_argument('--batch-size', type=int, default=256,
                   help='minibatch size summed over all devices')
    p.add_argument('--lr', type=float, default=0.2)
    p.add_argument('--data', default=None,
                   help='folder with the four Fashion-MNIST .gz files')
    p.add_argument('--num-train', type=int, default=None,
                   help='use only the first N training examples')
    p.add_argument('--num-test', type=int, default=None,
                   help='use only the first N test examples')
    p.add_argument('--seed', type=int, default=0)
    # Not the chapter's 0.01: from weights that small LeNet stays at
    # chance for about its whole first epoch, and a reader who tries one
    # epoch on the command line should see it learn. The first printed
    # line names the scale and how to get the chapter's.
    p.add_argument('--init-scale', type=float, default=0.1,
                   help='std of the initial weights (default 0.1; the '
                        'book uses 0.01, which stays at chance for about '
                        'one epoch)')
    w = commands.add_parser(
        'worker', help='one worker of a multi-process job (start it with '
        'launch, or with horovodrun for --engine horovod)')
    w.add_argument('--engine', default='kvstore',
                   choices=['kvstore', 'horovod'],
                   help='kvstore: MXNet parameter server (under launch); '
                        'horovod: ring all-reduce (under horovodrun)')
    w.add_argument('--epochs', type=int, default=1)
    w.add_argument('--batch-size', type=int, default=64,
                   help='examples per worker per step')
    w.add_argument('--lr', type=float, default=0.1)
    w.add_argument('--seed', type=int, default=0)
    w.add_argument('--data', default=None)
    w.add_argument('--num-train', type=int, default=None)
    w.add_argument('--num-test', type=int, default=None)
    w.add_argument('--save-to', default=None,
                   help='rank 0 saves a checkpoint here every epoch')
    w.add_argument('--resume', action='store_true',
                   help='continue from the checkpoint in --save-to')
    w.add_argument('--stats-to', default=None,
                   help='rank 0 writes per-epoch steps, seconds and '
                        'accuracy here as JSON')
    la = commands.add_parser('launch', help='run workers on ps-lite')
    la.add_argument('--workers', type=int, default=2)
    la.add_argument('--servers', type=int, default=1)
    la.add_argument('--kvstore', default='dist_sync',
                    choices=['dist_sync', 'dist_device_sync'])
    la.add_argument('--timeout', type=float, default=600)
    la.add_argument('--port', type=int, default=None)
    la.add_argument('worker_command', nargs=argparse.REMAINDER,
                    help='after --: the worker command')
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
        0 on success, 2 on bad input (the message says what to fix).
    """
    args = build_parser().parse_args(argv)
    if args.command == 'launch':
        from .launch import launch
        command = args.worker_command
        if command[:1] == ['--']:  # only the separator, not the command's own
            command = command[1:]
        try:
            return launch(command, args.workers, args.servers, args.kvstore,
                          args.timeout, args.port)
        except ValueError as e:
            print(f'error: {e}', file=sys.stderr)
            return 2
    if args.command == 'worker':
        from .engines import EngineError
        from .worker import run_worker
        try:
            run_worker(args.epochs, args.batch_size, args.lr, args.seed,
                       data_dir=args.data, num_train=args.num_train,
                       num_test=args.num_test, save_to=args.save_to,
                       resume=args.resume, engine=args.engine,
                       stats_to=args.stats_to)
        except EngineError as e:
            print(f'error: {e}', file=sys.stderr)
            return 2
        return 0
    try:
        devs = devices(args.devices)
        print(f'training on {devs}', flush=True)
        print(f'initial weights: std {args.init_scale} (the book uses '
              '0.01: --init-scale 0.01)', flush=True)
        data = load_fashion_mnist(args.batch_size, args.data,
                                  num_train=args.num_train,
                                  num_test=args.num_test)
        train(batch_size=args.batch_size, lr=args.lr,
              num_epochs=args.epochs, devices=devs, data=data, plot=False,
              verbose=True, seed=args.seed,
              init_scale=args.init_scale)
    except (ValueError, TypeError, FileNotFoundError, RuntimeError) as e:
        print(f'error: {e}', file=sys.stderr)
        return 2
    return 0
