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
- :mod:`d2lpar.bench.torch_train`: PyTorch's rows beside them (one
  process, the hand-written step on 2 devices, DDP over 2 processes);
- :mod:`d2lpar.bench.limit`: that limit (a step's FLOPs over a measured
  matrix-product rate) and the kernels that run LeNet's layers;
- :mod:`d2lpar.bench.profile`: where a step's time goes (phases,
  operators), before and after the thread budget;
- :mod:`d2lpar.bench.frameworks`: the library's step in MXNet beside
  PyTorch, profiled by kind of operator, with the oneDNN kernels each
  runs (the training chapter);
- :mod:`d2lpar.bench.memory`: one device's step in each framework with
  glibc's malloc defaults and with the freed memory d2lpar keeps;
- :mod:`d2lpar.bench.resnet`: ResNet-18 steps with Gluon's trainer, on
  1 and 2 devices (the concise chapter's exercise);
- :mod:`d2lpar.bench.engines`: parameter server vs Horovod, step time
  and loopback bytes;
- :mod:`d2lpar.bench.network`: the same jobs on an emulated network,
  one host or two, beside the cost model's prediction;
- :mod:`d2lpar.bench.timing`: the one in-process timing loop (allreduce,
  step).

Every name of these modules that a page uses is reached as
``dp.bench.NAME`` (``dp.bench.lenet_flops``, ``dp.bench.compare_times``);
a name is imported, with its module, the first time it is used. The
allreduce benchmark's own names say so (:func:`measure_allreduce`,
:func:`allreduce_verdict`, ...), since they stand beside the others here.
"""

import importlib

# name -> the module of this package that defines it (PEP 562).
_NAMES = {
    'ALLREDUCE_SIZES': 'allreduce',
    'bench_devices': 'allreduce',
    'allreduce_work': 'allreduce',
    'time_allreduce': 'allreduce',
    'copy_work': 'allreduce',
    'time_copy': 'allreduce',
    'floor_work': 'allreduce',
    'time_floor': 'allreduce',
    'BASELINES': 'allreduce',
    'lenet_sync': 'allreduce',
    'time_lenet_sync': 'allreduce',
    'interleaved_runs': 'allreduce',
    'measure_allreduce': 'allreduce',
    'format_allreduce_row': 'allreduce',
    'size_label': 'allreduce',
    'find_allreduce_row': 'allreduce',
    'allreduce_noise': 'allreduce',
    'allreduce_verdict': 'allreduce',
    'judge': 'allreduce',
    'save_allreduce_rows': 'allreduce',
    'TARGETS': 'allreduce',
    'allreduce_targets': 'allreduce',
    'gradient_bytes': 'engines',
    'available_engines': 'engines',
    'engine_command': 'engines',
    'run_job': 'engines',
    'measure_engine': 'engines',
    'format_engines': 'engines',
    'by_kind': 'frameworks',
    'op_kind': 'frameworks',
    'compare_frameworks': 'frameworks',
    'compare_relu': 'frameworks',
    'format_frameworks': 'frameworks',
    'kind_differences': 'frameworks',
    'onednn_kernels': 'frameworks',
    'implementations': 'frameworks',
    'time_step': 'frameworks',
    'compare_allocator': 'memory',
    'format_allocator': 'memory',
    'lenet_flops': 'limit',
    'matmul_rates': 'limit',
    'matmul_rate': 'limit',
    'machine_limit': 'limit',
    'rate_on_every_core': 'limit',
    'kernel_implementations': 'limit',
    'compute_seconds': 'network',
    'model_shape': 'network',
    'model_transfer': 'network',
    'BIGARRAY_BOUND': 'network',
    'server_bytes': 'network',
    'placed_transfer': 'network',
    'predict_step': 'network',
    'measure_network': 'network',
    'setup_name': 'network',
    'format_network': 'network',
    'best_model': 'network',
    'fixed_cost': 'network',
    'profile_training': 'profile',
    'format_profile': 'profile',
    'operator_label': 'profile',
    'plot_profile': 'profile',
    'time_resnet18': 'resnet',
    'two_devices': 'speedup',
    'disturbed_rounds': 'speedup',
    'slow_rounds': 'speedup',
    'speedups': 'speedup',
    'speedup_range': 'speedup',
    'kept_rounds': 'speedup',
    'ratio_text': 'timing',
    'span_text': 'timing',
    'where_in': 'timing',
    'MXNET_DEFAULT_TEMP_COPY': 'step',
    'time_steps': 'step',
    'compare_steps': 'step',
    'format_steps': 'step',
    'round_order': 'step',
    'in_fresh_process_each': 'step',
    'seconds_each': 'timing',
    'median_seconds': 'timing',
    'compare_times': 'timing',
    'interleaved': 'timing',
    'd2l_allreduce': 'train',
    'd2l_train_batch': 'train',
    'compare_training': 'train',
    'compare_rounds': 'train',
    'format_training': 'train',
    'plot_training': 'train',
}

_MODULES = (
    'allreduce',
    'engines',
    'frameworks',
    'limit',
    'network',
    'profile',
    'resnet',
    'speedup',
    'step',
    'timing',
    'train',
    'torch_train',
)


def __getattr__(name):
    """A benchmark's name (or one of its modules) on its first use."""
    if name in _MODULES:
        return importlib.import_module(f'.{name}', __name__)
    if name not in _NAMES:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    module = importlib.import_module(f'.{_NAMES[name]}', __name__)
    value = getattr(module, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_NAMES) | set(_MODULES))


__all__ = [*_MODULES, *_NAMES]
