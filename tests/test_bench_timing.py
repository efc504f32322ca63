"""d2lpar.bench.timing: the one timing loop of the benchmarks."""
import pytest

from d2lpar.bench import timing


def test_median_of_the_timed_runs_after_warmup(monkeypatch):
    """fn runs warmup + repeats times; the median is taken over the
    timed runs only (clock readings stubbed: run i takes i seconds)."""
    ticks = iter(t for i in range(5) for t in (10 * i, 10 * i + i))
    monkeypatch.setattr(timing, 'perf_counter', lambda: next(ticks))
    calls = []
    assert timing.median_seconds(lambda: calls.append(1), 3, 2) == 3
    assert len(calls) == 5


def test_no_repeats_refused():
    """repeats=0 would have no median: a ValueError saying so."""
    with pytest.raises(ValueError, match='repeats=0'):
        timing.median_seconds(lambda: None, 0, 1)
