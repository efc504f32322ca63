"""d2lpar.memory: ``import d2lpar`` keeps freed memory for the next
step (glibc's mallopt), unless the user tuned malloc."""

import os
import platform
import subprocess
import sys

import pytest

from d2lpar import memory

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith('linux') or platform.libc_ver()[0] != 'glibc',
    reason='the settings are glibc on Linux only',
)

# A thread that allocates and frees six 14 MiB arrays 23 times (every
# page written, as a step's activations are): 84 MiB, more than one of
# glibc's 64 MiB thread heaps. Prints its minor page faults per round
# over the last 20 rounds, and what keep_freed_memory() said.
CHURN = """
import resource, sys, threading
if sys.argv[1] == 'd2lpar':
    import d2lpar
    from d2lpar import memory
    said = memory.keep_freed_memory()
else:
    said = None
import numpy as np

def churn(out):
    for i in range(23):
        if i == 3:
            before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
        arrays = [np.ones(14 << 18, dtype=np.float32) for _ in range(6)]
        del arrays
    out.append(resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before)

out = []
t = threading.Thread(target=churn, args=(out,))
t.start()
t.join()
print(out[0] / 20, repr(said))
"""


def churn(how, **env):
    clean = {
        k: v for k, v in os.environ.items() if k not in memory.USER_VARIABLES
    }
    clean.pop('GLIBC_TUNABLES', None)
    clean.pop(memory.SWITCH, None)
    out = subprocess.run(
        [sys.executable, '-c', CHURN, how],
        capture_output=True, text=True, timeout=120, check=True,
        env=dict(clean, **env),
    ).stdout.split(maxsplit=1)  # fmt: skip
    return float(out[0]), out[1].strip()


def test_import_keeps_a_threads_freed_arrays_for_its_next_ones():
    """Under glibc's defaults each round's 84 MiB come back as page
    faults (about one per 4 KiB page: 21,500 a round at most); after
    ``import d2lpar`` the same rounds reuse the freed memory."""
    faults_plain, _ = churn('plain')
    faults, said = churn('d2lpar')
    assert faults_plain > 500, faults_plain  # the defaults do give back
    assert faults < 10, faults
    assert said == repr(memory.SETTINGS)


def test_a_users_malloc_variable_wins():
    """With MALLOC_ARENA_MAX set by the user, d2lpar sets nothing: the
    rounds fault as under the defaults, and the reason names it."""
    faults, said = churn('d2lpar', MALLOC_ARENA_MAX='8')
    assert faults > 500, faults
    assert 'MALLOC_ARENA_MAX is set' in said


def test_user_tuned_names_the_variable_or_tunable():
    assert memory.user_tuned({}) is None
    assert memory.user_tuned({'PATH': '/bin'}) is None
    assert memory.user_tuned({'MALLOC_TOP_PAD_': '0'}) == 'MALLOC_TOP_PAD_'
    tunables = {'GLIBC_TUNABLES': 'glibc.malloc.trim_threshold=0'}
    assert memory.user_tuned(tunables) == 'GLIBC_TUNABLES'
    other = {'GLIBC_TUNABLES': 'glibc.cpu.hwcaps=-AVX2'}
    assert memory.user_tuned(other) is None


def test_the_switch_keeps_glibcs_defaults():
    """D2LPAR_KEEP_FREED_MEMORY=0: the rounds fault as under glibc's
    defaults, and the reason says so."""
    faults, said = churn('d2lpar', D2LPAR_KEEP_FREED_MEMORY='0')
    assert faults > 500, faults
    assert 'D2LPAR_KEEP_FREED_MEMORY=0' in said
