"""Several processes: the worker, its engines, the launcher, byte counting.

- :mod:`d2lpar.dist.engines`: how workers exchange arrays (parameter
  server or Horovod);
- :mod:`d2lpar.dist.worker`: one worker's training loop;
- :mod:`d2lpar.dist.checkpoint`: its checkpoints, written atomically and
  checked on load;
- :mod:`d2lpar.dist.launch`: start a ps-lite job (scheduler, servers,
  workers) on this machine;
- :mod:`d2lpar.dist.guard`: run a Python worker so that a failure ends
  its process at once (ps-lite would keep it alive);
- :mod:`d2lpar.dist.loopback`: run a job in a network namespace of its
  own and count the bytes it sends.
"""

from . import checkpoint, engines, guard, launch, loopback, worker

__all__ = ['checkpoint', 'engines', 'guard', 'launch', 'loopback', 'worker']
