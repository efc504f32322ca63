"""Measurements beside their own baselines (``python -m d2lpar bench ...``).

Timings on shared machines are noisy, so every comparison is measured
side by side in one run and reported as ratios to a baseline measured
in the same run:

- :mod:`d2lpar.bench.allreduce`: every allreduce vs a plain copy and the
  copy+add reference, 4 kB to 64 MB (MB = 10^6 bytes);
- :mod:`d2lpar.bench.step`: one LeNet step on 1 and 2 devices, with
  MXNet's default scratch pool and with d2lpar's;
- :mod:`d2lpar.bench.speedup`: the book's one measurement of the
  speed-up of two devices over one (the training benchmark, once per
  build, read by every page that states it);
- :mod:`d2lpar.bench.train`: training the way d2l does vs the library's
  default path, on 1, 2 and 4 devices, beside the FLOP limit;
- :mod:`d2lpar.bench.limit`: that limit (a step's FLOPs over a measured
  matrix-product rate) and the kernels that run LeNet's layers;
- :mod:`d2lpar.bench.profile`: where a step's time goes (phases,
  operators), before and after the thread budget;
- :mod:`d2lpar.bench.resnet`: ResNet-18 steps with Gluon's trainer, on
  1 and 2 devices (the concise chapter's exercise);
- :mod:`d2lpar.bench.engines`: parameter server vs Horovod, step time
  and loopback bytes;
- :mod:`d2lpar.bench.network`: the same jobs on an emulated network,
  one host or two, beside the cost model's prediction;
- :mod:`d2lpar.bench.timing`: the one in-process timing loop (allreduce,
  step).
"""

from . import (
    allreduce,
    engines,
    limit,
    network,
    profile,
    resnet,
    speedup,
    step,
    timing,
    train,
)

__all__ = [
    'allreduce',
    'engines',
    'limit',
    'network',
    'profile',
    'resnet',
    'speedup',
    'step',
    'timing',
    'train',
]
