"""The few elementwise operations the losses need, for NumPy arrays and torch tensors.

Losses are written once against this tiny namespace, so the CPU solvers
(NumPy) and the GPU backend (torch) evaluate the very same formulas.
"""
from __future__ import annotations

import numpy as np
from scipy.special import expit


class NumpyOps:
    sqrt = staticmethod(np.sqrt)
    log = staticmethod(np.log)
    log1p = staticmethod(np.log1p)
    where = staticmethod(np.where)
    isfinite = staticmethod(np.isfinite)
    sigmoid = staticmethod(expit)

    @staticmethod
    def relu(x):
        return np.maximum(x, 0.0)

    @staticmethod
    def softplus(x):
        return np.logaddexp(0.0, x)

    @staticmethod
    def bincount(index, weights, size):
        return np.bincount(index, weights=weights, minlength=size)


class TorchOps:
    def __init__(self, torch):
        self.torch = torch
        self.sqrt, self.log, self.log1p = torch.sqrt, torch.log, torch.log1p
        self.sigmoid, self.relu = torch.sigmoid, torch.relu
        self.softplus = torch.nn.functional.softplus
        self.isfinite = torch.isfinite

    def where(self, cond, a, b):
        t = self.torch
        ref = cond
        a = a if t.is_tensor(a) else t.as_tensor(a, dtype=t.get_default_dtype(), device=ref.device)
        b = b if t.is_tensor(b) else t.as_tensor(b, dtype=a.dtype, device=ref.device)
        return t.where(cond, a, b)

    def bincount(self, index, weights, size):
        out = self.torch.zeros(size, dtype=weights.dtype, device=weights.device)
        return out.index_add_(0, index, weights)


_NUMPY = NumpyOps()


def ops_for(x):
    """The operations namespace matching ``x`` (NumPy unless ``x`` is a torch tensor)."""
    if type(x).__module__.startswith("torch"):
        import torch

        return TorchOps(torch)
    return _NUMPY
