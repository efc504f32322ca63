"""The mistakes a check can name, each with the hint it gives.

A check reports the first mistake it recognises in a case; the codes are
short so that an autograder can count them and a teacher can grep them.
In MXNet (``import d2lpar as dp``):
"""

# code: hint shown to the student
MISTAKES = {
    # any function
    'raised': 'Your function raised an exception (traceback below). '
    'Fill in the TODO, or fix the line the traceback names.',
    'did-nothing': 'Nothing changed and nothing useful came back: is the '
    'function still the stub?',
    'bad-return': 'The function returned something of the wrong kind; '
    'see the docstring for what it must return.',
    # allreduce
    'not-in-place': "Write the result into the caller's arrays "
    '(a[:] = ... or a.copyto(...) into them); returning '
    'new arrays or rebinding data[i] = ... leaves the '
    "caller's arrays unchanged.",
    'not-broadcast': 'The sum is on one device only: copy it back to '
    'every other device.',
    'averaged': 'You divided by the number of devices: allreduce must '
    'leave the sum (train_batch divides by the batch size).',
    'wrong-sum': 'Some arrays hold a sum that misses or repeats a '
    "device's contribution, or mixes chunks.",
    'changed-device': 'A result lives on another device than the array '
    'it replaces; keep data[i] on data[i].ctx.',
    'changed-dtype': 'The result lost precision or changed dtype: '
    "compute in the inputs' dtype (e.g. float64 stays "
    'float64; np.zeros defaults to float32).',
    'calls-library': "You called the library's own collective: the "
    'homework is to write the algorithm, moving and adding the arrays '
    'yourself (copyto, as_in_ctx, +=).',
    'mixed-devices': 'One operation (a + b, a[:] += b) used arrays '
    'on two devices. MXNet checks only that the operands are all on '
    'CPUs or all on GPUs, so it runs between CPU contexts, which share '
    'one memory; between GPUs, which do not, the operator would read '
    "another GPU's memory directly, if at all, and the check cannot "
    'count what it moves: copy first (b.as_in_ctx(a.ctx)), then add.',
    'not-a-tree': 'The sum is right, but some device moves more arrays '
    'than a tree lets it: pair devices up (0 with 1, 2 with 3, then 0 '
    'with 2, ...) instead of gathering everything on one device.',
    'not-sharded': 'The sum is right, but some device moves more than '
    'its chunks: device j should add up only chunk j from everyone, '
    'then send only that chunk back out.',
    # ring schedule
    'not-a-schedule': 'A schedule is a list of steps, each a list of '
    'Transfer(src, dst, chunk, reduce) with devices and '
    'chunks in range(k).',
    'not-a-ring': 'In a ring, device i only sends to (i + 1) % k.',
    'too-much-traffic': 'Some device moves more than 2 (k-1) N / k of an '
    "array's N elements: send chunks (N / k elements), not whole arrays.",
    'too-many-steps': 'A ring needs only 2 (k-1) steps when every device '
    'sends in every step.',
    # split_batch
    'dropped-examples': 'Some examples are on no device (often the '
    'remainder n % k): every example must land '
    'somewhere.',
    'duplicated-examples': 'Some examples are on two devices, or twice '
    'on one.',
    'reordered': 'Concatenating the shards in device order must give the '
    'batch back in its order; use contiguous slices.',
    'labels-mismatched': "A label ended up beside another example's "
    'features: slice X and y with the same bounds.',
    'wrong-device': 'Shard i must live on devices[i] (as_in_ctx).',
    'unbalanced': 'Shard sizes differ by more than one: give the '
    'remainder n % k to the first shards, one each.',
    'accepted-bad-input': 'Fewer examples than devices (or X and y of '
    'different lengths) must raise ValueError, '
    'not return empty shards.',
    # evaluation
    'averaged-batches': 'You averaged per-batch accuracies; batches of '
    'different sizes must weigh by their size: add '
    'correct counts and example counts instead.',
    'averaged-shards': 'You averaged per-shard accuracies; shards of '
    'different sizes must weigh by their size.',
    'first-shard-only': "Only the first device's shard was scored; add "
    "every device's correct predictions.",
    'wrong-accuracy': 'The accuracy differs from the one-device '
    'evaluation on the same data.',
    # training
    'wrong-scale': 'The update has the right direction but the wrong '
    'size: divide the summed gradient by the whole batch '
    'size (not the shard or micro-batch size).',
    'replicas-diverge': 'The replicas differ after the step: every '
    'device must apply the same summed gradient.',
    'not-one-device-step': 'The replicas agree with each other but not '
    'with one SGD step on the whole batch on one '
    'device.',
    'stale-gradients': 'The first step is right and a later one is '
    'not: gradients (or a buffer) from the previous '
    'step leak into the next; zero them first.',
    'not-accumulated': "Only the last micro-batch's gradient was used: "
    "add each micro-batch's gradient into a sum (MXNet's backward() "
    "overwrites .grad; PyTorch's adds to it, so do not zero it between "
    'micro-batches).',
    'stepped-per-micro-batch': 'You updated the parameters after every '
    'micro-batch; accumulate, then take one '
    'step.',
    # parameter averaging
    'summed': 'You summed the replicas; averaging divides by k.',
    'wrong-mean': 'The replicas do not hold the mean of the inputs.',
    # overlap
    'synced-every-batch': "You read a step's numbers (.item(), "
    '.asnumpy(), npx.waitall) before queuing the next step: the devices '
    'idle while Python prepares the next batch. Keep them, and read '
    'them after the next train_batch call.',
    'too-far-ahead': 'You queued a third step before reading any number '
    'of the first: Python runs ahead over the whole epoch, keeping '
    "every batch's inputs and activations alive. Read the previous "
    "step's numbers after each train_batch call.",
    'wrong-epoch-stats': 'The mean loss or accuracy is off: add every '
    "device's summed loss and correct count over the epoch, then divide "
    'by the number of examples (not batches).',
}


