"""Measuring accuracy in PyTorch."""

import torch

from .checks import check_device
from .model import lenet


@torch.no_grad()
def evaluate_accuracy(params, data_iter, device, net=lenet):
    """Fraction of correctly classified examples of ``data_iter``.

    Taught in :doc:`/book/training`. The twin of
    :func:`d2lpar.evaluate_accuracy`.

    Parameters
    ----------
    params : list of torch.Tensor
        Parameters living on ``device``.
    data_iter : iterable of (X, y)
        Minibatches, on any device.
    device : torch.device
        Where to compute.
    net : callable, optional
        ``net(X, params) -> logits``.

    Returns
    -------
    float
        Accuracy in [0, 1].

    Raises
    ------
    ValueError
        If ``data_iter`` yields no example.
    """
    check_device(device, 'evaluate_accuracy')
    correct, examples = 0, 0
    for X, y in data_iter:
        X, y = X.to(device), y.to(device)
        correct += (net(X, params).argmax(dim=1) == y).sum().item()
        examples += y.numel()
    if examples == 0:
        raise ValueError(
            'evaluate_accuracy: data_iter yielded no examples; check the '
            'dataset is not empty'
        )
    return correct / examples
