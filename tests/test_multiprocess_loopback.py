"""Counting a job's loopback bytes in its own network namespace."""

import sys
import time

from conftest import SEND_TO_SELF

from d2lpar.multiprocess import loopback


def test_counts_exactly_the_job_and_returns_its_status():
    """A job that sends 1 MB to itself is counted as 1 MB plus TCP/IP
    headers (a few percent at most), whatever else this machine sends;
    its exit status comes back. Where no namespace can be made, the job
    still runs and the count is None."""
    status, sent = loopback.run_counting_bytes(
        [sys.executable, '-c', SEND_TO_SELF, '1000000', '0', '3'], timeout=60
    )
    assert status == 3
    if loopback.namespace_prefix() is None:
        assert sent is None
    else:
        assert 1_000_000 <= sent < 1_050_000


def test_timeout_stops_the_job():
    """A job past its time limit is stopped and reported as status 124,
    long before it would have ended by itself."""
    start = time.monotonic()
    status, _ = loopback.run_counting_bytes(
        [sys.executable, '-c', 'import time; time.sleep(60)'], timeout=2
    )
    assert status == 124
    assert time.monotonic() - start < 20
