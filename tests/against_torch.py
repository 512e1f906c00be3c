"""Comparisons of our nn results with a PyTorch module's (the torch tests import torch)."""

import numpy as np


def assert_parameter_grads(grads, torch_module, rtol, atol):
    """``grads`` (parameter name -> our gradient) names every parameter of ``torch_module``
    and matches the ``.grad`` its backward pass left on each."""
    theirs = dict(torch_module.named_parameters())
    assert sorted(grads) == sorted(theirs)
    for k, g in grads.items():
        np.testing.assert_allclose(g, theirs[k].grad.numpy(), rtol=rtol, atol=atol, err_msg=k)
