"""The few elementwise operations the losses need, for NumPy arrays and torch tensors.

Losses are written once against this tiny namespace, so the CPU solvers
(NumPy) and the GPU backend (torch) evaluate the very same formulas.
"""
from __future__ import annotations

import numpy as np
from scipy.special import expit

from ._kernels import scatter_add as _scatter_add


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
    def softplus_sigmoid(x):
        """``(log(1 + e^x), 1 / (1 + e^-x))`` from one ``u = e^-|x|``: ``max(x, 0) + log1p(u)`` and
        ``1 / (1 + u)`` (``x >= 0``) or ``u / (1 + u)``; the likelihood losses' value and slope together.
        Against ``np.logaddexp(0, x)`` and SciPy's ``expit``: within a few roundings (relative 5e-16 under
        NumPy 1.26 and 2.4), in half their time; a t-STE fit of 2 * 10^5 answers at p = 10 took 0.47 s
        instead of 0.60 s."""
        u = np.exp(-np.abs(x))
        return np.log1p(u) + np.maximum(x, 0.0), np.where(x >= 0, 1.0, u) / (1.0 + u)

    float64 = np.float64

    @staticmethod
    def bincount(index, weights, size):
        return np.bincount(index, weights=weights, minlength=size)

    @staticmethod
    def zeros_like(x):
        return np.zeros_like(x)

    @staticmethod
    def empty_like(x, size):
        return np.empty(size, dtype=x.dtype)

    @staticmethod
    def scatter_add(out, index, values):
        """``out[index] += values``, repeated indices accumulating (``values`` a scalar or like ``index``)."""
        if np.shape(values) != index.shape:
            values = np.broadcast_to(values, index.shape)
        return _scatter_add(out, index, values)


class TorchOps:
    def __init__(self, torch):
        self.torch = torch
        self.sqrt, self.log, self.log1p = torch.sqrt, torch.log, torch.log1p
        self.sigmoid, self.relu = torch.sigmoid, torch.relu
        self.isfinite = torch.isfinite

    def softplus_sigmoid(self, x):
        return self.torch.nn.functional.softplus(x), self.torch.sigmoid(x)

    def where(self, cond, a, b):
        t = self.torch
        ref = cond
        a = a if t.is_tensor(a) else t.as_tensor(a, dtype=t.get_default_dtype(), device=ref.device)
        b = b if t.is_tensor(b) else t.as_tensor(b, dtype=a.dtype, device=ref.device)
        return t.where(cond, a, b)

    def bincount(self, index, weights, size):
        out = self.torch.zeros(size, dtype=weights.dtype, device=weights.device)
        return out.index_add_(0, index, weights)

    @property
    def float64(self):
        return self.torch.float64

    def zeros_like(self, x):
        return self.torch.zeros_like(x)

    def empty_like(self, x, size):
        return self.torch.empty(size, dtype=x.dtype, device=x.device)

    def scatter_add(self, out, index, values):
        return out.index_add_(0, index, values.expand(index.shape) if values.dim() == 0 else values)


_NUMPY = NumpyOps()


def ops_for(x):
    """The operations namespace matching ``x`` (NumPy unless ``x`` is a torch tensor)."""
    if type(x).__module__.startswith("torch"):
        import torch

        return TorchOps(torch)
    return _NUMPY
