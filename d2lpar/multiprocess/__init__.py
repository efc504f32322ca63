"""Several processes: the worker, its engines, the launcher, byte counting.

Every name below is reached as ``dp.multiprocess.NAME`` (this package
loads the first time it is used, not on ``import d2lpar``):

- engines (:mod:`~d2lpar.multiprocess.engines`): how workers exchange
  arrays, :class:`ParameterServer` or :class:`Horovod`
  (:func:`make_engine`);
- the worker (:mod:`~d2lpar.multiprocess.worker`): one process's
  training loop, :func:`run_worker`, and its step, :func:`worker_step`;
- checkpoints (:mod:`~d2lpar.multiprocess.checkpoint`): written
  atomically and checked on load;
- the launcher (:mod:`~d2lpar.multiprocess.launcher`): :func:`launch`
  starts a ps-lite job (scheduler, servers, workers) on this machine;
- the guard (:mod:`~d2lpar.multiprocess.guard`): :func:`run_guarded`
  runs a Python worker so that a failure ends its process at once
  (ps-lite would keep it alive);
- byte counting (:mod:`~d2lpar.multiprocess.loopback`): run a job in a
  network namespace of its own and count the bytes it sends;
- an emulated network (:mod:`~d2lpar.multiprocess.netem`): a rate limit
  on the loopback, or hosts joined by a limited link.
"""

from . import checkpoint, engines, guard, launcher, loopback, netem, worker
from .checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from .engines import (
    ENGINES,
    KVSTORES,
    EngineError,
    Horovod,
    ParameterServer,
    make_engine,
)
from .guard import install_guard, run_guarded
from .launcher import (
    LaunchError,
    Stopped,
    format_plan,
    free_port,
    guard_env,
    guarded,
    job_plan,
    launch,
    port_is_free,
    stop_all,
)
from .loopback import (
    loopback_tx_bytes,
    namespace_prefix,
    run_counting_bytes,
    run_with_env,
)
from .netem import (
    LOCALHOST,
    EmulatedHosts,
    Host,
    parse_rate,
    ssh_script,
    tbf_burst,
    tbf_command,
    why_not,
)
from .worker import (
    Shards,
    WorkerEpochs,
    async_step,
    global_accuracy,
    kvstore_mode,
    my_shard,
    run_worker,
    start_state,
    worker_step,
)

__all__ = [
    'checkpoint',
    'engines',
    'guard',
    'launcher',
    'loopback',
    'netem',
    'worker',
    'CheckpointError',
    'load_checkpoint',
    'save_checkpoint',
    'ENGINES',
    'KVSTORES',
    'EngineError',
    'Horovod',
    'ParameterServer',
    'make_engine',
    'install_guard',
    'run_guarded',
    'LaunchError',
    'Stopped',
    'format_plan',
    'free_port',
    'guard_env',
    'guarded',
    'job_plan',
    'launch',
    'port_is_free',
    'stop_all',
    'loopback_tx_bytes',
    'namespace_prefix',
    'run_counting_bytes',
    'run_with_env',
    'LOCALHOST',
    'EmulatedHosts',
    'Host',
    'parse_rate',
    'ssh_script',
    'tbf_burst',
    'tbf_command',
    'why_not',
    'Shards',
    'WorkerEpochs',
    'async_step',
    'global_accuracy',
    'kvstore_mode',
    'my_shard',
    'run_worker',
    'start_state',
    'worker_step',
]