# The hints above that name MXNet's methods, as a PyTorch student reads
# them (:mod:`d2lpar.torch`'s checks report with these); every other
# code's hint holds for both frameworks.
TORCH_HINTS = {
    'not-in-place': "Write the result into the caller's tensors "
    '(a.copy_(...) or a += ... on them); returning new tensors or '
    "rebinding data[i] = ... leaves the caller's tensors unchanged.",
    'changed-device': 'A result lives on another device than the tensor '
    'it replaces; keep data[i] on data[i].device.',
    'changed-dtype': 'The result lost precision or changed dtype: '
    "compute in the inputs' dtype (e.g. float64 stays float64; "
    'torch.zeros defaults to float32: pass dtype=a.dtype).',
    'calls-library': "You called the library's own collective: the "
    'homework is to write the algorithm, moving and adding the tensors '
    'yourself (a.to(device), +=, a.copy_(...)).',
    'wrong-device': 'Shard i must live on devices[i] (.to(devices[i])).',
    'mixed-devices': 'One operation (a + b, a += b) used tensors on two '
    'devices: copy first (b.to(a.device)), then add.',
    'not-accumulated': "Only the last micro-batch's gradient was used: "
    'backward() adds into .grad, so zeroing .grad (or making the '
    'parameters anew) between micro-batches drops the earlier ones.',
    'synced-every-batch': "You read a step's numbers (.item(), .cpu(), "
    'torch.cuda.synchronize) before queuing the next step: the devices '
    'idle while Python prepares the next batch. Keep them, and read '
    'them after the next train_batch call.',
}

# The codes PyTorch's checks never name: only the MXNet allreduce check
# (d2lpar.grading.allreduce) counts transfers and watches operations
# across devices, and PyTorch's k devices are labels of the one CPU.
TORCH_NEVER_NAMED = ('mixed-devices', 'not-a-tree', 'not-sharded')

# The module's documentation lists MISTAKES itself, so the book's page
# of codes can never disagree with what the checks say.
__doc__ += ''.join(
    f'\n``{code}``\n    {text}\n' for code, text in MISTAKES.items()
)
__doc__ += (
    '\nIn PyTorch (``from d2lpar import torch as dp``) these codes give '
    "their hint in PyTorch's terms:\n"
) + ''.join(
    f'\n``{code}``\n    {text}\n'
    for code, text in TORCH_HINTS.items()
    if code not in TORCH_NEVER_NAMED
)
__doc__ += (
    "\nPyTorch's checks never name ``mixed-devices``, ``not-a-tree`` or "
    '``not-sharded``: they run on labels of the one CPU, between which '
    'an operation moves nothing, and do not count transfers. For the '
    'same reason they name ``wrong-device`` and ``changed-device`` only '
    'for a tensor moved off the CPU.\n'
)

FRAMEWORKS = ('mxnet', 'torch')


def hint(code, framework='mxnet'):
    """The hint for mistake ``code`` to a student writing in
    ``framework`` (``'mxnet'`` or ``'torch'``); KeyError names the known
    codes."""
    if code not in MISTAKES:
        raise KeyError(
            f'unknown mistake code {code!r}; known: '
            f'{", ".join(sorted(MISTAKES))}'
        )
    if framework not in FRAMEWORKS:
        raise ValueError(
            f'hint: framework is {framework!r}; pass one of {FRAMEWORKS}'
        )
    if framework == 'torch':
        return TORCH_HINTS.get(code, MISTAKES[code])
    return MISTAKES[code]
