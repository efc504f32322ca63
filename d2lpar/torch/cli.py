"""``python -m d2lpar worker|launch --engine torch``: the command line's
PyTorch engine (d2lpar/cli.py parses, and hands the parsed arguments
here)."""


def worker(args):
    """Run :func:`d2lpar.torch.worker.run_worker` with the parsed flags."""
    if args.kvstore:
        raise ValueError(
            "worker: --kvstore is the parameter server's; the torch "
            'engine sums with torch.distributed (drop --kvstore)'
        )
    from .worker import run_worker

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
        ddp=args.ddp,
        stats_to=args.stats_to,
    )
    return 0


def launch(args, command):
    """Run :func:`d2lpar.torch.launch.launch` with the parsed flags."""
    unused = [
        flag
        for flag, given in (
            ('--servers', args.servers != 1),
            ('--kvstore', args.kvstore != 'dist_sync'),
            ('--port', args.port is not None),
            ('--rate', bool(args.rate)),
            ('--hosts', args.hosts != 1),
        )
        if given
    ]
    if unused:
        raise ValueError(
            f'launch --engine torch: {", ".join(unused)} belong to the '
            f'parameter server (--engine kvstore); the torch engine takes '
            f'--workers and --timeout'
        )
    from .launch import launch as launch_torch

    return launch_torch(command, args.workers, args.timeout)
