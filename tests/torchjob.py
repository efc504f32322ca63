"""A plain torch.distributed worker for the launcher's tests (it imports
torch only, so each process starts fast).

Usage: python torchjob.py FOLDER MODE
Each worker writes FOLDER/pid-RANK, sums RANK + 1 with dist.all_reduce
and prints the sum; then, by MODE: ``ok`` ends; ``raise`` makes rank 1
write FOLDER/raised (the time) and raise, while rank 0 waits in a
barrier; ``sleep`` sleeps 300 s; ``ignore-term`` ignores SIGTERM and
sleeps.
"""

import os
import signal
import sys
import time

import torch
import torch.distributed as dist

folder, mode = sys.argv[1], sys.argv[2]
dist.init_process_group('gloo')
rank = dist.get_rank()
with open(os.path.join(folder, f'pid-{rank}'), 'w') as f:
    f.write(str(os.getpid()))
total = torch.tensor([rank + 1.0])
dist.all_reduce(total)
print(f'rank {rank} of {dist.get_world_size()}: sum {total.item():g}')
if mode == 'raise':
    if rank == 1:
        with open(os.path.join(folder, 'raised'), 'w') as f:
            f.write(repr(time.time()))
        raise RuntimeError('worker 1 breaks on purpose')
    dist.barrier()
elif mode == 'sleep':
    time.sleep(300)
elif mode == 'ignore-term':
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(300)
dist.destroy_process_group()
