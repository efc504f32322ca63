"""The framework-neutral argument checks' helpers (d2lpar.validation)."""

from d2lpar.validation import gpu_count


def test_gpu_count_agrees_in_number():
    """Messages say 'no GPU', '1 GPU', '2 GPUs' (never 'GPU(s)')."""
    assert [gpu_count(n) for n in (0, 1, 2)] == ['no GPU', '1 GPU', '2 GPUs']
