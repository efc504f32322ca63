"""The project's worker with a fault injected: a user script that fails.

``python faultworker.py RANK STEP -- WORKER_ARGS...`` runs
``python -m d2lpar worker WORKER_ARGS`` but makes rank ``RANK`` raise at
its training step ``STEP`` (counted from 0 over all epochs), after every
earlier step and checkpoint. Used by ``test_multiprocess_faults.py``.
"""

import sys

from d2lpar.cli import main
from d2lpar.multiprocess import worker


def inject(rank, step):
    """Make ``worker_step`` raise on ``rank`` at its ``step``-th call."""
    real, calls = worker.worker_step, [0]

    def failing(engine, *args, **kwargs):
        if engine.rank == rank and calls[0] == step:
            print(f'injecting a fault at step {step}', flush=True)
            raise RuntimeError(f'injected fault: rank {rank}, step {step}')
        calls[0] += 1
        return real(engine, *args, **kwargs)

    worker.worker_step = failing


if __name__ == '__main__':
    inject(int(sys.argv[1]), int(sys.argv[2]))
    sys.exit(main(['worker', *sys.argv[4:]]))
